import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PortTakenError, type InstanceSpec, type StepContext, type UnitDefinition, type UnitHost } from '../../domain/units.js';
import { TerminalError } from '../../domain/errors.js';
import { KEY_FILE } from './mongodb-config.js';
import { MongodbEngine } from './mongodb-engine.js';

// No mongod can be installed on this machine. What the engine does before a server answers is
// tested here with stand-in programs: units, keyFiles, refusals, and how it reads a mongod that
// exits at start (the lines are those mongod 7 logs).

const dir = mkdtempSync(join(tmpdir(), 'hangar-mongo-engine-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function standIn(name: string, logLine: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\necho '${logLine}'\nexit 48\n`);
  chmodSync(path, 0o755);
  return path;
}

const portTaken = standIn(
  'mongod-port-taken',
  '{"t":{"$date":"2026-11-21T10:00:00.000+00:00"},"s":"E","c":"CONTROL","id":20568,"ctx":"initandlisten","msg":"Error setting up listener","attr":{"error":{"code":9001,"codeName":"SocketException","errmsg":"Address already in use"}}}',
);
const diskFull = standIn(
  'mongod-disk-full',
  '{"t":{"$date":"2026-11-21T10:00:00.000+00:00"},"s":"E","c":"STORAGE","id":22435,"ctx":"initandlisten","msg":"WiredTiger error message","attr":{"error":28,"message":"No space left on device"}}',
);
const other = standIn('mongod-bad-option', 'Error parsing command line: unrecognised option --frobnicate');

/** Just enough of a runtime to start units and read their logs. */
class SpawningUnitHost implements UnitHost {
  readonly children = new Map<string, ChildProcess>();
  async ensureUnit(unit: UnitDefinition) {
    mkdirSync(unit.dir, { recursive: true, mode: 0o700 });
    const log = openSync(join(unit.dir, 'process.log'), 'a');
    const child = spawn(unit.bin, [...unit.args], {
      cwd: unit.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    await new Promise((resolve) => child.once('exit', resolve));
    this.children.set(unit.role, child);
    return { pid: child.pid!, started: true };
  }
  async stopUnit() {}
  isRunning(unit: UnitDefinition) {
    const c = this.children.get(unit.role);
    return c !== undefined && c.exitCode === null;
  }
  logTail(unit: UnitDefinition) {
    return readFileSync(join(unit.dir, 'process.log'), 'utf8').trim();
  }
  logEnd() {
    return 0;
  }
  logFrom(unit: UnitDefinition) {
    return this.logTail(unit);
  }
  writeFile(unit: UnitDefinition, name: string, content: string) {
    mkdirSync(unit.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(unit.dir, name), content, { mode: 0o600 });
    return true;
  }
  readFile(unit: UnitDefinition, name: string) {
    return existsSync(join(unit.dir, name)) ? readFileSync(join(unit.dir, name), 'utf8') : undefined;
  }
  exists(unit: UnitDefinition, name: string) {
    return existsSync(join(unit.dir, name));
  }
  // Data files (backups) are not part of these tests.
  readStream(): never {
    throw new Error('not used by these tests');
  }
  async writeStream(): Promise<number> {
    throw new Error('not used by these tests');
  }
  rename(): void {
    throw new Error('not used by these tests');
  }
  async runTool(): Promise<string> {
    throw new Error('not used by these tests');
  }
  toolOutput(): never {
    throw new Error('not used by these tests');
  }
  handOver(): void {}
  remove(): void {}
  size(): undefined {
    return undefined;
  }
}

const bin = (path: string, version = '7.0.2') => ({ name: 'mongod', path, version });
const mongos = { name: 'mongos', path: '/usr/bin/mongos', version: '7.0.2' };
const ctx: StepContext = { step: () => {} };

function spec(type: InstanceSpec['type'], ports: Record<string, number>, over: Partial<InstanceSpec> = {}): InstanceSpec {
  return {
    id: '65a1b2c3d4e5f60718293a4b',
    service: 'mongodb',
    engine: 'mongod',
    routes: [],
    type,
    version: '7.0',
    plan: 20,
    encrypted: false,
    storageEngine: null,
    password: null,
    adminSecret: 'admin-secret',
    ports,
    ...over,
  };
}

describe('MongodbEngine units', () => {
  const engine = new MongodbEngine({ mongod: bin('/usr/bin/mongod'), mongos });

  it('are one mongod per engine port, and a mongos for sharded clusters, each in its directory', () => {
    const rs = engine.units(spec('mongodb_replica_set', { 'engine.0': 1, 'engine.1': 2, 'engine.2': 3 }), '/d');
    expect(rs.map((u) => [u.role, u.dir, u.bin])).toEqual([
      ['mongod-0', '/d/mongod-0', '/usr/bin/mongod'],
      ['mongod-1', '/d/mongod-1', '/usr/bin/mongod'],
      ['mongod-2', '/d/mongod-2', '/usr/bin/mongod'],
    ]);
    expect(rs[2]!.args).toEqual(
      expect.arrayContaining(['--port', '3', '--replSet', 'rs-65a1b2c3d4e5f60718293a4b', '--wiredTigerCacheSizeGB', '1']),
    );
    const sharded = engine.units(spec('mongodb_sharded', { 'engine.config': 4, 'engine.shard': 5, 'engine.mongos': 6 }), '/d');
    expect(sharded.map((u) => [u.role, u.bin])).toEqual([
      ['config', '/usr/bin/mongod'],
      ['shard', '/usr/bin/mongod'],
      ['mongos', '/usr/bin/mongos'],
    ]);
    expect(sharded[2]!.args).toEqual(expect.arrayContaining(['--configdb', 'cfg-65a1b2c3d4e5f60718293a4b/127.0.0.1:4']));
  });

  it('offer the storage engines of the mongod found', () => {
    expect(engine.support()).toEqual({ storageEngines: ['wiredtiger'] });
  });
});

describe('MongodbEngine.ensureUnits', () => {
  it('writes the keyFile (mode 0600) of every unit before starting them', async () => {
    const engine = new MongodbEngine({ mongod: bin(other), mongos });
    const host = new SpawningUnitHost();
    const instanceDir = join(dir, 'keyfile');
    await expect(engine.ensureUnits(spec('mongodb_singledb', { 'engine.0': 20001 }), { dir: instanceDir, host }, ctx)).rejects.toThrow(
      /mongod mongod-0 exited: Error parsing command line/,
    );
    const key = join(instanceDir, 'mongod-0', KEY_FILE);
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key, 'utf8').trim()).toMatch(/^[0-9a-f]{128}$/);
  });

  it('reports a port held by another process with its role, so that the engine is moved', async () => {
    const engine = new MongodbEngine({ mongod: bin(portTaken), mongos });
    const failure = await engine
      .ensureUnits(spec('mongodb_singledb', { 'engine.0': 20001 }), { dir: join(dir, 'taken'), host: new SpawningUnitHost() }, ctx)
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PortTakenError);
    expect(failure).toMatchObject({ role: 'engine.0', port: 20001 });
  });

  it('fails the instance for good when the disk is full', async () => {
    const engine = new MongodbEngine({ mongod: bin(diskFull), mongos });
    const failure = engine.ensureUnits(
      spec('mongodb_singledb', { 'engine.0': 20001 }),
      { dir: join(dir, 'full'), host: new SpawningUnitHost() },
      ctx,
    );
    await expect(failure).rejects.toBeInstanceOf(TerminalError);
  });

  it('refuses mmapv1 and servers the driver cannot talk to, before starting anything', async () => {
    const host = new SpawningUnitHost();
    const engine = new MongodbEngine({ mongod: bin(other), mongos });
    const mmap = engine.ensureUnits(
      spec('mongodb_singledb', { 'engine.0': 20001 }, { storageEngine: 'mmapv1' }),
      { dir: join(dir, 'mmap'), host },
      ctx,
    );
    await expect(mmap).rejects.toBeInstanceOf(TerminalError);
    await expect(mmap).rejects.toThrow(/mmapv1 exists only up to MongoDB 4\.0/);
    const old = new MongodbEngine({ mongod: bin(other, '3.4.2'), mongos: { ...mongos, version: '3.4.2' } });
    await expect(old.ensureUnits(spec('mongodb_singledb', { 'engine.0': 20001 }), { dir: join(dir, 'old'), host }, ctx)).rejects.toThrow(
      /older than 4\.2\.0/,
    );
    expect(host.children.size).toBe(0);
  });
});
