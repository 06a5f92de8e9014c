import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import type { InstanceSpec } from '../runtime.js';
import type { EngineBinaries } from './binaries.js';
import { LocalRuntime } from './local-runtime.js';

// Which engines the local runtime registers and what it offers with them, from the binaries
// found (no engine is started: MongoDB and Elasticsearch cannot be installed on this machine),
// and how it removes what runs under an interpreter.

const found = (name: string, version: string) => ({ found: { name, path: `/nonexistent/bin/${name}`, version } });
const problem = (text: string) => ({ problem: text });
const base: EngineBinaries = {
  redisServer: found('redis-server', '7.0.15'),
  haproxy: found('haproxy', '2.6.12'),
  mongod: problem('`mongod` was not found on PATH; install it or set HANGAR_MONGOD_BIN to its path'),
  mongos: problem('`mongos` was not found on PATH; install it or set HANGAR_MONGOS_BIN to its path'),
  elasticsearch: problem('`elasticsearch` or `opensearch` was not found on PATH; install it or set HANGAR_ELASTICSEARCH_BIN to its path'),
  kibana: problem('`kibana` or `opensearch-dashboards` was not found on PATH; install it or set HANGAR_KIBANA_BIN to its path'),
};

const runtime = (binaries: EngineBinaries) =>
  new LocalRuntime({ config: loadConfig({}, { HANGAR_DATA_DIR: '/nonexistent/hangar' }), log: pino({ level: 'silent' }), binaries, searchPath: '/usr/bin:/bin' });

const mongoSpec: InstanceSpec = {
  id: '65a1b2c3d4e5f60718293a4b', service: 'mongodb', type: 'mongodb_singledb', version: '7.0', plan: 1, encrypted: false,
  storageEngine: null, password: null, adminSecret: 'secret', ports: { public: 20000, 'engine.0': 20001 },
};

describe('LocalRuntime offerings', () => {
  it('refuse MongoDB and Elasticsearch where their binaries are missing, naming them and their variables', async () => {
    const r = runtime(base);
    const o = r.offerings();
    expect(o.redis).toMatchObject({ available: true, versions: ['7.0.15', '7.0'] });
    expect(o.mongodb).toMatchObject({ available: false, versions: [] });
    expect(o.mongodb.unavailableReason).toMatch(/mongod.*HANGAR_MONGOD_BIN/);
    expect(o.elasticsearch.unavailableReason).toMatch(/HANGAR_ELASTICSEARCH_BIN/);
    await expect(r.mongodbUsers(mongoSpec).listUsers('shop')).rejects.toThrow(/HANGAR_MONGOD_BIN/);
  });

  it('offer MongoDB at the version of the mongod found, with the storage engines it has', async () => {
    const r = runtime({ ...base, mongod: found('mongod', '7.0.2'), mongos: found('mongos', '7.0.2') });
    expect(r.offerings().mongodb).toMatchObject({ available: true, versions: ['7.0.2', '7.0'], storageEngines: ['wiredtiger'] });
    // users go to the engine (nothing listens on its port here: the driver says so)
    await expect(r.mongodbUsers(mongoSpec).listUsers('shop')).rejects.toThrow(/ECONNREFUSED|connect/);
    await r.close();
  });

  it('refuse a MongoDB the driver cannot talk to', () => {
    const o = runtime({ ...base, mongod: found('mongod', '4.0.28'), mongos: found('mongos', '4.0.28') }).offerings();
    expect(o.mongodb).toMatchObject({ available: false, versions: [] });
    expect(o.mongodb.unavailableReason).toMatch(/mongodb cannot run here: mongod 4\.0\.28 is older than 4\.2\.0/);
  });

  it('offer Elasticsearch at the version found, unless hangar runs as root', () => {
    const o = runtime({ ...base, elasticsearch: found('elasticsearch', '8.11.1'), kibana: found('kibana', '8.11.1') }).offerings();
    if (process.getuid?.() === 0) {
      expect(o.elasticsearch).toMatchObject({ available: false, unavailableReason: expect.stringMatching(/refuses to run as root/) });
    } else {
      expect(o.elasticsearch).toMatchObject({ available: true, versions: ['8.11.1', '8.11'] });
    }
    expect(o.elasticsearch.engines?.map((e) => e.name)).toEqual(['elasticsearch', 'haproxy', 'kibana']);
  });
});

describe('LocalRuntime.removeInstance', () => {
  it("stops a unit by its pid file even when its program is an interpreter (Elasticsearch's java, Kibana's node)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-remove-'));
    try {
      const r = new LocalRuntime({ config: loadConfig({}, { HANGAR_DATA_DIR: dataDir }), log: pino({ level: 'silent' }), binaries: base, searchPath: '/usr/bin:/bin' });
      const unitDir = join(dataDir, 'instances', mongoSpec.id, 'node');
      mkdirSync(unitDir, { recursive: true });
      // a node process standing for a JVM: its command line names the unit directory, its program is no engine binary
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', `${unitDir}/`], { detached: true, stdio: 'ignore' });
      await new Promise((resolve) => child.once('spawn', resolve));
      writeFileSync(join(unitDir, 'process.pid'), `${child.pid}\n`);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        await r.removeInstance(mongoSpec.id, { step: () => {} });
        // removeInstance resolves once its processes are gone; the exit event may come a moment later
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))]);
        expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      expect(existsSync(join(dataDir, 'instances', mongoSpec.id))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
