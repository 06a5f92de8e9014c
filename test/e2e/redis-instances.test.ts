import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ENGINES,
  HangarProcess,
  engineVersion,
  enginesAvailable,
  portOf,
  serverProgram,
  type RedisRecord,
} from './helpers/hangar-process.js';
import { processesUnder } from './helpers/processes.js';
import {
  connectRedis,
  enginePid,
  enginePort,
  engineSetting,
  eventually,
  pingOutcome,
  tcpAccepts,
  type RedisClient,
} from './helpers/redis.js';

// Real redis-server (or valkey-server) processes behind the real HAProxy edge, driven through
// hangar's HTTP API: every case on each engine of the redis service.
for (const engine of ENGINES)
  describe.runIf(enginesAvailable(engine))(`redis instances on the local runtime, engine ${engine}`, () => {
    let hangar: HangarProcess;
    let open: RedisRecord; // created without ACLs
    let allowed: RedisRecord; // created with an ACL for 127.0.0.1 in the body

    beforeAll(async () => {
      hangar = await HangarProcess.start();
      [open, allowed] = await Promise.all([
        hangar.createRedis('no-acl', { engine }),
        hangar.createRedis('with-acl', { engine, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] }),
      ]);
    }, 60_000);

    afterAll(async () => {
      await hangar?.destroy();
    });

    describe('the edge enforces the ACLs', () => {
      it(`runs ${engine}: the record says so, and both engines are ${serverProgram(engine)} processes`, () => {
        for (const rec of [open, allowed]) expect(rec).toMatchObject({ engine, version: engineVersion(engine) });
        const engines = processesUnder(join(hangar.dataDir, 'instances', allowed.id));
        expect(engines).toHaveLength(2);
        for (const p of engines) expect(p.cmdline.split(' ')[0]!.split('/').at(-1), p.cmdline).toBe(serverProgram(engine));
      });

      it('has connection strings on loopback, public and servicenet on their own ports', () => {
        expect(open.connect_string).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
        expect(open.public_connect_string).toBe(open.connect_string);
        expect(portOf(open.servicenet_connect_string)).not.toBe(portOf(open.public_connect_string));
      });

      it('refuses every client while the instance has no ACL (default deny)', async () => {
        expect(await pingOutcome(portOf(open.public_connect_string), open.password)).toBe('refused');
        expect(await pingOutcome(portOf(open.servicenet_connect_string), open.password)).toBe('refused');
      });

      it('applies ACLs of the create body before the instance is ACTIVE', async () => {
        expect(await pingOutcome(portOf(allowed.public_connect_string), allowed.password)).toBe('PONG');
      });

      it('admits an allowed source with the password, on both addresses; the engine still asks for the password', async () => {
        const res = await hangar.post(`/v2/instances/${open.name}/acls/`, { cidr_mask: '127.0.0.1', description: 'this machine' });
        expect(res.status).toBe(200);
        expect(await pingOutcome(portOf(open.public_connect_string), open.password)).toBe('PONG');
        expect(await pingOutcome(portOf(open.servicenet_connect_string), open.password)).toBe('PONG');
        expect(await pingOutcome(portOf(open.public_connect_string), 'wrong-password')).toMatch(/WRONGPASS|invalid/i);
        const acl = await hangar.get(`/v2/instances/${open.name}/acls/${res.body.data}/`);
        expect(acl.body.data.port).toBe(portOf(open.public_connect_string));
      });

      it('refuses a source outside the ACLs (a socket bound to 127.0.0.2)', async () => {
        expect(await pingOutcome(portOf(open.public_connect_string), open.password, '127.0.0.2')).toBe('refused');
      });

      it('refuses again once the ACL is deleted, and closes open connections of that source only', async () => {
        const client = await connectRedis(portOf(open.public_connect_string), open.password);
        const other = await connectRedis(portOf(allowed.public_connect_string), allowed.password);
        try {
          expect(await client.ping()).toBe('PONG');
          const list = await hangar.get(`/v2/instances/${open.name}/acls/`);
          for (const acl of list.body.data) {
            expect((await hangar.delete(`/v2/instances/${open.name}/acls/${acl._id.$oid}/`)).status).toBe(200);
          }
          await eventually(
            'new connections refused',
            async () => (await pingOutcome(portOf(open.public_connect_string), open.password)) === 'refused',
            1000,
          );
          await eventually('the open connection closed', () => !client.isOpen, 1000);
          await expect(client.ping()).rejects.toThrow();
          // another instance's connection from the same source is untouched
          expect(await other.ping()).toBe('PONG');
        } finally {
          for (const c of [client, other]) if (c.isOpen) c.destroy();
        }
      });
    });

    describe('inspection reads the engine', () => {
      let direct: RedisClient;
      beforeAll(async () => {
        direct = await connectRedis(portOf(allowed.public_connect_string), allowed.password);
      });
      afterAll(() => direct?.destroy());

      const metric = async (name: string) => {
        const res = await hangar.get(`/v2/redis/${allowed.name}/${name}/`);
        expect(res.status).toBe(200);
        return res.body.data;
      };
      const info = async (section: string) =>
        Object.fromEntries(
          (await direct.info(section))
            .split('\r\n')
            .filter((l) => l.includes(':'))
            .map((l) => l.split(':', 2) as [string, string]),
        );

      it("connectedSlaves is the primary's connected_slaves: one replica", async () => {
        expect(await metric('connectedSlaves')).toBe(Number((await info('replication')).connected_slaves));
        expect(await metric('connectedSlaves')).toBe(1);
      });

      it('maxMemoryPolicy and maxClients are what CONFIG GET says', async () => {
        expect(await metric('maxMemoryPolicy')).toBe((await direct.configGet('maxmemory-policy'))['maxmemory-policy']);
        expect(await metric('maxMemoryPolicy')).toBe('noeviction');
        expect(await metric('maxClients')).toBe((await direct.configGet('maxclients')).maxclients);
      });

      it(`stats read INFO live; their version is the ${engine} version`, async () => {
        const stats = (await hangar.get(`/v2/redis/${allowed.name}/stats/`)).body.data;
        expect(stats).toMatchObject({ version: engineVersion(engine), role: 'master', replicas: [{ state: 'online' }] });
        const server = await info('server');
        expect(stats.version).toBe(server.valkey_version ?? server.redis_version);
      });

      it('spaceUsage follows INFO memory', async () => {
        const usage = await metric('spaceUsage');
        const mem = await info('memory');
        expect(Number(mem.maxmemory)).toBe(500 * 1024 * 1024);
        // used_memory moves by a few KB between two reads (connection buffers): compare with a margin
        const free = ((Number(mem.maxmemory) - Number(mem.used_memory)) / Number(mem.maxmemory)) * 100;
        expect(Math.abs(usage.freeSpacePercentage - free)).toBeLessThan(0.5);
        expect(usage.usedMemoryHuman).toMatch(/^\d+(\.\d+)?[BKMG]$/);
        expect(usage.usedMemoryHuman.slice(-1)).toBe(mem.used_memory_human!.slice(-1));
      });
    });

    describe('resize', () => {
      it('sets maxmemory live on primary and replica and in their config files, keeping the keys, RESIZING then ACTIVE', async () => {
        const client = await connectRedis(portOf(allowed.public_connect_string), allowed.password);
        const replicaPid = enginePid(hangar.dataDir, allowed.id, 'replica');
        const primaryPid = enginePid(hangar.dataDir, allowed.id, 'primary');
        try {
          for (let i = 0; i < 100; i++) await client.set(`key:${i}`, `value:${i}`);
          // a paused replica holds the resize back, so that RESIZING can be seen
          process.kill(replicaPid, 'SIGSTOP');
          try {
            const res = await hangar.post(`/v2/redis/${allowed.name}/resize/`, { new_plan: 1000 });
            expect(res.status).toBe(200);
            expect((await hangar.get(`/v2/instances/${allowed.name}/`)).body.data.state).toBe('RESIZING');
          } finally {
            process.kill(replicaPid, 'SIGCONT');
          }
          const rec = await hangar.waitFor(allowed.name, (r) => r?.state === 'ACTIVE');
          expect(rec.plan).toBe(1000);
          const bytes = String(1000 * 1024 * 1024);
          expect((await client.configGet('maxmemory')).maxmemory).toBe(bytes);
          const replica = await connectRedis(enginePort(hangar.dataDir, allowed.id, 'replica'), allowed.password);
          try {
            expect((await replica.configGet('maxmemory')).maxmemory).toBe(bytes);
          } finally {
            replica.destroy();
          }
          expect(engineSetting(hangar.dataDir, allowed.id, 'primary', 'maxmemory')).toBe('1000mb');
          expect(engineSetting(hangar.dataDir, allowed.id, 'replica', 'maxmemory')).toBe('1000mb');
          expect(await client.dbSize()).toBe(100);
          expect(await client.get('key:42')).toBe('value:42');
          // live: neither engine was restarted
          expect(enginePid(hangar.dataDir, allowed.id, 'primary')).toBe(primaryPid);
          expect(enginePid(hangar.dataDir, allowed.id, 'replica')).toBe(replicaPid);
        } finally {
          client.destroy();
        }
      });
    });

    describe('engines are administered by hangar only', () => {
      it('clients cannot reconfigure, stop or detach the engine', async () => {
        const client = await connectRedis(portOf(allowed.public_connect_string), allowed.password);
        try {
          await expect(client.configSet('maxmemory', '1')).rejects.toThrow(/NOPERM/);
          await expect(client.sendCommand(['SHUTDOWN', 'NOSAVE'])).rejects.toThrow(/NOPERM/);
          await expect(client.sendCommand(['REPLICAOF', 'NO', 'ONE'])).rejects.toThrow(/NOPERM/);
          expect(await client.ping()).toBe('PONG');
        } finally {
          client.destroy();
        }
      });

      it('keeps config files and data readable by their owner only', () => {
        const dir = join(hangar.dataDir, 'instances', allowed.id);
        const mode = (p: string) => spawnSync('stat', ['-c', '%a', p], { encoding: 'utf8' }).stdout.trim();
        expect(mode(dir)).toBe('700');
        expect(mode(join(dir, 'primary'))).toBe('700');
        expect(mode(join(dir, 'primary', 'redis.conf'))).toBe('600');
        expect(readFileSync(join(dir, 'primary', 'redis.conf'), 'utf8')).toContain('bind 127.0.0.1');
      });
    });

    describe('services whose engine is not installed here', () => {
      it('refuses a mongodb replica set up front, naming the missing binary and its variable; nothing is recorded', async () => {
        // a replica set: FerretDB (from the engine cache, where installed) runs single instances only
        const res = await hangar.post('/v2/instances/', {
          name: 'mongo',
          plan: 1,
          service: 'mongodb',
          type: 'mongodb_replica_set',
          version: '3.4.2',
          zone: 'US-Dallas',
        });
        expect(res.status).toBe(422);
        expect(res.body.message).toMatch(/mongod/);
        if (spawnSync('sh', ['-c', 'command -v mongod'], { stdio: 'ignore' }).status !== 0)
          expect(res.body.message).toMatch(/HANGAR_MONGOD_BIN/);
        expect((await hangar.get('/v2/instances/mongo/')).status).toBe(404);
      });

      it('refuses an elasticsearch instance the same way', async () => {
        const res = await hangar.post('/v2/instances/', {
          name: 'es',
          plan: 4,
          service: 'elasticsearch',
          type: 'elasticsearch',
          version: '6.4.1',
          zone: 'US-Dallas',
        });
        expect(res.status).toBe(422);
        expect(res.body.message).toMatch(/elasticsearch|opensearch/);
      });
    });

    describe('delete', () => {
      it('stops the engines, frees the ports and removes the data', async () => {
        const ports = [
          portOf(open.public_connect_string),
          portOf(open.servicenet_connect_string),
          enginePort(hangar.dataDir, open.id, 'primary'),
          enginePort(hangar.dataDir, open.id, 'replica'),
        ];
        const dir = join(hangar.dataDir, 'instances', open.id);
        expect(processesUnder(dir)).toHaveLength(2);
        expect((await hangar.delete(`/v2/instances/${open.name}/`)).status).toBe(200);
        await hangar.waitFor(open.name, (r) => r === undefined);
        for (const port of ports) expect(await tcpAccepts(port)).toBe(false);
        expect(processesUnder(dir)).toEqual([]);
        expect(existsSync(dir)).toBe(false);
        // the other instance is untouched
        expect(await pingOutcome(portOf(allowed.public_connect_string), allowed.password)).toBe('PONG');
      });
    });
  });
