import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseReader } from '../helpers/sse.js';
import { HangarProcess, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { connectRedis, enginePid, eventually, pingOutcome, tcpAccepts } from './helpers/redis.js';

// Operations of every kind on the local runtime, with real redis-server processes behind the
// real HAProxy edge: the built binary, driven over HTTP only. A stuck engine (a primary stopped
// with SIGSTOP) runs a resize into its deadline; hangar killed in the middle of work finishes its
// operations after a restart.

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];

/** Waits until the operation is finished; returns it. */
async function finished(h: HangarProcess, id: string, ms = 30_000): Promise<any> {
  let op: any;
  await eventually(
    `operation ${id} to finish`,
    async () => {
      op = (await h.get(`/v2/operations/${id}/`)).body.data;
      return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op?.state);
    },
    ms,
  );
  return op;
}

/** A change through the API, and the operation its answer names. */
async function started(h: HangarProcess, method: string, path: string, body?: unknown): Promise<{ body: any; operation: string }> {
  const res = await h.request(method, path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const operation = res.headers.get('x-operation-id')!;
  expect(operation).toMatch(/^[0-9a-f]{24}$/);
  expect(res.headers.get('location')).toBe(`/v2/operations/${operation}/`);
  return { body: res.body, operation };
}

describe.runIf(enginesAvailable())('operations on the local runtime', () => {
  let h: HangarProcess;
  beforeAll(async () => {
    h = await HangarProcess.start({ serveEnv: { HANGAR_OPERATION_DEADLINES: 'resize=4' } });
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('create, ACL add and delete, resize, rename and delete each SUCCEED once the engines and the edge do it, and the stream tells it', async () => {
    const stream = await SseReader.open(`${h.url}/v2/events/stream?kinds=operation`, { 'x-auth-token': h.authToken });
    try {
      const create = await started(h, 'POST', '/v2/instances/', h.redisBody('ops', { acls: LOCAL }));
      const op = await finished(h, create.operation);
      expect(op).toMatchObject({ kind: 'create', state: 'SUCCEEDED', progress: 100 });
      // the real steps of the build, in order, with their times
      const names: string[] = op.steps.map((s: any) => s.name);
      for (const step of ['recorded', 'started', 'create:building', 'create:primary-started', 'create:replica-started', 'succeeded'])
        expect(names, names.join(' ')).toContain(step);
      expect(names.indexOf('create:primary-started')).toBeLessThan(names.indexOf('create:replica-started'));
      const rec: RedisRecord = (await h.get('/v2/instances/ops/')).body.data;
      expect(rec.state).toBe('ACTIVE');
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');

      const add = await started(h, 'POST', '/v2/instances/ops/acls/', { cidr_mask: '127.0.0.2', description: 'second' });
      expect(await finished(h, add.operation)).toMatchObject({ kind: 'acl.add', state: 'SUCCEEDED' });
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password, '127.0.0.2')).toBe('PONG');
      const del = await started(h, 'DELETE', `/v2/instances/ops/acls/${add.body.data}/`);
      expect(await finished(h, del.operation)).toMatchObject({ kind: 'acl.delete', state: 'SUCCEEDED' });
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password, '127.0.0.2')).toBe('refused');

      const resize = await started(h, 'POST', '/v2/redis/ops/resize/', { new_plan: 1000 });
      expect(await finished(h, resize.operation)).toMatchObject({
        kind: 'resize',
        state: 'SUCCEEDED',
        detail: { from_plan: 500, to_plan: 1000 },
      });
      const client = await connectRedis(portOf(rec.public_connect_string), rec.password);
      try {
        expect((await client.configGet('maxmemory')).maxmemory).toBe(String(1000 * 1024 * 1024));
      } finally {
        client.destroy();
      }

      const rename = await started(h, 'POST', '/v2/instances/ops/rename/', { name: 'ops2' });
      expect(await finished(h, rename.operation)).toMatchObject({ kind: 'rename', state: 'SUCCEEDED' });
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');

      const drop = await started(h, 'DELETE', '/v2/instances/ops2/');
      expect(await finished(h, drop.operation)).toMatchObject({ kind: 'delete', state: 'SUCCEEDED' });
      expect((await h.get('/v2/instances/ops2/')).status).toBe(404);
      expect(await tcpAccepts(portOf(rec.public_connect_string))).toBe(false);

      const ids = [create, add, del, resize, rename, drop].map((x) => x.operation);
      await stream.until('every operation to finish', (ms) =>
        ids.every((id) => ms.some((m) => m.event === 'operation.succeeded' && m.data.operation_id === id)),
      );
      const events = stream.events;
      expect(events.map((m) => m.id!)).toEqual([...events.map((m) => m.id!)].sort((a, b) => a - b));
    } finally {
      stream.close();
    }
  }, 90_000);

  it('a resize on a stuck engine (its primary stopped) is FAILED at its deadline with the instance DEGRADED; once the engine moves, ACTIVE on the new plan', async () => {
    const rec = await h.createRedis('stuck', { acls: LOCAL });
    const primary = enginePid(h.dataDir, rec.id, 'primary');
    process.kill(primary, 'SIGSTOP');
    let resumed = false;
    try {
      const resize = await started(h, 'POST', '/v2/redis/stuck/resize/', { new_plan: 1000 });
      const op = await finished(h, resize.operation);
      expect(op).toMatchObject({
        state: 'FAILED',
        error: {
          code: 'DEADLINE_EXCEEDED',
          message: expect.stringMatching(/^resize not finished within its deadline of 4 s; the instance is DEGRADED/),
        },
      });
      expect((await h.get('/v2/instances/stuck/')).body.data.state).toBe('DEGRADED');
      process.kill(primary, 'SIGCONT');
      resumed = true;
      const active = await h.waitFor('stuck', (r) => r?.state === 'ACTIVE' && r.plan === 1000, 30_000);
      const client = await connectRedis(portOf(active.public_connect_string), active.password);
      try {
        expect((await client.configGet('maxmemory')).maxmemory).toBe(String(1000 * 1024 * 1024));
      } finally {
        client.destroy();
      }
    } finally {
      if (!resumed) process.kill(primary, 'SIGCONT');
    }
  }, 90_000);
});

describe.runIf(enginesAvailable()).concurrent('operations when hangar is killed in the middle', () => {
  it.each([
    { op: 'create', step: 'create:primary-started' },
    { op: 'resize', step: 'resize:primary-set' },
    { op: 'delete', step: 'delete:engines-stopped' },
  ])(
    'a $op killed at $step SUCCEEDS after the restart',
    async ({ op, step }) => {
      const h = await HangarProcess.start({ serveEnv: op === 'create' ? { HANGAR_TEST_DIE_AT: step } : {} });
      try {
        if (op !== 'create') {
          await h.createRedis('x', { acls: LOCAL });
          expect((await h.stop()).code).toBe(0);
          await h.serve({ HANGAR_TEST_DIE_AT: step });
          await h.waitSupervising();
        }
        const request =
          op === 'create'
            ? h.post('/v2/instances/', h.redisBody('x', { acls: LOCAL }))
            : op === 'resize'
              ? h.post('/v2/redis/x/resize/', { new_plan: 1000 })
              : h.delete('/v2/instances/x/');
        await request.catch(() => undefined);
        expect(await h.waitExit(20_000), `hangar should die at ${step}`).toEqual({ code: null, signal: 'SIGKILL' });
        await h.serve();
        const kind = op;
        const list = (await h.get(`/v2/operations/?instance=x&kind=${kind}`)).body.data;
        expect(list).toHaveLength(1);
        expect(await finished(h, list[0].id, 30_000)).toMatchObject({ kind, state: 'SUCCEEDED' });
        if (op === 'delete') expect((await h.get('/v2/instances/x/')).status).toBe(404);
        else expect((await h.get('/v2/instances/x/')).body.data).toMatchObject({ state: 'ACTIVE', plan: op === 'resize' ? 1000 : 500 });
      } finally {
        await h.destroy();
      }
    },
    90_000,
  );
});
