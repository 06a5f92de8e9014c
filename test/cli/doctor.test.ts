import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestJson } from '../../src/engines/install/engine-manifest.js';
import { BIN, assertBuilt, type CliResult } from './run-cli.js';

// `hangar doctor`, run as the built binary. MongoDB cannot be installed on this machine, and
// Elasticsearch on PATH is not what this machine has (its engine cache is): stand-in programs
// that print what the real ones print for --version take their place where the report must show
// them found; each run has an engine cache of its own (empty unless a test fills it).

const made: string[] = [];
const searchPath = process.env.PATH ?? '/usr/bin:/bin';
const isRoot = process.getuid?.() === 0;
/** Elasticsearch refuses root: as root, the runs where it must be available are made as `nobody`. */
const NOBODY = 65534;

function dir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  // readable by an unprivileged user too (mkdtemp makes it 0700)
  chmodSync(d, 0o755);
  made.push(d);
  return d;
}

/**
 * A directory of stand-in programs, each printing `output` (shell builtins only) and exiting 0,
 * in the `bin/` of a home laid out as a distribution's: X-Pack's security module there, as in
 * Elasticsearch's default distribution. Returns the `bin/` directory.
 */
function standIns(programs: Record<string, string>): string {
  const d = join(dir('hangar-doctor-home-'), 'bin');
  mkdirSync(d);
  mkdirSync(join(d, '..', 'modules', 'x-pack-security'), { recursive: true });
  for (const [name, output] of Object.entries(programs)) {
    writeFileSync(join(d, name), `#!/bin/sh\nprintf '%s\\n' '${output}'\n`);
    chmodSync(join(d, name), 0o755);
  }
  return d;
}

const MONGOD_7 = { mongod: 'db version v7.0.2', mongos: 'mongos version v7.0.2' };
const ELASTICSEARCH_8 = {
  elasticsearch: 'Version: 8.11.1, Build: default/deb/6f9ff581fbcde658e6f69d6ce03050f060d1fd0c/2023-11-11T10:05:59.421038163Z, JVM: 21.0.1',
  kibana: '8.11.1',
};

let home: string;

/** The checkout the binary belongs to (BIN is `<checkout>/dist/src/cli/bin.js`). */
const CHECKOUT = resolve(dirname(BIN), '..', '..', '..');

/**
 * The command line that runs the binary as `uid`, wherever the checkout lives: a checkout in a
 * directory other users cannot enter (a home directory, a `mktemp -d`) is bound, in a mount
 * namespace of the command's own (gone when it exits), onto a directory every user can enter,
 * and the binary runs from there as `uid` (util-linux `unshare` and `setpriv`; only root runs
 * this, and only root may).
 */
function asUser(uid: number, view: string): { command: string; args: string[] } {
  return {
    command: 'unshare',
    args: [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      'mount --bind "$1" "$2" && shift 2 && exec "$@"',
      'sh',
      CHECKOUT,
      view,
      'setpriv',
      `--reuid=${uid}`,
      `--regid=${uid}`,
      '--clear-groups',
      process.execPath,
      join(view, relative(CHECKOUT, BIN)),
    ],
  };
}

/** An empty directory every user can enter, removed (only while empty) after the tests. */
function viewDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'hangar-doctor-view-'));
  chmodSync(d, 0o755);
  views.push(d);
  return d;
}
const views: string[] = [];

/** Runs `hangar doctor ARGS` with no HANGAR_* variable but those given, as `uid` when given. */
function doctor(args: readonly string[], opts: { path?: string; env?: Record<string, string>; uid?: number } = {}): Promise<CliResult> {
  // a data dir every user can reach (the engine user must, when hangar runs as root)
  // an engine cache of the test's own (empty unless a test fills it): not the machine's
  const env = {
    PATH: opts.path ?? searchPath,
    HOME: home,
    HANGAR_DATA_DIR: join(home, 'data'),
    HANGAR_ENGINE_CACHE: join(home, 'empty-engine-cache'),
    ...opts.env,
  };
  const run = opts.uid === undefined ? { command: process.execPath, args: [BIN] } : asUser(opts.uid, viewDir());
  const child = spawn(run.command, [...run.args, 'doctor', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The line of an engine of a service (`redis/valkey`) in the Services section of the human report. */
function serviceLine(stdout: string, engine: string): string {
  const lines = stdout.split('\n');
  return lines.slice(lines.findIndex((l) => l.startsWith('Services'))).find((l) => l.startsWith(`  ${engine} `)) ?? '';
}

/** redis-server's version as the binary prints it, read here independently of hangar. */
function redisVersion(): string {
  const out = spawnSync('redis-server', ['--version'], { encoding: 'utf8', env: { PATH: `${searchPath}:/usr/sbin:/usr/bin` } }).stdout;
  const version = /v=(\d+\.\d+\.\d+)/.exec(out)?.[1];
  if (!version) throw new Error('the doctor tests need redis-server (apt-get install redis-server)');
  return version;
}

beforeAll(() => {
  assertBuilt();
  home = dir('hangar-doctor-home-');
});
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
  // never recursively: the checkout was bound there (in the commands' own mount namespaces only)
  for (const d of views) rmdirSync(d);
});

describe('hangar doctor on this machine', () => {
  it('shows redis available with the installed version, MongoDB and Elasticsearch unavailable with what to install; exit 0', async () => {
    const version = redisVersion();
    const r = await doctor([]);
    expect(r.code, r.stderr).toBe(0);
    expect(serviceLine(r.stdout, 'redis/redis')).toMatch(
      new RegExp(
        `available +versions ${version.replace(/\./g, '\\.')}, ${version.split('.').slice(0, 2).join('\\.')} \\(redis-server ${version.replace(/\./g, '\\.')}, haproxy \\d+\\.\\d+\\.\\d+\\)`,
      ),
    );
    expect(r.stdout).toMatch(new RegExp(`redis-server +${version.replace(/\./g, '\\.')} +/\\S*redis-server`));
    expect(serviceLine(r.stdout, 'mongodb/mongod')).toMatch(
      /unavailable .*`mongod` was not found.*HANGAR_MONGOD_BIN.*`mongos` was not found.*HANGAR_MONGOS_BIN/,
    );
    expect(serviceLine(r.stdout, 'elasticsearch/elasticsearch')).toMatch(
      /unavailable .*`elasticsearch` was not found.*HANGAR_ELASTICSEARCH_BIN/,
    );
    expect(serviceLine(r.stdout, 'elasticsearch/opensearch')).toMatch(/unavailable .*`opensearch` was not found.*HANGAR_OPENSEARCH_BIN/);
    expect(r.stdout).toContain('To host mongodb with mongod:');
    expect(r.stdout).toMatch(
      /mongod: install package mongodb-org-server .*https:\/\/www\.mongodb\.com\/docs\/manual\/administration\/install-on-linux\/; or set HANGAR_MONGOD_BIN/,
    );
    expect(r.stdout).toMatch(/mongos: install package mongodb-org-mongos .*HANGAR_MONGOS_BIN/);
    expect(r.stdout).toContain('To host elasticsearch with elasticsearch:');
    expect(r.stdout).toMatch(
      /elasticsearch: install hangar engines install elasticsearch@VERSION, or package elasticsearch .*HANGAR_ELASTICSEARCH_BIN/,
    );
    // what hangar installs, named where the versions it would serve are listed
    expect(r.stdout).toMatch(
      /elasticsearch\/elasticsearch:\n {2}2\.4\.6 +not installed here: run `hangar engines install elasticsearch@2\.4\.6`/,
    );
    expect(r.stdout).toMatch(/ {2}6\.4\.1 +hangar cannot run it: it is not published on Maven Central/);
    expect(r.stdout).toMatch(
      /Engine cache \S+empty-engine-cache \(hangar engines ls\)\n {2}nothing installed\n {2}to install more: hangar engines install elasticsearch@2\.4\.6 \| /,
    );
    expect(r.stdout).not.toContain('To host redis with redis:');
    expect(r.stdout).toMatch(/openssl \d+\.\d+\.\d+ .*TLS listeners/);
  });

  it('gives the same facts as JSON for scripts', async () => {
    const r = await doctor(['--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    const version = redisVersion();
    expect(report.ok).toBe(true);
    expect(report.services.redis).toMatchObject({ available: true, versions: [version, version.split('.').slice(0, 2).join('.')] });
    expect(report.services.redis).toMatchObject({ default_engine: 'redis' });
    expect(report.services.redis.engines[0].programs.map((e: { name: string }) => e.name)).toEqual(['redis-server', 'haproxy']);
    expect(report.services.mongodb).toMatchObject({ available: false, versions: [], reason: expect.stringMatching(/HANGAR_MONGOD_BIN/) });
    expect(report.services.mongodb.engines[0].install).toEqual([
      expect.stringMatching(/^mongod: .*HANGAR_MONGOD_BIN/),
      expect.stringMatching(/^mongos: .*HANGAR_MONGOS_BIN/),
    ]);
    expect(report.services.elasticsearch).toMatchObject({ available: false, reason: expect.stringMatching(/HANGAR_ELASTICSEARCH_BIN/) });
    const programs = Object.fromEntries(report.programs.map((p: { program: string }) => [p.program, p]));
    expect(programs['redis-server']).toMatchObject({ found: true, version });
    expect(programs.mongod).toMatchObject({
      found: false,
      variable: 'HANGAR_MONGOD_BIN',
      install: expect.stringContaining('mongodb-org-server'),
    });
    expect(programs['kibana or opensearch-dashboards']).toMatchObject({ found: false, variable: 'HANGAR_KIBANA_BIN' });
  });

  it('exits 1 when redis, the default service, cannot run, saying why and what to install', async () => {
    const r = await doctor([], {
      env: { HANGAR_REDIS_SERVER_BIN: '/nonexistent/redis-server', HANGAR_VALKEY_SERVER_BIN: '/nonexistent/valkey-server' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /redis, the default service, cannot run on this machine: .*\/nonexistent\/redis-server.*HANGAR_REDIS_SERVER_BIN/,
    );
    expect(serviceLine(r.stdout, 'redis/redis')).toMatch(/unavailable/);
    expect(r.stdout).toMatch(
      /To host redis with redis:\n {2}redis-server: install Debian\/Ubuntu package redis-server \(apt-get install redis-server\)/,
    );
    expect(
      JSON.parse(
        (
          await doctor(['--json'], {
            env: { HANGAR_REDIS_SERVER_BIN: '/nonexistent/redis-server', HANGAR_VALKEY_SERVER_BIN: '/nonexistent/valkey-server' },
          })
        ).stdout,
      ).ok,
    ).toBe(false);
  });
});

describe('hangar doctor with MongoDB and Elasticsearch found', () => {
  it('shows them available with the versions the programs print, and Kibana next to Elasticsearch', async () => {
    const bin = standIns({ ...MONGOD_7, ...ELASTICSEARCH_8 });
    const r = await doctor(['--json'], { path: `${bin}:${searchPath}`, ...(isRoot ? { uid: NOBODY } : {}) });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.services.mongodb).toMatchObject({ available: true, versions: ['7.0.2', '7.0'] });
    expect(report.services.mongodb.engines[0].programs).toEqual([
      { name: 'mongod', version: '7.0.2', path: join(bin, 'mongod') },
      { name: 'mongos', version: '7.0.2', path: join(bin, 'mongos') },
      expect.objectContaining({ name: 'haproxy' }),
    ]);
    expect(report.services.elasticsearch).toMatchObject({ available: true, versions: ['8.11.1', '8.11'] });
    expect(
      report.services.elasticsearch.engines[0].programs.map((e: { name: string; version: string }) => `${e.name} ${e.version}`),
    ).toEqual(expect.arrayContaining(['elasticsearch 8.11.1', 'kibana 8.11.1']));
    // Kibana runs beside it: no note says otherwise
    expect(report.services.elasticsearch.engines[0].notes ?? []).toEqual([]);
    const text = await doctor([], { path: `${bin}:${searchPath}`, ...(isRoot ? { uid: NOBODY } : {}) });
    expect(serviceLine(text.stdout, 'mongodb/mongod')).toMatch(
      /available +versions 7\.0\.2, 7\.0 \(mongod 7\.0\.2, mongos 7\.0\.2, haproxy/,
    );
    expect(serviceLine(text.stdout, 'elasticsearch/elasticsearch')).toMatch(
      /available +versions 8\.11\.1, 8\.11 \(elasticsearch 8\.11\.1, haproxy \S+, kibana 8\.11\.1\)/,
    );
    expect(text.stdout).not.toMatch(/To host (mongodb with mongod|elasticsearch with elasticsearch)/);
  });

  it('offers OpenSearch as an engine of the elasticsearch service, and says why a Kibana of another release is not used', async () => {
    const bin = standIns({
      opensearch: 'Version: 2.11.0, Build: tar/4dcad6dd1fd45b6bd91f041a041829c8687278fa/2023-10-13T02:55:55.511945994Z, JVM: 17.0.8',
      kibana: '8.11.1',
    });
    const r = await doctor(['--json'], { path: `${bin}:${searchPath}`, ...(isRoot ? { uid: NOBODY } : {}) });
    const report = JSON.parse(r.stdout);
    // Elasticsearch is not here: OpenSearch is the one a create without engine gets
    expect(report.services.elasticsearch).toMatchObject({ available: true, default_engine: 'opensearch', versions: ['2.11.0', '2.11'] });
    const opensearch = report.services.elasticsearch.engines.find((e: { engine: string }) => e.engine === 'opensearch');
    expect(opensearch.notes).toContainEqual(
      expect.stringMatching(
        /^opensearch 2\.11\.0: no Kibana runs beside the node \(kibana 8\.11\.1 .* does not work with opensearch 2\.11\.0: install opensearch-dashboards 2\.11\)/,
      ),
    );
  });

  it('reports FerretDB from the engine cache as an engine of mongodb, with every version installed; how to install it when missing', async () => {
    const missing = JSON.parse((await doctor(['--json'])).stdout);
    const absent = missing.services.mongodb.engines.find((e: { engine: string }) => e.engine === 'ferretdb');
    expect(absent).toMatchObject({
      available: false,
      install: [expect.stringMatching(/hangar engines install ferretdb@1\.24\.2.*HANGAR_FERRETDB_BIN/)],
    });
    expect(absent.reason).toMatch(/no ferretdb is installed in the engine cache/);

    const cache = dir('hangar-doctor-cache-');
    for (const version of ['1.24.2', '1.23.1']) {
      const home = join(cache, 'ferretdb', version);
      mkdirSync(join(home, 'bin'), { recursive: true });
      const program = join(home, 'bin', 'ferretdb');
      writeFileSync(program, `#!/bin/sh\nprintf 'version: v${version}\\n'\n`);
      chmodSync(program, 0o755);
      const source = { kind: 'program', file: '/stand-in', sha256: '0'.repeat(64) } as const;
      writeFileSync(
        join(home, 'hangar-engine.json'),
        manifestJson({
          product: 'ferretdb',
          version,
          dir: home,
          program,
          source,
          java: undefined,
          env: {},
          patches: [],
          installedAt: '2026-01-01T00:00:00.000Z',
        }),
      );
    }
    const r = await doctor(['--json'], { env: { HANGAR_ENGINE_CACHE: cache } });
    const report = JSON.parse(r.stdout);
    expect(report.services.mongodb).toMatchObject({
      available: true,
      default_engine: 'ferretdb',
      versions: ['1.24.2', '1.24', '1.23.1', '1.23'],
    });
    const ferretdb = report.services.mongodb.engines.find((e: { engine: string }) => e.engine === 'ferretdb');
    expect(ferretdb.programs.map((p: { name: string; version: string }) => `${p.name} ${p.version}`)).toEqual(
      expect.arrayContaining(['ferretdb 1.24.2', 'ferretdb 1.23.1']),
    );
    const human = await doctor([], { env: { HANGAR_ENGINE_CACHE: cache } });
    expect(serviceLine(human.stdout, 'mongodb/ferretdb')).toMatch(/available +versions 1\.24\.2, 1\.24, 1\.23\.1, 1\.23/);
  });

  it('offers the installs of the engine cache, and says what is installed and how to install more', async () => {
    const cache = dir('hangar-doctor-cache-');
    for (const version of ['2.4.6', '5.6.9']) {
      const home = join(cache, 'elasticsearch', version);
      mkdirSync(join(home, 'bin'), { recursive: true });
      writeFileSync(join(home, 'bin', 'elasticsearch'), '#!/bin/sh\n');
      chmodSync(join(home, 'bin', 'elasticsearch'), 0o755);
      writeFileSync(
        join(home, 'hangar-engine.json'),
        JSON.stringify({
          manifest: 1,
          product: 'elasticsearch',
          version,
          program: join(home, 'bin', 'elasticsearch'),
          source: { kind: 'program', file: '/x', sha256: '0'.repeat(64) },
          java_home: null,
          env: {},
          patches: [],
          installed_at: '2026-12-07T21:21:33.598Z',
        }),
      );
    }
    const env = { HANGAR_ENGINE_CACHE: cache };
    const report = JSON.parse((await doctor(['--json'], { env })).stdout);
    expect(report.services.elasticsearch).toMatchObject({
      available: true,
      default_engine: 'elasticsearch',
      versions: ['2.4.6', '2.4', '5.6.9', '5.6'],
    });
    expect(report.engineCache).toMatchObject({
      dir: cache,
      installed: [
        { product: 'elasticsearch', version: '2.4.6', program: join(cache, 'elasticsearch', '2.4.6', 'bin', 'elasticsearch') },
        { product: 'elasticsearch', version: '5.6.9', program: join(cache, 'elasticsearch', '5.6.9', 'bin', 'elasticsearch') },
      ],
      installable: expect.arrayContaining(['elasticsearch@6.8.23', 'opensearch@2.19.1']),
    });
    expect(report.engineCache.installable).not.toContain('elasticsearch@2.4.6');
    const text = (await doctor([], { env })).stdout;
    expect(serviceLine(text, 'elasticsearch/elasticsearch')).toMatch(
      /available +versions 2\.4\.6, 2\.4, 5\.6\.9, 5\.6 \(elasticsearch 2\.4\.6, elasticsearch 5\.6\.9, haproxy/,
    );
    expect(text).toContain(
      `Engine cache ${cache} (hangar engines ls)\n  elasticsearch       2.4.6     ${join(cache, 'elasticsearch', '2.4.6', 'bin', 'elasticsearch')}`,
    );
    expect(text).toMatch(/note: elasticsearch 2\.4\.6, 5\.6\.9: the node has no security of its own/);
  });

  it('refuses what hangar cannot drive, saying why: MongoDB older than 4.2, a mongos of another release, Elasticsearch run by root', async () => {
    const old = standIns({ mongod: 'db version v4.0.28', mongos: 'mongos version v4.0.28' });
    const oldReport = JSON.parse((await doctor(['--json'], { path: `${old}:${searchPath}` })).stdout);
    expect(oldReport.services.mongodb).toMatchObject({ available: false, versions: [] });
    expect(oldReport.services.mongodb.reason).toMatch(/mongod 4\.0\.28 is older than 4\.2\.0.*driver/);
    expect(oldReport.services.mongodb.engines[0].install).toBeUndefined();

    const mixed = standIns({ mongod: 'db version v7.0.2', mongos: 'mongos version v6.0.5' });
    expect(JSON.parse((await doctor(['--json'], { path: `${mixed}:${searchPath}` })).stdout).services.mongodb.reason).toMatch(
      /different release series/,
    );

    // Elasticsearch and OpenSearch refuse root: as root, hangar runs them as the engine user, unless
    // told to keep engines root (elasticsearch-versions.test.ts covers the rule itself); only a
    // test running as root can run hangar as root
    if (isRoot) {
      const es = standIns(ELASTICSEARCH_8);
      const asRoot = JSON.parse((await doctor(['--json'], { path: `${es}:${searchPath}`, env: { HANGAR_ENGINE_USER: 'root' } })).stdout);
      expect(asRoot.services.elasticsearch).toMatchObject({
        available: false,
        reason: expect.stringMatching(/refuses to run as root, and engines run as root here \(HANGAR_ENGINE_USER=root\)/),
      });
      const asEngineUser = JSON.parse((await doctor(['--json'], { path: `${es}:${searchPath}` })).stdout);
      expect(asEngineUser.services.elasticsearch).toMatchObject({ available: true, versions: ['8.11.1', '8.11'] });
    }
  });
});

describe('hangar doctor says which user engines run as', () => {
  it.runIf(isRoot)(
    'as root: the engine user, with its ids, or the command that will make it; root when HANGAR_ENGINE_USER=root',
    async () => {
      const nobody = await doctor(['--json'], { env: { HANGAR_ENGINE_USER: 'nobody' } });
      expect(nobody.code, nobody.stderr).toBe(0);
      expect(JSON.parse(nobody.stdout).engineUser).toEqual({
        name: 'nobody',
        uid: NOBODY,
        gid: NOBODY,
        detail: 'nobody, uid 65534, gid 65534',
      });

      const absent = `hgd${process.pid}`;
      const made = await doctor([], { env: { HANGAR_ENGINE_USER: absent } });
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toContain(
        `Engines run as\n  ${absent}, which hangar serve makes at its first start (useradd --system --no-create-home --shell /usr/sbin/nologin --user-group ${absent})`,
      );
      // doctor makes nothing
      expect(spawnSync('id', [absent]).status).not.toBe(0);

      const root = JSON.parse((await doctor(['--json'], { env: { HANGAR_ENGINE_USER: 'root' } })).stdout).engineUser;
      expect(root).toMatchObject({ name: 'root', uid: 0, detail: expect.stringMatching(/^root, as HANGAR_ENGINE_USER=root asks/) });
    },
  );

  it.runIf(isRoot)(
    "as root: the instances' directories outside a data dir the engine user cannot reach, saying why and making nothing; exit 1 when its instances/ holds instances it cannot reach",
    async () => {
      const closed = dir('hangar-doctor-closed-');
      chmodSync(closed, 0o700);
      const dataDir = join(closed, 'data');
      // the documented place: the first 16 hex digits of the SHA-256 of the data dir's real path
      const outside = join(
        '/var/lib/hangar-engines',
        createHash('sha256')
          .update(join(realpathSync(closed), 'data'))
          .digest('hex')
          .slice(0, 16),
      );
      const env = { HANGAR_ENGINE_USER: 'nobody', HANGAR_DATA_DIR: dataDir };
      const r = await doctor([], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        `Instances' directories\n  ${outside}, outside the data dir: the engine user cannot reach ${join(dataDir, 'instances')}: ${closed} (mode 0700`,
      );
      expect(JSON.parse((await doctor(['--json'], { env })).stdout).instancesDir).toEqual({
        path: outside,
        outside: true,
        reason: expect.stringContaining(`${closed} (mode 0700`),
      });
      expect(existsSync(outside)).toBe(false);
      expect(existsSync(dataDir)).toBe(false);

      // instances there stay there: the engine user must reach them
      mkdirSync(join(dataDir, 'instances', '65a1b2c3d4e5f60718293a4b'), { recursive: true });
      const held = await doctor([], { env });
      expect(held.code).toBe(1);
      expect(held.stdout).toContain(
        `Instances' directories\n  ${join(dataDir, 'instances')}\n  PROBLEM: the engine user cannot reach the data dir ${dataDir}, whose instances/ holds instances: ${closed} (mode 0700`,
      );
      expect(held.stderr).toMatch(/engines cannot run in .*\/data\/instances: the engine user cannot reach the data dir/);
    },
  );

  it("says the instances' directories are in the data dir when the engine user can reach it, or hangar does not run as root", async () => {
    const r = await doctor(['--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).instancesDir).toEqual({ path: join(home, 'data', 'instances'), outside: false });
  });

  it("as another user: hangar's own user, whatever HANGAR_ENGINE_USER says", async () => {
    const r = await doctor(['--json'], isRoot ? { uid: NOBODY } : {});
    expect(r.code, r.stderr).toBe(0);
    const own = isRoot ? 'nobody' : spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
    expect(JSON.parse(r.stdout).engineUser).toMatchObject({
      name: own,
      detail: expect.stringMatching(
        new RegExp(`^${own} \\(uid \\d+\\), hangar's own user: HANGAR_ENGINE_USER is used only when hangar runs as root`),
      ),
    });
  });
});
