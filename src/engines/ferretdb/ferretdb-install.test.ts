import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/helpers/ports.js';
import { installEngine } from '../install/engine-cache.js';
import { findGo } from '../install/go-toolchain.js';
import { SILENT } from '../install/install-recipe.js';
import { FERRETDB_INSTALL, ferretdbVersion } from './ferretdb-install.js';

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'hangar-ferretdb-install-'));
});
afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

const install = async (from: string | undefined, env: NodeJS.ProcessEnv = process.env) => {
  const ctx = { version: '1.24.2', from, sha1: undefined, env, progress: SILENT };
  await FERRETDB_INSTALL.preflight(ctx);
  return installEngine(join(tmp, 'cache'), 'ferretdb', '1.24.2', {}, (dir) => FERRETDB_INSTALL.install({ ...ctx, dir }));
};

/** A program that answers --version as ferretdb does. */
function standIn(version: string): string {
  const p = join(tmp, `ferretdb-${version}`);
  writeFileSync(p, `#!/bin/sh\nprintf 'version: v${version}\\ncommit: unknown\\n'\n`);
  chmodSync(p, 0o755);
  return p;
}

describe('the FerretDB recipe', () => {
  it('--from: a ferretdb program of the version asked is copied into the cache; another version is refused', async () => {
    const { engine } = await install(standIn('1.24.2'));
    expect(engine).toMatchObject({
      product: 'ferretdb',
      version: '1.24.2',
      program: join(tmp, 'cache', 'ferretdb', '1.24.2', 'bin', 'ferretdb'),
      source: { kind: 'program', file: join(tmp, 'ferretdb-1.24.2'), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      java: undefined,
      env: {},
    });
    expect(await ferretdbVersion(engine.program)).toBe('1.24.2');
    rmSync(join(tmp, 'cache'), { recursive: true });
    await expect(install(standIn('1.23.0'))).rejects.toThrow('that ferretdb is version 1.23.0, not 1.24.2');
    await expect(install('/bin/true')).rejects.toThrow('not a ferretdb program');
    await expect(install('https://example.com/ferretdb')).rejects.toThrow('takes a program on this machine, not a URL');
  });

  it('without a Go of 1.24 or later, says what was found and how to get one', async () => {
    const bin = join(tmp, 'bin');
    mkdirSync(bin);
    // an old go, as Debian 12's golang-go is
    writeFileSync(join(bin, 'go'), '#!/bin/sh\nprintf "go1.19.8\\n/x/mod\\n/x/cache\\n"\n');
    chmodSync(join(bin, 'go'), 0o755);
    await expect(findGo({ PATH: bin }, '1.24', 'FerretDB 1.24.2', []).catch((e) => e.message)).resolves.toMatch(
      new RegExp(`^FerretDB 1.24.2 is built with Go 1.24 or later: found only go 1.19.8 at ${bin}/go; install Go from https://go.dev/dl/`),
    );
  });
});

// A real build from the Go module proxy: seconds with Go's caches warm (CI runs `hangar engines
// install ferretdb@1.24.2` first), over a minute cold.
const go = await findGo(process.env, '1.24', 'FerretDB').catch((err: Error) => err);
const needGo = go instanceof Error ? go.message : undefined;
if (needGo && process.env.CI === 'true') throw new Error(needGo);

describe.skipIf(needGo !== undefined)(`a real FerretDB build${needGo ? ` (skipped: ${needGo})` : ''}`, () => {
  let server: ChildProcess | undefined;
  afterEach(() => {
    server?.kill('SIGKILL');
  });

  it('builds 1.24.2 from its module, and the program starts and lets the Node driver log in with SCRAM', { timeout: 600_000 }, async () => {
    const { engine } = await install(undefined);
    expect(engine.source).toMatchObject({
      kind: 'go-module',
      module: 'github.com/FerretDB/FerretDB@v1.24.2',
      sum: expect.stringMatching(/^h1:/),
    });
    expect(JSON.parse(readFileSync(join(engine.dir, 'hangar-engine.json'), 'utf8')).source.go).toMatch(/^go1\.\d+/);
    const data = join(tmp, 'data');
    mkdirSync(data);
    const port = await freePort();
    server = spawn(
      engine.program,
      [
        '--handler=sqlite',
        `--sqlite-url=file:${data}/`,
        `--state-dir=${data}`,
        `--listen-addr=127.0.0.1:${port}`,
        '--debug-addr=-',
        '--test-enable-new-auth',
        '--setup-database=admin',
        '--setup-username=u',
        '--setup-password=p',
        '--telemetry=disable',
      ],
      { stdio: 'ignore' },
    );
    const url = (password: string) =>
      `mongodb://u:${password}@127.0.0.1:${port}/?authSource=admin&directConnection=true&serverSelectionTimeoutMS=20000`;
    const client = new MongoClient(url('p'));
    try {
      await client.db('t').collection('c').insertOne({ a: 1 });
      expect(await client.db('t').collection('c').countDocuments()).toBe(1);
    } finally {
      await client.close();
    }
    const wrong = new MongoClient(url('wrong'));
    try {
      await expect(wrong.db('admin').command({ ping: 1 })).rejects.toThrow('Authentication failed');
    } finally {
      await wrong.close();
    }
  });
});
