import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, engineVersion, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { processesUnder } from './helpers/processes.js';
import { type RedisClient, connectRedis, connectRedisAs, engineDir, enginePid, enginePort, eventually } from './helpers/redis.js';

/**
 * A running Redis instance switched to Valkey in place (POST /v2/redis/<name>/engine/), on real
 * redis-server and valkey-server processes behind the real edge, while a client writes through
 * its connect string: no write the client saw acknowledged is lost, the client gets back in
 * through the same connect string after one interruption (measured), and the instance keeps its
 * password, ACLs, Redis users, settings and data.
 */

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
const KEYS = 1000;
/**
 * More data written before the switch, in MB of 1 KB values (`HANGAR_TEST_SWITCH_PAD_MB=350`):
 * the client's interruption does not grow with it, where a restart of the primary would load it
 * all while clients wait. Waits grow by a second per MB.
 */
const PAD_KEYS = Number(process.env.HANGAR_TEST_SWITCH_PAD_MB ?? 0) * 1024;
const SEEDED = KEYS + PAD_KEYS;
const MORE_MS = PAD_KEYS;
/**
 * The longest a client may wait for its write during the switch: one restart of the primary
 * (~0.15 s measured) and the edge's wait before it tries a refused engine again (HAProxy: up to
 * 1 s), with room for a busy machine.
 */
const INTERRUPTION_MS = 3000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Rejects after `ms`: a command through the edge waits as long as the edge holds the connection. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}

/** A client INCRementing a counter through one connect string as fast as it can, reconnecting after any error. */
class Writer {
  /** Each acknowledged INCR: the value it answered and when (ms, performance.now()). */
  readonly acked: { value: number; at: number }[] = [];
  readonly errors: string[] = [];
  /** Connections made after the first. */
  reconnects = 0;
  private running = true;
  private readonly loop: Promise<void>;

  constructor(
    readonly port: number,
    password: string,
  ) {
    this.loop = this.run(password);
  }

  private async run(password: string): Promise<void> {
    let client: RedisClient | undefined;
    let connections = 0;
    while (this.running) {
      try {
        if (!client) {
          client = await within(connectRedis(this.port, password), 5000);
          if (connections++ > 0) this.reconnects++;
        }
        const value = await within(client.incr('counter'), 5000);
        this.acked.push({ value, at: performance.now() });
      } catch (err) {
        this.errors.push((err as Error).message);
        try {
          client?.destroy();
        } catch {
          /* closed already */
        }
        client = undefined;
        await sleep(2);
      }
    }
    client?.destroy();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** The longest time between two acknowledged writes, and when it began. */
  longestGap(): { ms: number; from: number } {
    let gap = { ms: 0, from: 0 };
    for (let i = 1; i < this.acked.length; i++) {
      const ms = this.acked[i]!.at - this.acked[i - 1]!.at;
      if (ms > gap.ms) gap = { ms, from: this.acked[i - 1]!.at };
    }
    return gap;
  }
}

/**
 * The program each engine of the instance runs (`redis-server`, `valkey-server`): the processes
 * under its directory, without what they forked (an AOF rewrite, a snapshot).
 */
function servers(dataDir: string, id: string): string[] {
  const all = processesUnder(join(dataDir, 'instances', id));
  const pids = new Set(all.map((p) => p.pid));
  return all
    .filter((p) => !pids.has(p.ppid))
    .map((p) => p.cmdline.split(' ')[0]!.split('/').at(-1)!)
    .sort();
}

/** Every process under the instance's directory, forks included, by their real program. */
function everything(dataDir: string, id: string): string[] {
  return processesUnder(join(dataDir, 'instances', id)).map((p) => p.program);
}

async function finishedOperation(h: HangarProcess, id: string, ms = 90_000): Promise<any> {
  let op: any;
  await eventually(
    `operation ${id} to finish`,
    async () => {
      op = (await h.get(`/v2/operations/${id}/`)).body.data;
      return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state);
    },
    ms,
  );
  return op;
}

async function completedBackup(h: HangarProcess, name: string): Promise<any> {
  const res = await h.post(`/v2/instances/${name}/backups/`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  let b: any;
  await eventually(
    `backup ${res.body.data.id} to complete`,
    async () => {
      b = (await h.get(`/v2/instances/${name}/backups/${res.body.data.id}/`)).body.data;
      return b.state === 'COMPLETED' || b.state === 'FAILED';
    },
    60_000 + MORE_MS,
  );
  expect(b.state, b.state_reason).toBe('COMPLETED');
  return b;
}

describe.runIf(enginesAvailable('redis') && enginesAvailable('valkey'))('switching a Redis instance to Valkey in place', () => {
  let h: HangarProcess;
  let inst: RedisRecord;
  let backup: any;
  const valkey = engineVersion('valkey');

  beforeAll(async () => {
    h = await HangarProcess.start();
    inst = await h.createRedis('sw', { acls: LOCAL });
    const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
    try {
      const multi = c.multi();
      for (let i = 0; i < KEYS; i++) multi.set(`seed:${i}`, `value ${i}`);
      await multi.exec();
      const pad = 'x'.repeat(1024);
      for (let i = 0; i < PAD_KEYS; i += 1000) {
        const batch = c.multi();
        for (let j = i; j < Math.min(i + 1000, PAD_KEYS); j++) batch.set(`pad:${j}`, pad);
        await batch.exec();
      }
    } finally {
      c.destroy();
    }
    const user = await h.post('/v2/redis/sw/users/', {
      username: 'app',
      password: 'app-password-1',
      keys: ['seed:*'],
      commands: ['+@read', '+@connection'],
    });
    expect(user.status, JSON.stringify(user.body)).toBe(200);
    expect((await h.patch('/v2/redis/sw/config/', { 'maxmemory-policy': 'allkeys-lru', maxclients: 5000 })).status).toBe(200);
    await h.waitFor('sw', (r) => r?.state === 'ACTIVE');
    // a backup of Redis, restored into the instance once it runs Valkey
    backup = await completedBackup(h, 'sw');
    expect(backup).toMatchObject({ engine: 'redis', engine_version: inst.version });
  }, 90_000 + MORE_MS);

  afterAll(async () => {
    await h?.destroy();
  });

  it(
    'under a client writing all along: no acknowledged write lost, one short interruption, the same connect string',
    async () => {
      expect(servers(h.dataDir, inst.id)).toEqual(['redis-server', 'redis-server']);
      const writer = new Writer(portOf(inst.connect_string), inst.password);
      let op: any;
      try {
        await eventually('the writer to write', () => writer.acked.length > 100, 10_000);
        const res = await h.post('/v2/redis/sw/engine/', { engine: 'valkey', version: valkey });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data).toBe(`Switching instance "sw" from Redis ${inst.version} to Valkey ${valkey} has started`);
        const id = res.headers.get('x-operation-id')!;
        // serving meanwhile
        expect((await h.get('/v2/instances/sw/')).body.data).toMatchObject({ state: 'ACTIVE', engine: 'redis' });
        op = await finishedOperation(h, id, 90_000 + 2 * MORE_MS);
        const acknowledged = writer.acked.length;
        await eventually('the writer to write after the switch', () => writer.acked.length > acknowledged + 100, 10_000);
      } finally {
        await writer.stop();
      }
      expect(op, JSON.stringify(op)).toMatchObject({ kind: 'engine.switch', state: 'SUCCEEDED', progress: 100 });
      const steps = op.steps.map((s: any) => s.name);
      // the replica first, then the switch of roles, then the old primary (as the replica)
      const at = (step: string) => steps.indexOf(step);
      expect(at('engine:replica-switched')).toBeGreaterThan(-1);
      expect(at('engine:replica-promoted')).toBeGreaterThan(at('engine:replica-switched'));
      expect(at('engine:roles-switched')).toBeGreaterThan(at('engine:replica-promoted'));
      expect(at('engine:primary-switched')).toBeGreaterThan(at('engine:roles-switched'));

      // every acknowledged INCR answered more than the one before: none was lost and replayed
      const values = writer.acked.map((a) => a.value);
      for (let i = 1; i < values.length; i++) expect(values[i], `write ${i} after ${values[i - 1]}`).toBeGreaterThan(values[i - 1]!);
      const c = await connectRedis(portOf(inst.connect_string), inst.password);
      try {
        expect(Number(await c.get('counter'))).toBeGreaterThanOrEqual(values.at(-1)!);
        expect(await c.dbSize()).toBe(SEEDED + 1);
      } finally {
        c.destroy();
      }
      // it lost its connection when the primary restarted, and got back in through the same connect string
      expect(writer.reconnects).toBeGreaterThanOrEqual(1);
      const gap = writer.longestGap();
      const after = writer.acked.filter((a) => a.at > gap.from).length;
      console.log(
        `engine switch: longest interruption of the writing client ${Math.round(gap.ms)} ms; ${writer.acked.length} writes acknowledged, ` +
          `${writer.errors.length} failed, ${writer.reconnects} reconnections, ${after} writes after the interruption`,
      );
      expect(gap.ms).toBeLessThan(INTERRUPTION_MS);
      expect(after).toBeGreaterThan(100);
    },
    150_000 + 2 * MORE_MS,
  );

  it('the record shows Valkey; name, connect strings, password and ACLs are kept; both engines run valkey-server', async () => {
    const rec = (await h.get('/v2/instances/sw/')).body.data;
    expect(rec).toMatchObject({
      id: inst.id,
      state: 'ACTIVE',
      engine: 'valkey',
      version: valkey,
      password: inst.password,
      connect_string: inst.connect_string,
      public_connect_string: inst.public_connect_string,
      servicenet_connect_string: inst.servicenet_connect_string,
    });
    expect((await h.get('/v2/instances/sw/acls/')).body.data.map((a: any) => a.cidr_mask)).toEqual(['127.0.0.1']);
    // nothing of Redis is left: no process of the instance runs one of its programs (Debian's
    // redis-server is a link to redis-check-rdb, valkey-server to valkey-check-rdb)
    expect(servers(h.dataDir, inst.id)).toEqual(['valkey-server', 'valkey-server']);
    expect(everything(h.dataDir, inst.id).filter((p) => p.split('/').at(-1)!.startsWith('redis-'))).toEqual([]);
    // the roles switched: the engine in the replica's directory is the primary now
    expect(engineDir(h.dataDir, inst.id, 'primary')).toBe(join(h.dataDir, 'instances', inst.id, 'replica'));
    expect((await h.get('/v2/redis/sw/stats/')).body.data).toMatchObject({ version: valkey, replicas: [{ state: 'online' }] });
    expect((await h.get('/v2/redis/sw/connectedSlaves/')).body.data).toBe(1);
  });

  it('the Redis users and settings are kept, on the primary and the replica', async () => {
    for (const port of [portOf(inst.public_connect_string), enginePort(h.dataDir, inst.id, 'replica')]) {
      const app = await connectRedisAs(port, 'app', 'app-password-1');
      try {
        expect(await app.get('seed:7')).toBe('value 7');
        await expect(app.get('counter')).rejects.toThrow(/NOPERM/);
        await expect(app.set('seed:7', 'x')).rejects.toThrow(/NOPERM/);
      } finally {
        app.destroy();
      }
      const c = await connectRedis(port, inst.password);
      try {
        expect(await c.configGet(['maxmemory-policy', 'maxclients', 'maxmemory'])).toEqual({
          'maxmemory-policy': 'allkeys-lru',
          maxclients: '5000',
          maxmemory: String(500 * 1024 * 1024),
        });
      } finally {
        c.destroy();
      }
    }
  });

  it(
    'a killed primary comes back on valkey-server with its data',
    async () => {
      const before = enginePid(h.dataDir, inst.id, 'primary');
      process.kill(before, 'SIGKILL');
      await eventually(
        'the primary runs again',
        () => {
          try {
            return enginePid(h.dataDir, inst.id, 'primary') !== before;
          } catch {
            return false;
          }
        },
        20_000,
      );
      await h.waitFor('sw', (r) => r?.state === 'ACTIVE', 30_000 + MORE_MS);
      expect(servers(h.dataDir, inst.id)).toEqual(['valkey-server', 'valkey-server']);
      await eventually(
        'the data is back',
        async () => {
          try {
            const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
            try {
              return (await c.dbSize()) === SEEDED + 1;
            } finally {
              c.destroy();
            }
          } catch {
            return false;
          }
        },
        20_000 + MORE_MS,
      );
    },
    60_000 + 2 * MORE_MS,
  );

  it(
    'the backup taken on Redis restores into it now it runs Valkey',
    async () => {
      const res = await h.post('/v2/instances/sw/restore/', { backup_id: backup.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect((await finishedOperation(h, res.body.data.id, 90_000 + MORE_MS)).state).toBe('SUCCEEDED');
      await h.waitFor('sw', (r) => r?.state === 'ACTIVE');
      const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
      try {
        // what it held when the backup was taken: the seed, not the counter written later
        expect(await c.dbSize()).toBe(SEEDED);
        expect(await c.get('seed:999')).toBe('value 999');
        expect(await c.get('counter')).toBeNull();
      } finally {
        c.destroy();
      }
      expect(servers(h.dataDir, inst.id)).toEqual(['valkey-server', 'valkey-server']);
    },
    120_000 + 2 * MORE_MS,
  );

  it(
    'a backup taken on Valkey is refused by a Redis instance, saying why',
    async () => {
      const taken = await completedBackup(h, 'sw');
      expect(taken).toMatchObject({ engine: 'valkey', engine_version: valkey });
      const other = await h.createRedis('still-redis', { acls: LOCAL });
      const res = await h.post('/v2/instances/still-redis/restore/', { backup_id: taken.id });
      expect(res.status).toBe(400);
      expect(res.body.message).toContain("Valkey's data files are not promised to load in Redis");
      expect((await h.get('/v2/instances/still-redis/')).body.data).toMatchObject({ state: 'ACTIVE', engine: 'redis' });
      expect(servers(h.dataDir, other.id)).toEqual(['redis-server', 'redis-server']);
      // and the switch back is refused too
      const back = await h.post('/v2/redis/sw/engine/', { engine: 'redis', version: inst.version });
      expect(back.status).toBe(400);
      expect(back.body.message).toContain("Valkey's data files are not promised to load in Redis");
    },
    120_000 + 2 * MORE_MS,
  );
});

describe.runIf(enginesAvailable('redis'))('switching to Valkey where it is not installed', () => {
  let h: HangarProcess;

  beforeAll(async () => {
    h = await HangarProcess.start({ env: { HANGAR_VALKEY_SERVER_BIN: '/nonexistent/valkey-server' } });
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('422 naming what is missing; the instance runs on Redis, untouched, and no operation is recorded', async () => {
    const inst = await h.createRedis('stays', { acls: LOCAL });
    const res = await h.post('/v2/redis/stays/engine/', { engine: 'valkey', version: '8.0.1' });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE_HERE' });
    expect(res.body.message).toMatch(/valkey cannot run here: .*\/nonexistent\/valkey-server.*HANGAR_VALKEY_SERVER_BIN/);
    expect((await h.get('/v2/instances/stays/')).body.data).toMatchObject({ state: 'ACTIVE', engine: 'redis', version: inst.version });
    expect((await h.get('/v2/operations/?instance=stays&kind=engine.switch')).body.data).toEqual([]);
    expect(servers(h.dataDir, inst.id)).toEqual(['redis-server', 'redis-server']);
  });
});
