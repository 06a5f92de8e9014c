import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import type { InstanceSpec } from '../domain/units.js';
import type { EngineBinaries } from '../lib/binaries.js';
import { localEngines } from './index.js';
import { chooseEngine, serviceOffering } from './registry.js';

// Which engines run on this machine and what they offer, from the binaries found and the engine
// cache's installs (no engine is started here).

const found = (name: string, version: string) => ({ found: { name, path: `/nonexistent/bin/${name}`, version } });
const problem = (text: string) => ({ problem: text });
const base: EngineBinaries = {
  redisServer: found('redis-server', '7.0.15'),
  valkeyServer: problem('`valkey-server` was not found on PATH; install it or set HANGAR_VALKEY_SERVER_BIN to its path'),
  haproxy: found('haproxy', '2.6.12'),
  mongod: problem('`mongod` was not found on PATH; install it or set HANGAR_MONGOD_BIN to its path'),
  mongos: problem('`mongos` was not found on PATH; install it or set HANGAR_MONGOS_BIN to its path'),
  elasticsearch: problem('`elasticsearch` was not found on PATH; install it or set HANGAR_ELASTICSEARCH_BIN to its path'),
  opensearch: problem('`opensearch` was not found on PATH; install it or set HANGAR_OPENSEARCH_BIN to its path'),
  kibana: problem('`kibana` or `opensearch-dashboards` was not found on PATH; install it or set HANGAR_KIBANA_BIN to its path'),
};

// an engine cache of its own (empty unless a test fills it), not this machine's
const cache = mkdtempSync(join(tmpdir(), 'hangar-offerings-cache-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

const engines = (binaries: EngineBinaries, env: Record<string, string> = {}) => {
  const registry = localEngines(
    loadConfig({}, { HANGAR_DATA_DIR: '/nonexistent/hangar', HANGAR_ENGINE_CACHE: join(cache, 'none'), ...env }),
    binaries,
  );
  /** The offering of one engine, by name. */
  const of = (engine: string) => registry.offerings().find((o) => o.engine === engine)!;
  return Object.assign(registry, { of });
};

const mongoSpec: InstanceSpec = {
  id: '65a1b2c3d4e5f60718293a4b',
  service: 'mongodb',
  engine: 'mongod',
  routes: [],
  type: 'mongodb_singledb',
  version: '7.0',
  plan: 1,
  encrypted: false,
  storageEngine: null,
  password: null,
  adminSecret: 'secret',
  ports: { public: 20000, 'engine.0': 20001 },
};
/** Nowhere: the engine is never started here. */
const place = { dir: '/nonexistent/hangar/instances/x', host: undefined as never };

describe('local engines: offerings', () => {
  it('refuse MongoDB and Elasticsearch where their binaries are missing, naming them and their variables', async () => {
    const r = engines(base);
    const o = { redis: r.of('redis'), mongodb: r.of('mongod'), elasticsearch: r.of('elasticsearch') };
    expect(o.redis).toMatchObject({ available: true, versions: ['7.0.15', '7.0'] });
    expect(o.mongodb).toMatchObject({ available: false, versions: [] });
    expect(o.mongodb.unavailableReason).toMatch(/mongod.*HANGAR_MONGOD_BIN/);
    expect(o.elasticsearch.unavailableReason).toMatch(/HANGAR_ELASTICSEARCH_BIN/);
    expect(() => r.require('mongod')).toThrow(/HANGAR_MONGOD_BIN/);
  });

  it('offer MongoDB at the version of the mongod found, with the storage engines it has', async () => {
    const r = engines({ ...base, mongod: found('mongod', '7.0.2'), mongos: found('mongos', '7.0.2') });
    expect(r.of('mongod')).toMatchObject({ available: true, versions: ['7.0.2', '7.0'], storageEngines: ['wiredtiger'] });
    // users go to the engine (nothing listens on its port here: the driver says so)
    await expect(r.require('mongod').mongodbUsers!(mongoSpec, place).listUsers('shop')).rejects.toThrow(/ECONNREFUSED|connect/);
    await r.close();
  });

  it('refuse a MongoDB the driver cannot talk to', () => {
    const o = { mongodb: engines({ ...base, mongod: found('mongod', '4.0.28'), mongos: found('mongos', '4.0.28') }).of('mongod') };
    expect(o.mongodb).toMatchObject({ available: false, versions: [] });
    expect(o.mongodb.unavailableReason).toMatch(/mongod cannot run here: mongod 4\.0\.28 is older than 4\.2\.0/);
  });

  it('offer Elasticsearch at the version found, as root too (engines run as the engine user)', () => {
    const o = engines({ ...base, elasticsearch: found('elasticsearch', '8.11.1'), kibana: found('kibana', '8.11.1') }).of('elasticsearch');
    expect(o).toMatchObject({ available: true, versions: ['8.11.1', '8.11'] });
    expect(o.programs?.map((e) => e.name)).toEqual(['elasticsearch', 'haproxy', 'kibana']);
  });

  it('refuse Elasticsearch where engines run as root: hangar as root with HANGAR_ENGINE_USER=root', () => {
    const o = {
      elasticsearch: engines(
        { ...base, elasticsearch: found('elasticsearch', '8.11.1'), kibana: found('kibana', '8.11.1') },
        { HANGAR_ENGINE_USER: 'root' },
      ).of('elasticsearch'),
    };
    if (process.getuid?.() === 0) {
      expect(o.elasticsearch).toMatchObject({ available: false, unavailableReason: expect.stringMatching(/refuses to run as root/) });
    } else {
      // not root: the setting is not used, engines run as hangar's user
      expect(o.elasticsearch).toMatchObject({ available: true });
    }
    expect(o.elasticsearch.programs?.map((e) => e.name)).toEqual(['elasticsearch', 'haproxy', 'kibana']);
  });
});

/** An install in the engine cache, as `hangar engines install` leaves it: its home and manifest. */
function cached(product: string, version: string, xpack = false): void {
  const home = join(cache, 'filled', product, version);
  mkdirSync(join(home, 'bin'), { recursive: true });
  const program = join(home, 'bin', product === 'opensearch' ? 'opensearch' : 'elasticsearch');
  writeFileSync(program, '#!/bin/sh\n');
  chmodSync(program, 0o755);
  if (xpack) mkdirSync(join(home, 'modules', 'x-pack-security'), { recursive: true });
  writeFileSync(
    join(home, 'hangar-engine.json'),
    JSON.stringify({
      manifest: 1,
      product,
      version,
      program,
      source: { kind: 'program', file: program, sha256: '0'.repeat(64) },
      java_home: '/usr/lib/jvm/java-17-openjdk-amd64',
      java_version: '17.0.15',
      env: { JAVA_HOME: '/usr/lib/jvm/java-17-openjdk-amd64' },
      patches: [],
      installed_at: '2026-12-07T21:21:33.598Z',
    }),
  );
}

describe('local engines: Elasticsearch and OpenSearch from the engine cache', () => {
  cached('elasticsearch', '2.4.6');
  cached('elasticsearch', '5.6.9');
  cached('elasticsearch', '6.8.23', true);
  cached('elasticsearch-oss', '6.8.23');
  cached('opensearch', '2.19.1');
  const filled = () => engines(base, { HANGAR_ENGINE_CACHE: join(cache, 'filled') });

  it('offer exactly the versions installed (X.Y.Z and X.Y), with no binary on PATH', () => {
    const r = filled();
    expect(r.of('elasticsearch')).toMatchObject({ available: true, versions: ['2.4.6', '2.4', '5.6.9', '5.6', '6.8.23', '6.8'] });
    expect(r.of('opensearch')).toMatchObject({ available: true, service: 'elasticsearch', versions: ['2.19.1', '2.19'] });
    expect(r.of('elasticsearch').programs?.map((p) => `${p.name} ${p.version}`)).toEqual([
      'elasticsearch 2.4.6',
      'elasticsearch 5.6.9',
      'elasticsearch 6.8.23',
      'elasticsearch-oss 6.8.23',
      'haproxy 2.6.12',
    ]);
    // a create without engine gets Elasticsearch; OpenSearch is named
    expect(chooseEngine(r.offerings(), 'elasticsearch', undefined).engine).toBe('elasticsearch');
    expect(chooseEngine(r.offerings(), 'elasticsearch', 'opensearch').engine).toBe('opensearch');
  });

  it("list the API's versions they do not serve, with why: refused by the installer, or not installed", () => {
    const unavailable = Object.fromEntries((filled().of('elasticsearch').unavailableVersions ?? []).map((v) => [v.version, v.reason]));
    expect(unavailable).toMatchObject({
      '5.2.2': expect.stringMatching(/fails at bootstrap/),
      '6.3.2': expect.stringMatching(/not published on Maven Central/),
      '6.4.1': expect.stringMatching(/not published on Maven Central/),
      '5.4.3': 'not installed here: run `hangar engines install elasticsearch@5.4.3`',
      '7.17.25': 'not installed here: run `hangar engines install elasticsearch@7.17.25`',
    });
    expect(unavailable).not.toHaveProperty('2.4.6');
  });

  it('say which versions the edge guards and that the Kibana listeners answer 503', () => {
    const notes = filled().of('elasticsearch').notes ?? [];
    expect(notes).toEqual([
      expect.stringMatching(/^elasticsearch 2\.4\.6, 5\.6\.9: the node has no security of its own/),
      expect.stringMatching(
        /^elasticsearch 2\.4\.6, 5\.6\.9, 6\.8\.23: no Kibana runs beside the node \(hangar runs Kibana only beside Elasticsearch 7\.10\.0 or later with security .*kibana_http and kibana_https answer 503/,
      ),
    ]);
  });

  it('add the version of a binary on PATH to those of the cache', () => {
    const r = engines({ ...base, elasticsearch: found('elasticsearch', '8.11.1') }, { HANGAR_ENGINE_CACHE: join(cache, 'filled') });
    expect(r.of('elasticsearch').versions).toEqual(['2.4.6', '2.4', '5.6.9', '5.6', '6.8.23', '6.8', '8.11.1', '8.11']);
  });
});

describe('local engines: Redis and Valkey for the redis service', () => {
  const valkey = found('valkey-server', '8.0.1');

  it('offer Valkey beside Redis when valkey-server is found; a create without engine gets Redis', () => {
    const r = engines({ ...base, valkeyServer: valkey });
    expect(r.of('valkey')).toMatchObject({ available: true, service: 'redis', versions: ['8.0.1', '8.0'] });
    const o = serviceOffering(r.offerings(), 'redis');
    expect(o.default?.engine).toBe('redis');
    expect(o.engines.map((e) => e.engine)).toEqual(['redis', 'valkey']);
    expect(chooseEngine(r.offerings(), 'redis', undefined).engine).toBe('redis');
    expect(chooseEngine(r.offerings(), 'redis', 'valkey').engine).toBe('valkey');
  });

  it('take Valkey as the default where redis-server is missing', () => {
    const r = engines({ ...base, redisServer: problem('`redis-server` was not found on PATH'), valkeyServer: valkey });
    expect(serviceOffering(r.offerings(), 'redis').default?.engine).toBe('valkey');
  });

  it('refuse an engine of another service (400 naming the service engines) and one that cannot run here (422 with the reason)', () => {
    const r = engines(base);
    expect(() => chooseEngine(r.offerings(), 'redis', 'mongod')).toThrow(
      expect.objectContaining({ status: 400, code: 'INVALID_VALUE', extra: { field: 'engine', allowed: ['redis', 'valkey'] } }),
    );
    expect(r.of('valkey')).toMatchObject({
      available: false,
      unavailableReason: expect.stringMatching(/valkey-server.*HANGAR_VALKEY_SERVER_BIN/),
    });
    expect(() => chooseEngine(r.offerings(), 'redis', 'valkey')).toThrow(
      expect.objectContaining({ status: 422, code: 'SERVICE_UNAVAILABLE_HERE', message: expect.stringMatching(/valkey-server/) }),
    );
  });

  it('runs valkey-server for a Valkey instance', () => {
    const r = engines({ ...base, valkeyServer: valkey });
    const spec = { ...mongoSpec, id: 'v1', service: 'redis' as const, engine: 'valkey', type: 'redis_ha_instance' as const };
    expect(
      r
        .require('valkey')
        .units(spec, '/nonexistent/i')
        .map((u) => u.bin),
    ).toEqual([valkey.found.path, valkey.found.path]);
    expect(
      r
        .require('redis')
        .units(spec, '/nonexistent/i')
        .map((u) => u.bin),
    ).toEqual(['/nonexistent/bin/redis-server', '/nonexistent/bin/redis-server']);
  });
});
