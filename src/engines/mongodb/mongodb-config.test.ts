import { describe, expect, it } from 'vitest';
import { firstProductOf } from '../products.js';
import {
  KEY_FILE,
  createAdminUserCommand,
  keyFileContent,
  mongoLayout,
  mongodArgs,
  mongosArgs,
  memberHosts,
  replicaSetConfig,
  replicaSets,
  shardAddress,
  storageEngineFlag,
  wiredTigerCacheGb,
} from './mongodb-config.js';

const ID = '65a1b2c3d4e5f60718293a4b';

/** The value following a flag, as mongod reads its command line; undefined when the flag is absent. */
function flag(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}

describe('mongoLayout', () => {
  it('runs one standalone mongod for mongodb_singledb', () => {
    expect(mongoLayout(ID, 'mongodb_singledb')).toEqual([{ role: 'mongod-0', portRole: 'engine.0', process: 'mongod' }]);
  });

  it('runs a replica set of three on engine.0..2 for both replica set types', () => {
    for (const type of ['mongodb_replica_set', 'mongodb_jumbo_replica_set'] as const) {
      const layout = mongoLayout(ID, type);
      expect(layout.map((u) => [u.role, u.portRole, u.replSet])).toEqual([
        ['mongod-0', 'engine.0', `rs-${ID}`],
        ['mongod-1', 'engine.1', `rs-${ID}`],
        ['mongod-2', 'engine.2', `rs-${ID}`],
      ]);
      expect(replicaSets(layout)).toEqual([{ name: `rs-${ID}`, configsvr: false, members: layout }]);
    }
  });

  it('runs a config server replica set, a shard replica set and a mongos for mongodb_sharded', () => {
    const layout = mongoLayout(ID, 'mongodb_sharded');
    expect(layout).toEqual([
      { role: 'config', portRole: 'engine.config', process: 'mongod', replSet: `cfg-${ID}`, clusterRole: 'configsvr' },
      { role: 'shard', portRole: 'engine.shard', process: 'mongod', replSet: `shard-${ID}`, clusterRole: 'shardsvr' },
      { role: 'mongos', portRole: 'engine.mongos', process: 'mongos' },
    ]);
    expect(replicaSets(layout).map((rs) => [rs.name, rs.configsvr, rs.members.length])).toEqual([
      [`cfg-${ID}`, true, 1],
      [`shard-${ID}`, false, 1],
    ]);
  });

  it('uses exactly the engine ports the API allocates for each type', () => {
    for (const type of ['mongodb_singledb', 'mongodb_replica_set', 'mongodb_jumbo_replica_set', 'mongodb_sharded'] as const) {
      const engineRoles = firstProductOf('mongodb')
        .portRoles(type)
        .filter((r) => r.startsWith('engine.'));
      expect(
        mongoLayout(ID, type)
          .map((u) => u.portRole)
          .sort(),
      ).toEqual([...engineRoles].sort());
    }
  });
});

describe('mongodArgs', () => {
  const base = { port: 20001, dir: '/data/instances/x/mongod-0', storageEngine: 'wiredTiger' as const, cacheSizeGb: 1 };

  it('binds loopback on the engine port, keeps data in the unit dir, and turns authentication on', () => {
    const args = mongodArgs(base);
    expect(flag(args, '--port')).toBe('20001');
    expect(flag(args, '--bind_ip')).toBe('127.0.0.1');
    expect(flag(args, '--dbpath')).toBe(base.dir);
    expect(flag(args, '--keyFile')).toBe(`${base.dir}/${KEY_FILE}`);
    expect(args).toContain('--auth');
    expect(args).toContain('--nounixsocket');
    expect(flag(args, '--setParameter')).toBe('enableLocalhostAuthBypass=true');
    // the runtime recognises the process by its directory in the command line
    expect(args.some((a) => a.startsWith(`${base.dir}/`))).toBe(true);
  });

  it('sets the WiredTiger cache from the plan and the storage engine asked for', () => {
    expect(flag(mongodArgs({ ...base, cacheSizeGb: 2.5 }), '--wiredTigerCacheSizeGB')).toBe('2.5');
    expect(flag(mongodArgs(base), '--storageEngine')).toBe('wiredTiger');
    const mmap = mongodArgs({ ...base, storageEngine: 'mmapv1' });
    expect(flag(mmap, '--storageEngine')).toBe('mmapv1');
    expect(mmap).not.toContain('--wiredTigerCacheSizeGB');
  });

  it('makes members of replica sets, config servers and shards', () => {
    expect(mongodArgs(base)).not.toContain('--replSet');
    const member = mongodArgs({ ...base, replSet: 'rs-x' });
    expect(flag(member, '--replSet')).toBe('rs-x');
    expect(mongodArgs({ ...base, replSet: 'cfg-x', clusterRole: 'configsvr' })).toContain('--configsvr');
    expect(mongodArgs({ ...base, replSet: 'shard-x', clusterRole: 'shardsvr' })).toContain('--shardsvr');
  });

  it('is deterministic', () => {
    expect(mongodArgs(base)).toEqual(mongodArgs({ ...base }));
  });
});

describe('mongosArgs', () => {
  it('routes to the config server replica set on loopback with the instance keyFile', () => {
    const args = mongosArgs({ port: 20005, dir: '/d/mongos', configReplSet: 'cfg-x', configPort: 20003 });
    expect(flag(args, '--port')).toBe('20005');
    expect(flag(args, '--bind_ip')).toBe('127.0.0.1');
    expect(flag(args, '--configdb')).toBe('cfg-x/127.0.0.1:20003');
    expect(flag(args, '--keyFile')).toBe(`/d/mongos/${KEY_FILE}`);
    expect(args).not.toContain('--dbpath');
  });
});

describe('wiredTigerCacheGb', () => {
  it('is 5 % of the plan, at least 0.25 GB; config servers get the minimum', () => {
    expect([1, 5, 20, 50, 100].map((p) => wiredTigerCacheGb(p))).toEqual([0.25, 0.25, 1, 2.5, 5]);
    expect(wiredTigerCacheGb(100, 'shardsvr')).toBe(5);
    expect(wiredTigerCacheGb(100, 'configsvr')).toBe(0.25);
  });
});

describe('storageEngineFlag', () => {
  it('maps the API values to mongod names, WiredTiger by default', () => {
    expect(storageEngineFlag(null)).toBe('wiredTiger');
    expect(storageEngineFlag('wiredtiger')).toBe('wiredTiger');
    expect(storageEngineFlag('mmapv1')).toBe('mmapv1');
    expect(() => storageEngineFlag('rocksdb')).toThrow(/rocksdb/);
  });
});

describe('keyFileContent', () => {
  it('is stable per instance, different between instances, and within what mongod accepts', () => {
    const a = keyFileContent(ID, 'secret');
    expect(keyFileContent(ID, 'secret')).toBe(a);
    expect(keyFileContent('65a1b2c3d4e5f60718293a4c', 'secret')).not.toBe(a);
    expect(keyFileContent(ID, 'other')).not.toBe(a);
    const key = a.trim();
    expect(key).toMatch(/^[A-Za-z0-9+/]+$/);
    expect(key.length).toBeGreaterThanOrEqual(6);
    expect(key.length).toBeLessThanOrEqual(1024);
    expect(a).not.toContain('secret');
  });
});

describe('commands', () => {
  it('initiates a replica set with the members named as they are to announce themselves', () => {
    expect(replicaSetConfig('rs-x', ['10.0.0.5:30001', '10.0.0.5:30002', '10.0.0.5:30003'], false)).toEqual({
      _id: 'rs-x',
      members: [
        { _id: 0, host: '10.0.0.5:30001' },
        { _id: 1, host: '10.0.0.5:30002' },
        { _id: 2, host: '10.0.0.5:30003' },
      ],
    });
    expect(replicaSetConfig('cfg-x', ['127.0.0.1:20004'], true)).toEqual({
      _id: 'cfg-x',
      configsvr: true,
      members: [{ _id: 0, host: '127.0.0.1:20004' }],
    });
  });

  it('names the members of the replica-set types by the edge listeners, those of a sharded cluster by loopback', () => {
    const engine = [20001, 20002, 20003];
    const listeners = [30001, 30002, 30003];
    const edge = ['10.0.0.5:30001', '10.0.0.5:30002', '10.0.0.5:30003'];
    expect(memberHosts('mongodb_replica_set', engine, listeners, '10.0.0.5')).toEqual(edge);
    expect(memberHosts('mongodb_jumbo_replica_set', engine, listeners, '10.0.0.5')).toEqual(edge);
    expect(memberHosts('mongodb_sharded', [20004], [undefined], '10.0.0.5')).toEqual(['127.0.0.1:20004']);
    // a runtime that does not say where its edge is: loopback, as before
    expect(memberHosts('mongodb_replica_set', engine, listeners)).toEqual(['127.0.0.1:20001', '127.0.0.1:20002', '127.0.0.1:20003']);
  });

  it("creates hangar's user as root on admin", () => {
    expect(createAdminUserCommand('pw')).toEqual({ createUser: 'hangar', pwd: 'pw', roles: [{ role: 'root', db: 'admin' }] });
  });

  it('names a shard by its replica set and member', () => {
    expect(shardAddress('shard-x', 20006)).toBe('shard-x/127.0.0.1:20006');
  });
});
