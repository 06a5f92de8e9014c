import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import type { InstanceSpec } from '../domain/units.js';
import type { EngineBinaries } from '../lib/binaries.js';
import { localEngines } from './index.js';
import { chooseEngine, serviceOffering } from './registry.js';

// Which engines run on this machine and what they offer, from the binaries found (no engine is
// started: MongoDB and Elasticsearch cannot be installed on this machine).

const found = (name: string, version: string) => ({ found: { name, path: `/nonexistent/bin/${name}`, version } });
const problem = (text: string) => ({ problem: text });
const base: EngineBinaries = {
  redisServer: found('redis-server', '7.0.15'),
  valkeyServer: problem('`valkey-server` was not found on PATH; install it or set HANGAR_VALKEY_SERVER_BIN to its path'),
  haproxy: found('haproxy', '2.6.12'),
  mongod: problem('`mongod` was not found on PATH; install it or set HANGAR_MONGOD_BIN to its path'),
  mongos: problem('`mongos` was not found on PATH; install it or set HANGAR_MONGOS_BIN to its path'),
  elasticsearch: problem('`elasticsearch` or `opensearch` was not found on PATH; install it or set HANGAR_ELASTICSEARCH_BIN to its path'),
  kibana: problem('`kibana` or `opensearch-dashboards` was not found on PATH; install it or set HANGAR_KIBANA_BIN to its path'),
};

const engines = (binaries: EngineBinaries, env: Record<string, string> = {}) => {
  const registry = localEngines(loadConfig({}, { HANGAR_DATA_DIR: '/nonexistent/hangar', ...env }), binaries);
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
