import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, HangarProcess, LOGIN, PASSWORD, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import {
  connectRedis,
  connectRedisAs,
  enginePid,
  enginePort,
  engineSetting,
  eventually,
  pingOutcome,
  type RedisClient,
} from './helpers/redis.js';
import { edgeCommand } from './helpers/what-runs.js';

// Access and Redis day two on real redis-server processes behind the real HAProxy edge, driven
// through hangar's HTTP API: expiring ACLs, "would this address get in?", what the edge enforces,
// refused connections, the bulk replace (on Redis: the edge's work), Redis users, password rotation
// and settings (the engine's: on Redis and on Valkey).

const _inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Closes clients, whatever state they are in. */
function closeAll(...clients: (RedisClient | undefined)[]): void {
  for (const c of clients) {
    try {
      if (c?.isOpen) c.destroy();
    } catch {
      /* closed already */
    }
  }
}

/** What a command answers, or the error it gets. */
const outcome = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    (v) => v,
    (err: Error) => `error: ${err.message}`,
  );

describe.runIf(enginesAvailable())('access and Redis day two on the local runtime', () => {
  let hangar: HangarProcess;

  beforeAll(async () => {
    hangar = await HangarProcess.start({ env: { HANGAR_PASSWORD_GRACE: '600' } });
  }, 60_000);

  afterAll(async () => {
    await hangar?.destroy();
  });

  const events = async (action: string): Promise<any[]> =>
    (await hangar.get('/v2/events/?limit=200')).body.data.filter((e: any) => e.action === action);
  const check = async (name: string, ip: string): Promise<boolean> => {
    const res = await hangar.post(`/v2/instances/${name}/acls/check`, { ip });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.admitted;
  };

  describe('ACLs', () => {
    it('an ACL refuses new connections and cuts the open ones at its expiry; it leaves the list; the audit log says it expired', async () => {
      const inst = await hangar.createRedis('exp', { acls: [{ cidr_mask: '127.0.0.5', description: 'stays' }] });
      const port = portOf(inst.public_connect_string);
      const at = Date.now() + 4000;
      const res = await hangar.post('/v2/instances/exp/acls/', {
        cidr_mask: '127.0.0.1',
        description: 'for a while',
        expires_at: new Date(at).toISOString(),
      });
      expect(res.status).toBe(200);
      const client = await connectRedis(port, inst.password);
      const other = await connectRedis(port, inst.password, '127.0.0.5');
      try {
        expect(await client.ping()).toBe('PONG');
        await eventually('new connections refused', async () => (await pingOutcome(port, inst.password)) === 'refused', 15_000);
        expect(Date.now()).toBeGreaterThanOrEqual(at);
        await eventually('the open connection cut', () => !client.isOpen, 5000);
        expect(await other.ping()).toBe('PONG');
        expect((await hangar.get('/v2/instances/exp/acls/')).body.data.map((a: any) => a.cidr_mask)).toEqual(['127.0.0.5']);
        expect((await events('acl.expire')).map((e) => e.target)).toEqual([`instance:exp/acl:${res.body.data}`]);
      } finally {
        closeAll(client, other);
      }
    });

    it('an expiry that passes while hangar is down is carried out when it starts', async () => {
      const inst = await hangar.createRedis('down');
      const port = portOf(inst.public_connect_string);
      const at = Date.now() + 2500;
      const id = (
        await hangar.post('/v2/instances/down/acls/', {
          cidr_mask: '127.0.0.1',
          description: 'short',
          expires_at: new Date(at).toISOString(),
        })
      ).body.data;
      expect(await pingOutcome(port, inst.password)).toBe('PONG');
      await hangar.stop();
      await sleep(Math.max(0, at - Date.now()) + 500);
      // the edge serves on without hangar: it is hangar that takes the expired source off
      expect(await pingOutcome(port, inst.password)).toBe('PONG');
      await hangar.serve();
      await eventually('refused once hangar runs again', async () => (await pingOutcome(port, inst.password)) === 'refused', 20_000);
      expect((await events('acl.expire')).filter((e) => e.target.endsWith(id))).toHaveLength(1);
      expect((await hangar.get('/v2/instances/down/acls/')).body.data).toEqual([]);
    });

    it('check agrees with real connections from 20 addresses in and out of the ACLs', async () => {
      const acls = ['127.10.0.0/24', '127.20.0.5', '127.30.0.0/16', '127.40.1.0/28'];
      const inst = await hangar.createRedis('chk', { acls: acls.map((cidr_mask) => ({ cidr_mask, description: cidr_mask })) });
      const port = portOf(inst.public_connect_string);
      const addresses = [
        '127.10.0.1',
        '127.10.0.254',
        '127.10.1.1',
        '127.9.255.255',
        '127.20.0.5',
        '127.20.0.4',
        '127.20.0.6',
        '127.20.1.5',
        '127.30.0.1',
        '127.30.255.254',
        '127.31.0.1',
        '127.29.255.255',
        '127.40.1.1',
        '127.40.1.15',
        '127.40.1.16',
        '127.40.0.1',
        '127.0.0.1',
        '127.0.0.2',
        '127.50.0.1',
        '127.200.200.200',
      ];
      let admitted = 0;
      for (const ip of addresses) {
        const says = await check('chk', ip);
        const real = await pingOutcome(port, inst.password, ip);
        expect(real === 'PONG', `${ip}: check says ${says}, a real client got ${real}`).toBe(says);
        if (says) admitted++;
      }
      expect(admitted).toBe(7);
    });

    it('the effective rules equal the store; a change made at the edge by hand shows as drift until a pass repairs it', async () => {
      const inst = (await hangar.get('/v2/instances/chk/')).body.data;
      const listed = (await hangar.get('/v2/instances/chk/acls/')).body.data.map((a: any) => a.cidr_mask).sort();
      const res = await hangar.get('/v2/instances/chk/acls/effective');
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        in_sync: true,
        desired: { main: listed },
        enforcers: [{ name: 'haproxy', sources: { main: listed }, in_sync: true, missing: {}, extra: {} }],
      });
      const file = join(hangar.dataDir, 'edge', 'allow', `${inst.id}.main.lst`);
      await edgeCommand(hangar.dataDir, `add acl ${file} 127.99.0.1`);
      const drift = (await hangar.get('/v2/instances/chk/acls/effective')).body.data;
      expect(drift.in_sync).toBe(false);
      expect(drift.enforcers[0]).toMatchObject({ in_sync: false, extra: { main: ['127.99.0.1'] }, missing: {} });
      expect(await pingOutcome(portOf(inst.public_connect_string), inst.password, '127.99.0.1')).toBe('PONG');
      // any change of the instance is a pass, which puts the store's rules back
      await hangar.post('/v2/instances/chk/acls/', { cidr_mask: '127.60.0.1', description: 'one more' });
      expect((await hangar.get('/v2/instances/chk/acls/effective')).body.data.in_sync).toBe(true);
      expect(await pingOutcome(portOf(inst.public_connect_string), inst.password, '127.99.0.1')).toBe('refused');
    });

    it('refused connections are counted per instance in /metrics and the last ones are readable', async () => {
      const inst = (await hangar.get('/v2/instances/chk/')).body.data;
      const port = portOf(inst.public_connect_string);
      const refused = async () => {
        const text = await (await fetch(`${hangar.url}/metrics`)).text();
        return Number(
          new RegExp(`hangar_edge_connections_total\\{instance_id="${inst.id}",outcome="refused"\\} (\\d+)`).exec(text)?.[1] ?? 0,
        );
      };
      const before = await refused();
      const started = Date.now();
      expect(await pingOutcome(port, inst.password, '127.50.0.1')).toBe('refused');
      expect(await pingOutcome(portOf(inst.servicenet_connect_string), inst.password, '127.50.0.2')).toBe('refused');
      expect(await refused()).toBe(before + 2);
      let denied: any[] = [];
      await eventually('the refusals are in the list', async () => {
        denied = (await hangar.get('/v2/instances/chk/acls/denied')).body.data;
        return denied.some((d) => d.source === '127.50.0.2');
      });
      expect(denied.slice(0, 2)).toEqual([
        { source: '127.50.0.2', time: expect.any(String), listener: 'servicenet' },
        { source: '127.50.0.1', time: expect.any(String), listener: 'public' },
      ]);
      expect(Date.parse(denied[1].time)).toBeGreaterThanOrEqual(started - 1000);
      // admitted connections are not listed, nor are another instance's refusals
      expect(denied.map((d) => d.source)).not.toContain('127.10.0.1');
      expect((await hangar.get('/v2/instances/down/acls/denied')).body.data.map((d: any) => d.source)).not.toContain('127.50.0.1');
    });

    it('a bulk replace keeps what both lists share admitted throughout; a stale ETag is a 412', async () => {
      const inst = await hangar.createRedis('put', {
        acls: [
          { cidr_mask: '127.0.0.1', description: 'kept' },
          { cidr_mask: '127.0.0.6', description: 'dropped' },
        ],
      });
      const port = portOf(inst.public_connect_string);
      const kept = await connectRedis(port, inst.password);
      const dropped = await connectRedis(port, inst.password, '127.0.0.6');
      try {
        const list = await fetch(`${hangar.url}/v2/instances/put/acls/`, { headers: { 'x-auth-token': await token(hangar) } });
        const etag = list.headers.get('etag')!;
        const res = await replace(
          hangar,
          'put',
          [
            { cidr_mask: '127.0.0.1', description: 'kept' },
            { cidr_mask: '127.0.0.7', description: 'new' },
          ],
          etag,
        );
        expect(res.status).toBe(200);
        expect(await kept.ping()).toBe('PONG');
        await eventually('the dropped source cut', () => !dropped.isOpen, 5000);
        expect(await pingOutcome(port, inst.password, '127.0.0.7')).toBe('PONG');
        expect(await pingOutcome(port, inst.password, '127.0.0.6')).toBe('refused');
        const stale = await replace(hangar, 'put', [], etag);
        expect(stale.status).toBe(412);
        expect(await pingOutcome(port, inst.password)).toBe('PONG');
      } finally {
        closeAll(kept, dropped);
      }
    });
  });

  // Redis users, the instance password and settings are the engine's own: on each engine.
  for (const engine of ENGINES) {
    // instance names of the engine's cases
    const [u, rot, cfg] = ['u', 'rot', 'cfg'].map((n) => (engine === 'redis' ? n : `${n}-${engine}`)) as [string, string, string];
    describe.runIf(enginesAvailable(engine))(`on ${engine}`, () => {
      describe('Redis users', () => {
        let inst: RedisRecord;
        beforeAll(async () => {
          inst = await hangar.createRedis(u, { engine, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
        });

        it('a user limited to app:* cannot read other:*, nor run what it was not given', async () => {
          const port = portOf(inst.public_connect_string);
          const admin = await connectRedis(port, inst.password);
          await admin.set('other:1', 'secret');
          admin.destroy();
          const res = await hangar.post(`/v2/redis/${u}/users/`, {
            username: 'app',
            password: 'app-password-1',
            keys: ['app:*'],
            commands: ['+@read', '+@write', '-@dangerous', '+@connection'],
          });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          const app = await connectRedisAs(port, 'app', 'app-password-1');
          try {
            expect(await app.set('app:1', 'mine')).toBe('OK');
            expect(await app.get('app:1')).toBe('mine');
            expect(await outcome(app.get('other:1'))).toMatch(/^error: NOPERM/);
            expect(await outcome(app.set('other:1', 'x'))).toMatch(/^error: NOPERM/);
            expect(await outcome(app.configGet('maxmemory'))).toMatch(/^error: NOPERM/);
            expect(await outcome(app.flushAll())).toMatch(/^error: NOPERM/);
          } finally {
            app.destroy();
          }
          const refused = await hangar.post(`/v2/redis/${u}/users/`, { username: 'ops', commands: ['+config'] });
          expect(refused.status).toBe(400);
          expect(refused.body.message).toContain('CONFIG');
        });

        it('users are on the primary and the replica, in both configuration files (no password in clear), and survive an engine restart', async () => {
          const replica = await connectRedisAs(enginePort(hangar.dataDir, inst.id, 'replica'), 'app', 'app-password-1');
          try {
            await eventually('the write reached the replica', async () => (await replica.get('app:1')) === 'mine');
            expect(await outcome(replica.get('other:1'))).toMatch(/^error: NOPERM/);
          } finally {
            replica.destroy();
          }
          for (const role of ['primary', 'replica'] as const) {
            const conf = readFileSync(join(hangar.dataDir, 'instances', inst.id, role, 'redis.conf'), 'utf8');
            expect(conf).toMatch(/^user app "reset" "on" "#[0-9a-f]{64}" "~app:\*"/m);
            expect(conf).not.toContain('app-password-1');
          }
          const pid = enginePid(hangar.dataDir, inst.id, 'primary');
          process.kill(pid, 'SIGKILL');
          await eventually(
            'the primary runs again',
            () => {
              try {
                return enginePid(hangar.dataDir, inst.id, 'primary') !== pid;
              } catch {
                return false;
              }
            },
            15_000,
          );
          await hangar.waitFor(u, (r) => r?.state === 'ACTIVE');
          const app = await connectRedisAs(portOf(inst.public_connect_string), 'app', 'app-password-1');
          try {
            expect(await app.get('app:1')).toBe('mine');
            expect(await outcome(app.get('other:1'))).toMatch(/^error: NOPERM/);
          } finally {
            app.destroy();
          }
        });

        it('a user rotation keeps clients on either password connecting; finish retires the old one', async () => {
          const port = portOf(inst.public_connect_string);
          const onOld = await connectRedisAs(port, 'app', 'app-password-1');
          try {
            const { password } = (await hangar.post(`/v2/redis/${u}/users/app/rotate-password`)).body.data;
            const onNew = await connectRedisAs(port, 'app', password);
            const laterOld = await connectRedisAs(port, 'app', 'app-password-1');
            try {
              for (const c of [onOld, onNew, laterOld]) expect(await c.get('app:1')).toBe('mine');
              expect((await hangar.post(`/v2/redis/${u}/users/app/rotate-password/finish`)).body.data.retired).toBe(true);
              expect(await outcome(connectRedisAs(port, 'app', 'app-password-1').then((c) => c.destroy()))).toMatch(/WRONGPASS|invalid/i);
              for (const c of [onOld, onNew, laterOld]) expect(await c.ping()).toBe('PONG');
            } finally {
              closeAll(onNew, laterOld);
            }
          } finally {
            closeAll(onOld);
          }
        });

        it('deleting a user closes its connections and refuses it', async () => {
          await hangar.post(`/v2/redis/${u}/users/`, {
            username: 'temp',
            password: 'temp-password-1',
            keys: ['*'],
            commands: ['+@read', '+@connection'],
          });
          const port = portOf(inst.public_connect_string);
          const temp = await connectRedisAs(port, 'temp', 'temp-password-1');
          expect((await hangar.delete(`/v2/redis/${u}/users/temp/`)).status).toBe(200);
          await eventually('its connection closed', () => !temp.isOpen, 5000);
          expect(await outcome(connectRedisAs(port, 'temp', 'temp-password-1').then((c) => c.destroy()))).toMatch(/WRONGPASS|invalid/i);
        });
      });

      describe('password rotation of the instance', () => {
        it('two clients, one on each password, stay connected; new ones may use either until finish; the record shows the new one', async () => {
          const inst = await hangar.createRedis(rot, { engine, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
          const port = portOf(inst.public_connect_string);
          const onOld = await connectRedis(port, inst.password);
          let onNew: RedisClient | undefined;
          try {
            await onOld.set('k', 'v');
            const res = await hangar.post(`/v2/instances/${rot}/rotate-password`);
            expect(res.status).toBe(200);
            const { password } = res.body.data;
            expect((await hangar.get(`/v2/instances/${rot}/`)).body.data.password).toBe(password);
            onNew = await connectRedis(port, password);
            expect(await onNew.get('k')).toBe('v');
            expect(await onOld.get('k')).toBe('v');
            expect(await pingOutcome(port, inst.password)).toBe('PONG');
            expect(await pingOutcome(port, password)).toBe('PONG');
            // the replica follows the primary with the new password too
            expect(engineSetting(hangar.dataDir, inst.id, 'replica', 'masterauth')).toBe(`"${password}"`);
            expect((await hangar.post(`/v2/instances/${rot}/rotate-password/finish`)).body.data.retired).toBe(true);
            expect(await pingOutcome(port, inst.password)).toMatch(/WRONGPASS|invalid/i);
            expect(await pingOutcome(port, password)).toBe('PONG');
            expect(await onOld.ping()).toBe('PONG');
            expect(await onNew.ping()).toBe('PONG');
            await hangar.waitFor(rot, (r) => r?.state === 'ACTIVE');
            expect((await hangar.get(`/v2/redis/${rot}/connectedSlaves/`)).body.data).toBe(1);
          } finally {
            closeAll(onOld, onNew);
          }
        });
      });

      describe('settings', () => {
        let inst: RedisRecord;
        beforeAll(async () => {
          inst = await hangar.createRedis(cfg, { engine, acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
        });

        const replicaSetting = async (name: string): Promise<string> => {
          const c = await connectRedis(
            enginePort(hangar.dataDir, inst.id, 'replica'),
            (await hangar.get(`/v2/instances/${cfg}/`)).body.data.password,
          );
          try {
            return (await c.configGet(name))[name]!;
          } finally {
            c.destroy();
          }
        };

        it("a change shows through the spec's endpoints, runs on the replica too, and survives an engine restart and a hangar restart", async () => {
          const res = await hangar.patch(`/v2/redis/${cfg}/config/`, {
            'maxmemory-policy': 'allkeys-lru',
            maxclients: 5000,
            'notify-keyspace-events': 'Ex',
          });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          const spec = async () => [
            (await hangar.get(`/v2/redis/${cfg}/maxMemoryPolicy/`)).body.data,
            (await hangar.get(`/v2/redis/${cfg}/maxClients/`)).body.data,
          ];
          expect(await spec()).toEqual(['allkeys-lru', '5000']);
          expect((await hangar.get(`/v2/redis/${cfg}/config/`)).body.data).toMatchObject({
            'maxmemory-policy': 'allkeys-lru',
            maxclients: '5000',
            'notify-keyspace-events': 'xE',
          });
          // on the replica, which a failover would make the primary
          expect(await replicaSetting('maxmemory-policy')).toBe('allkeys-lru');
          expect(await replicaSetting('maxclients')).toBe('5000');
          for (const role of ['primary', 'replica'] as const) {
            expect(engineSetting(hangar.dataDir, inst.id, role, 'maxmemory-policy')).toBe('allkeys-lru');
            expect(engineSetting(hangar.dataDir, inst.id, role, 'maxclients')).toBe('"5000"');
          }
          const pid = enginePid(hangar.dataDir, inst.id, 'primary');
          process.kill(pid, 'SIGKILL');
          await eventually(
            'the primary runs again',
            () => {
              try {
                return enginePid(hangar.dataDir, inst.id, 'primary') !== pid;
              } catch {
                return false;
              }
            },
            15_000,
          );
          await hangar.waitFor(cfg, (r) => r?.state === 'ACTIVE');
          expect(await spec()).toEqual(['allkeys-lru', '5000']);
          await hangar.stop();
          await hangar.serve();
          await hangar.waitSupervising();
          expect(await spec()).toEqual(['allkeys-lru', '5000']);
          expect(await replicaSetting('maxmemory-policy')).toBe('allkeys-lru');
        });

        it('400 names the setting and its allowed values; nothing changes', async () => {
          const res = await hangar.patch(`/v2/redis/${cfg}/config/`, { 'maxmemory-policy': 'lru-please' });
          expect(res.status).toBe(400);
          expect(res.body).toMatchObject({ field: 'maxmemory-policy', allowed: expect.arrayContaining(['allkeys-lru', 'volatile-ttl']) });
          expect((await hangar.get(`/v2/redis/${cfg}/maxMemoryPolicy/`)).body.data).toBe('allkeys-lru');
        });

        it('the slow log and the stats are read live', async () => {
          expect((await hangar.patch(`/v2/redis/${cfg}/config/`, { 'slowlog-log-slower-than': 0 })).status).toBe(200);
          const password = (await hangar.get(`/v2/instances/${cfg}/`)).body.data.password;
          const c = await connectRedis(portOf(inst.public_connect_string), password);
          try {
            await c.set('hit', '1');
            await c.get('hit');
            await c.get('hit');
            await c.get('miss');
            await c.sendCommand(['ECHO', 'slow-log-marker']);
          } finally {
            c.destroy();
          }
          const slowlog = (await hangar.get(`/v2/redis/${cfg}/slowlog/?limit=50`)).body.data;
          expect(slowlog.some((e: any) => e.command[0] === 'ECHO' && e.command[1] === 'slow-log-marker')).toBe(true);
          expect(slowlog[0]).toEqual({
            id: expect.any(Number),
            time: expect.any(String),
            duration_us: expect.any(Number),
            command: expect.any(Array),
            client: expect.any(String),
            client_name: expect.any(String),
          });
          const stats = (await hangar.get(`/v2/redis/${cfg}/stats/`)).body.data;
          expect(stats).toMatchObject({ role: 'master', maxclients: 5000, maxmemory: 500 * 1024 * 1024, replicas: [{ state: 'online' }] });
          expect(stats.keyspace_hits).toBeGreaterThanOrEqual(2);
          expect(stats.keyspace_misses).toBeGreaterThanOrEqual(1);
          expect(stats.hit_ratio).toBeGreaterThan(0);
          expect(stats.hit_ratio).toBeLessThan(1);
          expect(stats.keys).toBeGreaterThanOrEqual(1);
          expect(stats.fragmentation_ratio).toBeGreaterThan(0);
        });
      });
    });
  }
});

/** The token of the hangar's account (a fresh login). */
async function token(h: HangarProcess): Promise<string> {
  const basic = Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64');
  return (
    (await (await fetch(`${h.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } })).json()) as { data: { token: string } }
  ).data.token;
}

/** PUT .../acls/ with If-Match. */
async function replace(h: HangarProcess, name: string, list: unknown[], etag: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.url}/v2/instances/${name}/acls/`, {
    method: 'PUT',
    headers: { 'x-auth-token': await token(h), 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify(list),
  });
  return { status: res.status, body: await res.json() };
}
