import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HangarProcess, engineVersion, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { processesUnder } from './helpers/processes.js';
import {
  connectRedis,
  connectRedisAs,
  enginePid,
  enginePort,
  engineSetting,
  eventually,
  pingOutcome,
  tcpAccepts,
} from './helpers/redis.js';
import { COMPUTED_STEPS, USER_STEPS, literalStepNames } from './helpers/steps.js';
import { edgeAllowList, expectApiMatchesWhatRuns } from './helpers/what-runs.js';

/**
 * hangar killed (SIGKILL, by HANGAR_TEST_DIE_AT) at every step of every slow operation on the
 * local runtime, then started again without the fault: each instance converges to what was
 * asked, no ACL is lost, and what the API lists is exactly what runs (engine processes and
 * their pid files, edge listeners and allow lists, data dirs). One hangar and data dir per case.
 */

/** The answer of the request, or undefined when hangar died before it answered. */
type Answer = { status: number; body: any; headers?: Headers } | undefined;

interface Operation {
  /** What exists before the operation. */
  setup(h: HangarProcess): Promise<RedisRecord | undefined>;
  /** The operation. */
  act(h: HangarProcess, inst: RedisRecord | undefined): Promise<Answer>;
  /** What must hold once the restarted hangar has converged; `rolledBack`: hangar died inside the request's transaction. */
  verify(h: HangarProcess, inst: RedisRecord | undefined, answer: Answer, rolledBack: boolean): Promise<void>;
}

/** Steps inside a request's transaction: dying there leaves nothing of the change. */
const IN_TRANSACTION = new Set(['acl-add:inserted', 'acl-delete:marked']);

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
/**
 * How long the restarted hangar may take to converge: it takes the runtime over at once and
 * sweeps every instance, which takes a few seconds at most; waiting for the periodic resync
 * (30 s) would not make it.
 */
const CONVERGE_MS = 25_000;

/** Sends a request to a hangar that may die while it runs: undefined when it does. */
const survive = (request: Promise<{ status: number; body: any; headers?: Headers }>): Promise<Answer> => request.catch(() => undefined);

const aclsOf = async (h: HangarProcess, name: string): Promise<any[]> => (await h.get(`/v2/instances/${name}/acls/`)).body.data;

/** Waits until the edge admits exactly what the API lists for the instance. */
async function edgeFollowsApi(h: HangarProcess, rec: RedisRecord): Promise<string[]> {
  let listed: string[] = [];
  await eventually(
    `the edge admits what the API lists for ${rec.name}`,
    async () => {
      listed = (await aclsOf(h, rec.name)).map((a) => a.cidr_mask).sort();
      return JSON.stringify(await edgeAllowList(h.dataDir, rec.id).catch(() => ['?'])) === JSON.stringify(listed);
    },
    CONVERGE_MS,
  );
  return listed;
}

const OPERATIONS: Record<string, Operation> = {
  create: {
    setup: async () => undefined,
    act: (h) => survive(h.post('/v2/instances/', h.redisBody('x', { acls: LOCAL }))),
    async verify(h, _inst, answer) {
      const rec = await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      if (answer) expect(answer.body.data.id).toBe(rec.id);
      expect((await aclsOf(h, 'x')).map((a) => a.cidr_mask)).toEqual(['127.0.0.1']);
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');
    },
  },
  resize: {
    async setup(h) {
      const inst = await h.createRedis('x', { acls: LOCAL });
      const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
      await c.set('kept', 'across the resize');
      c.destroy();
      return inst;
    },
    act: (h) => survive(h.post('/v2/redis/x/resize/', { new_plan: 1000 })),
    async verify(h, inst) {
      const rec = await h.waitFor('x', (r) => r?.state === 'ACTIVE' && r.plan === 1000, CONVERGE_MS);
      const c = await connectRedis(portOf(rec.public_connect_string), rec.password);
      try {
        expect((await c.configGet('maxmemory')).maxmemory).toBe(String(1000 * 1024 * 1024));
        expect(await c.get('kept')).toBe('across the resize');
      } finally {
        c.destroy();
      }
      for (const role of ['primary', 'replica'] as const) expect(engineSetting(h.dataDir, inst!.id, role, 'maxmemory')).toBe('1000mb');
    },
  },
  rename: {
    setup: (h) => h.createRedis('x', { acls: LOCAL }),
    act: (h) => survive(h.post('/v2/instances/x/rename/', { name: 'y' })),
    async verify(h, inst) {
      const rec = await h.waitFor('y', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      expect(rec.id).toBe(inst!.id);
      expect((await h.get('/v2/instances/x/')).status).toBe(404);
      expect((await aclsOf(h, 'y')).map((a) => a.cidr_mask)).toEqual(['127.0.0.1']);
      expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');
    },
  },
  delete: {
    setup: (h) => h.createRedis('x', { acls: LOCAL }),
    act: (h) => survive(h.delete('/v2/instances/x/')),
    async verify(h, inst) {
      await h.waitFor('x', (r) => r === undefined, CONVERGE_MS);
      for (const cs of [inst!.public_connect_string, inst!.servicenet_connect_string]) expect(await tcpAccepts(portOf(cs))).toBe(false);
    },
  },
  'acl-add': {
    setup: (h) => h.createRedis('x'),
    act: (h) => survive(h.post('/v2/instances/x/acls/', LOCAL[0])),
    async verify(h, inst, answer, rolledBack) {
      await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      const listed = await edgeFollowsApi(h, inst!);
      // an answered add is never lost; an unanswered one may or may not have been recorded,
      // but never half: killed inside its transaction, nothing of it is left
      if (answer) expect(answer.status).toBe(200);
      if (answer) expect(listed).toEqual(['127.0.0.1']);
      if (rolledBack) expect(listed).toEqual([]);
      expect(await pingOutcome(portOf(inst!.public_connect_string), inst!.password)).toBe(listed.length > 0 ? 'PONG' : 'refused');
    },
  },
  'acl-delete': {
    setup: (h) => h.createRedis('x', { acls: LOCAL }),
    act: async (h) => survive(h.delete(`/v2/instances/x/acls/${(await aclsOf(h, 'x'))[0]._id.$oid}/`)),
    async verify(h, inst, answer, rolledBack) {
      await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      const listed = await edgeFollowsApi(h, inst!);
      if (answer) expect(answer.status).toBe(200);
      if (answer) expect(listed).toEqual([]);
      if (rolledBack) expect(listed).toEqual(['127.0.0.1']);
      expect(await pingOutcome(portOf(inst!.public_connect_string), inst!.password)).toBe(listed.length > 0 ? 'PONG' : 'refused');
    },
  },
  // A Redis user is applied on the primary, then the replica, then written into the store's
  // history: killed between, the restarted hangar applies it on both.
  'redis-user': {
    setup: (h) => h.createRedis('x', { acls: LOCAL }),
    act: (h) =>
      survive(
        h.post('/v2/redis/x/users/', {
          username: 'app',
          password: 'app-password-1',
          keys: ['app:*'],
          commands: ['+@read', '+@write', '-@dangerous', '+@connection'],
        }),
      ),
    async verify(h, inst) {
      await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      for (const role of ['primary', 'replica'] as const) {
        const port = role === 'primary' ? portOf(inst!.public_connect_string) : enginePort(h.dataDir, inst!.id, 'replica');
        await settled(async () => {
          const c = await connectRedisAs(port, 'app', 'app-password-1');
          try {
            expect(await c.get('app:1')).toBeNull();
            await expect(c.get('other:1')).rejects.toThrow(/NOPERM/);
          } finally {
            c.destroy();
          }
        });
        expect(engineSetting(h.dataDir, inst!.id, role, 'user app')).toMatch(/^"reset" "on" "#[0-9a-f]{64}" "~app:\*"/);
      }
    },
  },
};

/** Every backup of the instance once none is PENDING or RUNNING (each COMPLETED or FAILED, never stuck). */
async function settledBackups(h: HangarProcess, name: string): Promise<any[]> {
  let list: any[] = [];
  await eventually(
    `the backups of ${name} are COMPLETED or FAILED`,
    async () => {
      list = (await h.get(`/v2/instances/${name}/backups/`)).body.data ?? [];
      return list.every((b) => b.state === 'COMPLETED' || b.state === 'FAILED');
    },
    CONVERGE_MS,
  );
  return list;
}

/** Files of the backup directory (the default one, in the data dir). */
function backupFiles(dataDir: string): string[] {
  const dir = join(dataDir, 'backups');
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

OPERATIONS.backup = {
  async setup(h) {
    const inst = await h.createRedis('x', { acls: LOCAL });
    const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
    await c.set('kept', 'in the backup');
    c.destroy();
    return inst;
  },
  act: (h) => survive(h.post('/v2/instances/x/backups/')),
  async verify(h, inst, answer) {
    await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
    const list = await settledBackups(h, 'x');
    if (answer) expect(list.map((b) => b.id)).toContain(answer.body.data.id);
    // nothing half-written: an object for each COMPLETED backup, none for a FAILED one, no partial file
    const files = backupFiles(h.dataDir);
    expect(files.filter((f) => f.endsWith('.partial'))).toEqual([]);
    for (const b of list)
      expect(
        files.some((f) => f.includes(b.id)),
        `${b.id} ${b.state} ${b.state_reason}`,
      ).toBe(b.state === 'COMPLETED');
    for (const b of list.filter((x) => x.state === 'FAILED')) expect(b.state_reason).toMatch(/hangar stopped while the backup ran/);
    // each backup's operation (of its id) tells the same story: they are written together
    for (const b of list) {
      expect((await h.get(`/v2/operations/${b.id}/`)).body.data, b.id).toMatchObject({
        kind: 'backup',
        state: b.state === 'COMPLETED' ? 'SUCCEEDED' : 'FAILED',
      });
    }
    expect(await pingOutcome(portOf(inst!.public_connect_string), inst!.password)).toBe('PONG');
    // and backups work again
    const again = await h.post('/v2/instances/x/backups/');
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await settledBackups(h, 'x')).find((b) => b.id === again.body.data.id).state).toBe('COMPLETED');
  },
};

OPERATIONS.restore = {
  async setup(h) {
    const inst = await h.createRedis('x', { acls: LOCAL });
    const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
    await c.set('kept', 'in the backup');
    const taken = await h.post('/v2/instances/x/backups/');
    expect((await settledBackups(h, 'x')).find((b) => b.id === taken.body.data.id).state).toBe('COMPLETED');
    await c.set('kept', 'written after the backup');
    c.destroy();
    return inst;
  },
  act: async (h) => survive(h.post('/v2/instances/x/restore/', { backup_id: (await h.get('/v2/instances/x/backups/')).body.data[0].id })),
  async verify(h, _inst) {
    const rec = await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
    const restores = (await h.get('/v2/instances/x/restores/')).body.data;
    expect(restores.map((r: any) => r.state)).toEqual(['COMPLETED']);
    // its operation (of its id) SUCCEEDS too, whichever pass finished the restore
    await eventually(
      'the restore operation to succeed',
      async () => (await h.get(`/v2/operations/${restores[0].id}/`)).body.data.state === 'SUCCEEDED',
      CONVERGE_MS,
    );
    await eventually(
      'the instance answers',
      async () => (await pingOutcome(portOf(rec.public_connect_string), rec.password)) === 'PONG',
      10_000,
    );
    const c = await connectRedis(portOf(rec.public_connect_string), rec.password);
    try {
      expect(await c.get('kept')).toBe('in the backup');
    } finally {
      c.destroy();
    }
    expect((await h.get('/v2/redis/x/connectedSlaves/')).body.data).toBe(1);
  },
};

/** An engine killed: hangar restarts it (and dies at the restart). */
function healOf(role: 'primary' | 'replica'): Operation {
  return {
    async setup(h) {
      const inst = await h.createRedis('x', { acls: LOCAL });
      const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
      await c.set('kept', `across a kill of the ${role}`);
      c.destroy();
      return inst;
    },
    async act(h, inst) {
      process.kill(enginePid(h.dataDir, inst!.id, role), 'SIGKILL');
      return undefined;
    },
    async verify(h, inst) {
      const rec = await h.waitFor('x', (r) => r?.state === 'ACTIVE', CONVERGE_MS);
      await eventually(
        'the instance answers',
        async () => (await pingOutcome(portOf(rec.public_connect_string), rec.password)) === 'PONG',
        10_000,
      );
      const c = await connectRedis(portOf(inst!.public_connect_string), inst!.password);
      try {
        expect(await c.get('kept')).toBe(`across a kill of the ${role}`);
      } finally {
        c.destroy();
      }
    },
  };
}
OPERATIONS['heal-primary'] = healOf('primary');
OPERATIONS['heal-replica'] = healOf('replica');

/** A switch from Redis to Valkey: the replica is restarted on valkey-server, then the primary. */
OPERATIONS['engine-switch'] = {
  async setup(h) {
    const inst = await h.createRedis('x', { acls: LOCAL });
    const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
    await c.set('kept', 'across the switch');
    c.destroy();
    return inst;
  },
  act: (h) => survive(h.post('/v2/redis/x/engine/', { engine: 'valkey', version: engineVersion('valkey') })),
  async verify(h, inst, answer) {
    const rec = await h.waitFor('x', (r) => r?.state === 'ACTIVE' && r.engine === 'valkey', CONVERGE_MS);
    expect(rec).toMatchObject({ version: engineVersion('valkey'), connect_string: inst!.connect_string, password: inst!.password });
    // the engines (not what they fork: an AOF rewrite) run valkey-server, and nothing of Redis is left
    const all = processesUnder(join(h.dataDir, 'instances', inst!.id));
    const roots = all.filter((p) => !all.some((q) => q.pid === p.ppid));
    expect(roots.map((p) => p.cmdline.split(' ')[0]!.split('/').at(-1))).toEqual(['valkey-server', 'valkey-server']);
    expect(all.filter((p) => p.program.split('/').at(-1)!.startsWith('redis-'))).toEqual([]);
    await eventually(
      'the instance answers',
      async () => (await pingOutcome(portOf(rec.public_connect_string), rec.password)) === 'PONG',
      10_000,
    );
    const c = await connectRedis(portOf(rec.public_connect_string), rec.password);
    try {
      expect(await c.get('kept')).toBe('across the switch');
    } finally {
      c.destroy();
    }
    // its operation SUCCEEDS, whichever pass finished the switch
    const id = answer?.headers?.get('x-operation-id') ?? undefined;
    const ops = (await h.get('/v2/operations/?instance=x&kind=engine.switch')).body.data;
    expect(ops.map((o: any) => o.id)).toEqual(id ? [id] : [expect.any(String)]);
    await eventually(
      'the switch operation to succeed',
      async () => (await h.get(`/v2/operations/${ops[0].id}/`)).body.data.state === 'SUCCEEDED',
      CONVERGE_MS,
    );
  },
};

/**
 * Every step of every operation. `cleanSetup`: the step is also reached while the setup builds
 * the instance, so a hangar without the fault sets up and the faulty one starts afterwards.
 */
const CASES: { op: string; step: string; cleanSetup?: boolean }[] = [
  { op: 'create', step: 'create:recorded' },
  { op: 'create', step: 'create:building' },
  { op: 'create', step: 'ensure:access-applied' },
  { op: 'create', step: 'create:primary-started' },
  { op: 'create', step: 'create:replica-started' },
  { op: 'create', step: 'create:edge-listening' },
  { op: 'resize', step: 'resize:recorded' },
  { op: 'resize', step: 'resize:primary-set' },
  { op: 'resize', step: 'resize:replica-set' },
  { op: 'rename', step: 'rename:recorded' },
  { op: 'delete', step: 'delete:recorded' },
  { op: 'delete', step: 'delete:start' },
  { op: 'delete', step: 'delete:engines-stopped' },
  { op: 'delete', step: 'delete:edge-removed' },
  { op: 'delete', step: 'delete:data-removed' },
  { op: 'delete', step: 'delete:removed' },
  { op: 'acl-add', step: 'acl-add:inserted' },
  { op: 'acl-add', step: 'acl-add:recorded' },
  { op: 'acl-add', step: 'ensure:access-applied', cleanSetup: true },
  { op: 'acl-delete', step: 'acl-delete:marked' },
  { op: 'acl-delete', step: 'acl-delete:recorded' },
  { op: 'acl-delete', step: 'ensure:access-applied', cleanSetup: true },
  { op: 'acl-delete', step: 'ensure:acls-purged' },
  { op: 'redis-user', step: 'access:primary-applied' },
  { op: 'redis-user', step: 'access:replica-applied' },
  { op: 'backup', step: 'backup:recorded' },
  { op: 'backup', step: 'backup:snapshot-taken' },
  { op: 'backup', step: 'backup:stored' },
  { op: 'restore', step: 'restore:recorded' },
  { op: 'restore', step: 'restore:staged' },
  { op: 'restore', step: 'restore:engines-stopped' },
  { op: 'restore', step: 'restore:data-swapped' },
  { op: 'engine-switch', step: 'engine:recorded' },
  { op: 'engine-switch', step: 'engine:replica-switched' },
  { op: 'engine-switch', step: 'engine:replica-promoted' },
  { op: 'engine-switch', step: 'engine:roles-switched' },
  { op: 'engine-switch', step: 'engine:primary-switched' },
  { op: 'heal-primary', step: 'ensure:primary-restarted' },
  { op: 'heal-replica', step: 'ensure:replica-restarted' },
];

/** Retries `check` (whose expectations throw) until it passes or `ms` have gone by. */
async function settled(check: () => Promise<void>, ms = CONVERGE_MS): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('the step list', () => {
  it("covers every step the local runtime's work names (MongoDB user steps run on the emulated runtime)", () => {
    const covered = new Set([...CASES.map((c) => c.step), ...USER_STEPS]);
    expect(literalStepNames().filter((s) => !covered.has(s))).toEqual([]);
    expect(COMPUTED_STEPS.filter((s) => !covered.has(s))).toEqual([]);
  });
});

/** The cases that can run here: a switch to Valkey needs valkey-server (in CI, a missing one fails the run). */
const RUNNABLE =
  CASES.some((c) => c.op === 'engine-switch') && !enginesAvailable('valkey') ? CASES.filter((c) => c.op !== 'engine-switch') : CASES;

describe.runIf(enginesAvailable()).concurrent('hangar killed at every step, on the local runtime', () => {
  it.each(RUNNABLE)(
    '$op killed at $step converges after a restart, and the API lists exactly what runs',
    async ({ op, step, cleanSetup }) => {
      const operation = OPERATIONS[op]!;
      const fault = { HANGAR_TEST_DIE_AT: step };
      const h = await HangarProcess.start({ serveEnv: cleanSetup ? {} : fault });
      try {
        const inst = await operation.setup(h);
        if (cleanSetup) {
          expect((await h.stop()).code).toBe(0);
          await h.serve(fault);
          await h.waitSupervising();
        }
        const answer = await operation.act(h, inst);
        expect(await h.waitExit(20_000), `hangar should die at ${step}`).toEqual({ code: null, signal: 'SIGKILL' });
        await h.serve();
        await operation.verify(h, inst, answer, IN_TRANSACTION.has(step));
        await settled(() => expectApiMatchesWhatRuns(h));
      } finally {
        await h.destroy();
      }
    },
    150_000,
  );
});
