import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MavenServer, sha1Of, startMavenServer } from '../../../test/helpers/maven-server.js';
import { fakeElasticsearchZip } from '../../../test/helpers/zip.js';
import { ChecksumMismatchError } from './download.js';
import { type BuiltEngine, findInstalledEngine, installEngine, installedEngines, scanEngineCache } from './engine-cache.js';
import { MANIFEST_FILE } from './engine-manifest.js';
import { type InstallContext, SILENT } from './install-recipe.js';
import { installZipDistribution } from './zip-distribution.js';

// The cache, driven by a generic zip install from a Maven repository of the test's own.

const PATH = 'org/example/demo/1.0.0/demo-1.0.0.zip';
const ZIP = fakeElasticsearchZip('1.0.0', { program: 'demo' });

let server: MavenServer;
let cache: string;

beforeAll(async () => {
  server = await startMavenServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), 'hangar-engine-cache-'));
  server.put(PATH, ZIP);
  server.requests.length = 0;
});
afterEach(() => {
  rmSync(cache, { recursive: true, force: true });
});

/** A zip install of demo@1.0.0 from the test's repository. */
const zipBuild =
  (from?: string, sha1?: string) =>
  async (dir: string): Promise<BuiltEngine> => {
    const ctx: InstallContext = { version: '1.0.0', dir, from, sha1, env: {}, progress: SILENT };
    const source = await installZipDistribution(ctx, server.base, PATH);
    return { program: 'bin/demo', source, java: undefined, env: { DEMO: '1' }, patches: [] };
  };

const install = (opts: { force?: boolean; now?: () => Date } = {}, build = zipBuild()) =>
  installEngine(cache, 'demo', '1.0.0', opts, build);

/** Everything in the product's directory, dot entries included. */
const productDir = () => (existsSync(join(cache, 'demo')) ? readdirSync(join(cache, 'demo')) : []);

describe('installEngine', () => {
  it('unpacks into <cache>/<product>/<version>, the top directory left out, with a manifest saying what and from where', async () => {
    const out = await install({ now: () => new Date('2026-12-07T10:00:00Z') });
    const dir = join(cache, 'demo', '1.0.0');
    expect(out.already).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(['bin', 'config', 'hangar-engine.json', 'lib', 'plugins']);
    expect(statSync(join(dir, 'bin', 'demo')).mode & 0o777).toBe(0o755);
    const manifest = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8'));
    expect(manifest).toEqual({
      manifest: 1,
      product: 'demo',
      version: '1.0.0',
      program: join(dir, 'bin', 'demo'),
      source: {
        kind: 'download',
        url: `${server.base}/${PATH}`,
        sha1: sha1Of(ZIP),
        sha1_from: `${server.base}/${PATH}.sha1`,
        sha256: createHash('sha256').update(ZIP).digest('hex'),
      },
      java_home: null,
      java_version: null,
      env: { DEMO: '1' },
      patches: [],
      installed_at: '2026-12-07T10:00:00.000Z',
    });
    // nothing beside it: no partial directory, no download left
    expect(productDir()).toEqual(['1.0.0']);
    expect(installedEngines(cache)).toEqual([out.engine]);
    expect(out.engine).toMatchObject({ product: 'demo', version: '1.0.0', dir, program: join(dir, 'bin', 'demo') });
  });

  it('installing an installed version does nothing and says so; force installs it again', async () => {
    const first = await install({ now: () => new Date('2026-12-07T10:00:00Z') });
    server.requests.length = 0;
    const again = await install({ now: () => new Date('2026-12-07T11:00:00Z') });
    expect(again.already).toBe(true);
    expect(again.engine.installedAt).toBe(first.engine.installedAt);
    expect(server.requests).toEqual([]);
    const forced = await install({ force: true, now: () => new Date('2026-12-07T12:00:00Z') });
    expect(forced.already).toBe(false);
    expect(forced.engine.installedAt).toBe('2026-12-07T12:00:00.000Z');
    expect(server.requests).toEqual([`${PATH}.sha1`, PATH]);
    expect(productDir()).toEqual(['1.0.0']);
  });

  it('refuses a download whose SHA-1 is not the published one, naming both, and installs nothing', async () => {
    const wrong = 'f'.repeat(40);
    server.put(PATH, ZIP, { sha1: wrong });
    const err = await install().catch((e) => e);
    expect(err).toBeInstanceOf(ChecksumMismatchError);
    expect(err.message).toContain(sha1Of(ZIP));
    expect(err.message).toContain(wrong);
    expect(productDir()).toEqual([]);
    expect(installedEngines(cache)).toEqual([]);
    // a --sha1 given is checked the same way
    server.put(PATH, ZIP);
    await expect(install({}, zipBuild(undefined, wrong))).rejects.toThrow(`but --sha1 says ${wrong}`);
    expect(productDir()).toEqual([]);
  });

  it('refuses when no .sha1 is published', async () => {
    server.put(PATH, ZIP, { sha1: null });
    await expect(install()).rejects.toThrow(`${PATH}.sha1: HTTP 404`);
    expect(productDir()).toEqual([]);
  });

  it('a download cut off halfway leaves nothing behind', async () => {
    server.put(PATH, ZIP, { serving: 'cut' });
    await expect(install()).rejects.toThrow(/download of .* (failed|ended early)/);
    expect(productDir()).toEqual([]);
    expect(scanEngineCache(cache)).toEqual({ engines: [], broken: [], unfinished: [] });
  });

  it('what a killed install left is listed by nothing, and the next install of that version removes it', async () => {
    // as a SIGKILL leaves it: a partial directory of a process that is gone, half filled
    const dead = join(cache, 'demo', '.1.0.0.partial-999999999-abcd1234');
    mkdirSync(join(dead, 'bin'), { recursive: true });
    writeFileSync(join(dead, 'bin', 'demo'), '#!/bin/sh\n', { mode: 0o755 });
    expect(installedEngines(cache)).toEqual([]);
    expect(scanEngineCache(cache).unfinished).toEqual([dead]);
    await install();
    expect(productDir()).toEqual(['1.0.0']);
    expect(scanEngineCache(cache).unfinished).toEqual([]);
  });

  it('a build that fails leaves nothing; a directory at the place that is no install is replaced', async () => {
    await expect(
      install({}, async () => {
        throw new Error('no luck');
      }),
    ).rejects.toThrow('no luck');
    await expect(
      install({}, async () => ({
        program: 'bin/nothing',
        source: { kind: 'program', file: '/x', sha256: '0'.repeat(64) },
        java: undefined,
        env: {},
        patches: [],
      })),
    ).rejects.toThrow('the install made no program at bin/nothing');
    expect(productDir()).toEqual([]);
    mkdirSync(join(cache, 'demo', '1.0.0'), { recursive: true });
    writeFileSync(join(cache, 'demo', '1.0.0', 'stray'), 'x');
    const out = await install();
    expect(out.already).toBe(false);
    expect(existsSync(join(cache, 'demo', '1.0.0', 'stray'))).toBe(false);
    expect(productDir()).toEqual(['1.0.0']);
  });

  it('a local zip is checked against the .sha1 beside it, else the one published', async () => {
    const file = join(cache, 'demo-1.0.0.zip');
    writeFileSync(file, ZIP);
    writeFileSync(`${file}.sha1`, `${sha1Of(ZIP)}  demo-1.0.0.zip\n`);
    const out = await install({}, zipBuild(file));
    expect(out.engine.source).toEqual({
      kind: 'file',
      file,
      sha1: sha1Of(ZIP),
      sha1From: `${file}.sha1`,
      sha256: createHash('sha256').update(ZIP).digest('hex'),
    });
    rmSync(`${file}.sha1`);
    server.requests.length = 0;
    const forced = await install({ force: true }, zipBuild(file));
    expect(forced.engine.source).toMatchObject({ kind: 'file', sha1From: `${server.base}/${PATH}.sha1` });
    expect(server.requests).toEqual([`${PATH}.sha1`]);
    writeFileSync(file, Buffer.concat([ZIP, Buffer.from('tampered')]));
    await expect(install({ force: true }, zipBuild(file))).rejects.toThrow(ChecksumMismatchError);
    // the install it would have replaced is still there
    expect(findInstalledEngine(cache, 'demo', '1.0.0')?.source).toMatchObject({ kind: 'file' });
  });

  it('a mirror is a base URL the same paths hang under', async () => {
    const out = await install({}, zipBuild(`${server.base}/`));
    expect(out.engine.source).toMatchObject({ kind: 'download', url: `${server.base}/${PATH}` });
  });
});

describe('installedEngines', () => {
  it('is empty for a cache that does not exist', () => {
    expect(installedEngines(join(cache, 'nowhere'))).toEqual([]);
  });

  it('leaves out the installs whose manifest is missing, unreadable or wrong, or whose program is gone, saying why', async () => {
    await install();
    const good = join(cache, 'demo', '1.0.0');
    const manifest = readFileSync(join(good, MANIFEST_FILE), 'utf8');
    const put = (product: string, version: string, text?: string) => {
      const d = join(cache, product, version);
      mkdirSync(join(d, 'bin'), { recursive: true });
      writeFileSync(join(d, 'bin', 'demo'), '#!/bin/sh\n', { mode: 0o755 });
      if (text !== undefined) writeFileSync(join(d, MANIFEST_FILE), text);
      return d;
    };
    const none = put('demo', '0.1.0');
    const notJson = put('demo', '0.2.0', '{ "manifest": 1,');
    const elsewhere = put('demo', '0.3.0', manifest);
    const gone = put('other', '1.0.0', manifest.replaceAll('demo', 'other').replace(join('bin', 'other'), join('bin', 'gone')));
    const { engines, broken } = scanEngineCache(cache);
    expect(engines.map((e) => `${e.product}@${e.version}`)).toEqual(['demo@1.0.0']);
    expect(broken).toEqual([
      { dir: none, reason: `no ${MANIFEST_FILE}: not an install of hangar` },
      { dir: notJson, reason: expect.stringMatching(/^not JSON: /) },
      { dir: elsewhere, reason: 'its manifest describes demo@1.0.0, not demo@0.3.0' },
      { dir: gone, reason: `its program ${join(cache, 'other', '1.0.0', 'bin', 'gone')} is missing or not executable` },
    ]);
    expect(installedEngines(cache)).toEqual(engines);
  });
});
