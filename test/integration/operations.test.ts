import { type AddressInfo, type Socket, createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type Client, type Reply, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// Operations on the emulated runtime (on SQLite, and on PostgreSQL when HANGAR_TEST_DATABASE_URL
// is set): every change answers X-Operation-Id, the operation follows the work to its end, can be
// listed, read and (where safe) cancelled, fails at its deadline, and survives a restart.

const WAIT = { timeout: 15_000, interval: 25 };

/** The operation a change answered, from its headers, checked as the API documents them. */
function operationOf(res: Reply): string {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.headers.get('x-operation-id');
  expect(id).toMatch(/^[0-9a-f]{24}$/);
  expect(res.headers.get('location')).toBe(`/v2/operations/${id}/`);
  return id!;
}

async function operation(who: Client, id: string): Promise<any> {
  const res = await who.get(`/v2/operations/${id}/`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** Waits until the operation is finished; returns it. */
async function finished(who: Client, id: string): Promise<any> {
  let op: any;
  await expect
    .poll(async () => {
      op = await operation(who, id);
      return op.state;
    }, WAIT)
    .toMatch(/^(SUCCEEDED|FAILED|CANCELLED)$/);
  return op;
}

describe.each(DIALECTS)('operations (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect });
    alice = await th.signup();
    bob = await th.signup();
  });
  afterAll(() => th?.close());

  describe('every asynchronous change is an operation', () => {
    it('create, ACL add and delete, resize, rename and delete: each answers X-Operation-Id and Location, its body as before, and SUCCEEDS', async () => {
      const created = await alice.post('/v2/instances/', redisBody('ops-r'));
      expect(created.body.data).toMatchObject({ name: 'ops-r', state: 'REQUESTED', instance_service: 'redis' });
      const createOp = await finished(alice, operationOf(created));
      const inst = await alice.waitFor('ops-r', (r) => r?.state === 'ACTIVE');
      expect(createOp).toMatchObject({
        kind: 'create',
        state: 'SUCCEEDED',
        instance_id: inst.id,
        instance_name: 'ops-r',
        progress: 100,
        error: null,
        requested_by: { login: alice.login, credential: 'token', id: expect.stringMatching(/^[0-9a-f]{24}$/) },
        request_id: created.headers.get('x-request-id'),
        detail: { service: 'redis', type: 'redis_ha_instance', plan: 500, version: '7.0.15', zone: 'US-Dallas' },
        cancellable: false,
      });
      const names = createOp.steps.map((s: any) => s.name);
      expect(names[0]).toBe('recorded');
      expect(names).toContain('started');
      // the steps the reconciler's pass went through, with their times, in order
      expect(names).toContain('create:building');
      expect(names.at(-1)).toBe('succeeded');
      const times = createOp.steps.map((s: any) => s.at.$date);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(createOp.date_finished.$date).toBeGreaterThanOrEqual(createOp.date_created.$date);

      const aclAdd = await alice.post('/v2/instances/ops-r/acls/', { cidr_mask: '198.51.100.7', description: 'ci' });
      expect(aclAdd.body.data).toMatch(/^[0-9a-f]{24}$/);
      expect(await finished(alice, operationOf(aclAdd))).toMatchObject({
        kind: 'acl.add',
        state: 'SUCCEEDED',
        detail: { acl_id: aclAdd.body.data, cidr_mask: '198.51.100.7' },
      });

      const aclDelete = await alice.delete(`/v2/instances/ops-r/acls/${aclAdd.body.data}/`);
      expect(aclDelete.body).toEqual({ data: {} });
      expect(await finished(alice, operationOf(aclDelete))).toMatchObject({
        kind: 'acl.delete',
        state: 'SUCCEEDED',
        detail: { acl_id: aclAdd.body.data },
      });

      const resize = await alice.post('/v2/redis/ops-r/resize/', { new_plan: 1000 });
      expect(resize.body.data).toBe('Resizing of instance "ops-r" from 500 MB to 1000 MB has started');
      expect(await finished(alice, operationOf(resize))).toMatchObject({
        kind: 'resize',
        state: 'SUCCEEDED',
        detail: { from_plan: 500, to_plan: 1000, engine: 'redis' },
      });
      expect((await alice.get('/v2/instances/ops-r/')).body.data.plan).toBe(1000);

      const rename = await alice.post('/v2/instances/ops-r/rename/', { name: 'ops-r2' });
      expect(rename.body.data).toBe('Instance "ops-r" renamed to "ops-r2"');
      expect(await finished(alice, operationOf(rename))).toMatchObject({
        kind: 'rename',
        state: 'SUCCEEDED',
        detail: { from: 'ops-r', to: 'ops-r2' },
      });

      const del = await alice.delete('/v2/instances/ops-r2/');
      expect(del.body.data).toBe('Instance "ops-r2" is being deleted');
      expect(await finished(alice, operationOf(del))).toMatchObject({ kind: 'delete', state: 'SUCCEEDED', instance_id: inst.id });
      expect((await alice.get('/v2/instances/ops-r2/')).status).toBe(404);
    });

    it('MongoDB user create, update and delete are operations too', async () => {
      const m = await alice.ready(mongoBody('ops-m'));
      const users = `/v2/mongodb/${m.id}/databases/app/users`;
      const add = await alice.post(users, { username: 'u1', password: 'password-1', roles: [{ role: 'read', db: 'app' }] });
      expect(await finished(alice, operationOf(add))).toMatchObject({
        kind: 'user.create',
        state: 'SUCCEEDED',
        detail: { database: 'app', username: 'u1' },
      });
      expect(th.mongodb.authenticate(m.id, 'app', 'u1', 'password-1')).toBe(true);
      const change = await alice.patch(`${users}/u1`, { password: 'password-2' });
      expect(change.body).toEqual({ message: 'User "u1" on database "app" updated' });
      expect(await finished(alice, operationOf(change))).toMatchObject({ kind: 'user.update', state: 'SUCCEEDED' });
      const drop = await alice.delete(`${users}/u1`);
      expect(await finished(alice, operationOf(drop))).toMatchObject({ kind: 'user.delete', state: 'SUCCEEDED' });
    });

    it('a repeat with the same Idempotency-Key names the same operation and starts none', async () => {
      const headers = { 'idempotency-key': 'create-once' };
      const first = await alice.post('/v2/instances/', redisBody('idem-op'), { headers });
      const again = await alice.post('/v2/instances/', redisBody('idem-op'), { headers });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(operationOf(again)).toBe(operationOf(first));
      expect((await alice.get('/v2/operations/?instance=idem-op')).body.data).toHaveLength(1);
    });

    it('a refused change starts no operation and answers no X-Operation-Id', async () => {
      const before = (await alice.get('/v2/operations/?limit=200')).body.data.length;
      const res = await alice.post('/v2/instances/', redisBody('bad', { plan: 750 }));
      expect(res.status).toBe(400);
      expect(res.headers.get('x-operation-id')).toBeNull();
      expect((await alice.post('/v2/redis/nope/resize/', { new_plan: 1000 })).headers.get('x-operation-id')).toBeNull();
      expect((await alice.get('/v2/operations/?limit=200')).body.data.length).toBe(before);
    });

    it('a build that fails makes its create FAILED with the reason', async () => {
      const { TerminalError } = await import('../../src/domain/errors.js');
      const restore = th.runtime.failWith(new TerminalError('no such engine version here'));
      try {
        const op = await finished(alice, operationOf(await alice.post('/v2/instances/', redisBody('ops-fail'))));
        expect(op).toMatchObject({ state: 'FAILED', error: { code: 'INSTANCE_FAILED', message: 'no such engine version here' } });
      } finally {
        restore();
      }
      await alice.delete('/v2/instances/ops-fail/');
    });

    it('an instance deleted while a change waits makes that change CANCELLED', async () => {
      await alice.ready(redisBody('ops-gone'));
      const release = th.hold();
      let acl: string;
      try {
        acl = operationOf(await alice.post('/v2/instances/ops-gone/acls/', { cidr_mask: '198.51.100.8', description: 'x' }));
        operationOf(await alice.delete('/v2/instances/ops-gone/'));
      } finally {
        release();
      }
      const op = await finished(alice, acl);
      expect(op.state).toBe('CANCELLED');
      expect(op.steps.at(-1).message).toContain('was deleted before the acl.add finished');
    });
  });

  describe('GET /v2/operations/', () => {
    let ids: string[];
    beforeAll(async () => {
      const a = await alice.ready(redisBody('list-a'));
      await alice.ready(redisBody('list-b'));
      await alice.post('/v2/instances/list-a/acls/', { cidr_mask: '198.51.100.9', description: 'x' });
      ids = (await alice.get('/v2/operations/?instance=list-a')).body.data.map((o: any) => o.id);
      expect(a.id).toMatch(/^[0-9a-f]{24}$/);
    });

    it('200: newest first, filtered by instance, state and kind', async () => {
      const byInstance = (await alice.get('/v2/operations/?instance=list-a')).body;
      expect(byInstance.data.map((o: any) => [o.kind, o.instance_name])).toEqual([
        ['acl.add', 'list-a'],
        ['create', 'list-a'],
      ]);
      expect(byInstance.next_cursor).toBeNull();
      const creates = (await alice.get('/v2/operations/?kind=create&instance=list-b')).body.data;
      expect(creates.map((o: any) => o.kind)).toEqual(['create']);
      const both = (await alice.get('/v2/operations/?kind=create,acl.add&state=SUCCEEDED&instance=list-a')).body.data;
      expect(both).toHaveLength(2);
      expect((await alice.get('/v2/operations/?state=PENDING,RUNNING&instance=list-a')).body.data).toEqual([]);
      const byId = (await alice.get(`/v2/operations/?instance=${(await alice.get('/v2/instances/list-a/')).body.data.id}`)).body.data;
      expect(byId.map((o: any) => o.id)).toEqual(ids);
    });

    it('200: cursor pagination walks every operation once', async () => {
      const all = (await alice.get('/v2/operations/?limit=200')).body.data.map((o: any) => o.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Reply = await alice.get(`/v2/operations/?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        expect(page.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.data.map((o: any) => o.id));
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual(all);
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('200: another account sees none of them; 404 for one of them, as for none', async () => {
      expect((await bob.get('/v2/operations/?instance=list-a')).body.data).toEqual([]);
      expect((await bob.get('/v2/operations/')).body.data.every((o: any) => o.account_id !== undefined && !ids.includes(o.id))).toBe(true);
      const other = await bob.get(`/v2/operations/${ids[0]}/`);
      const none = await bob.get('/v2/operations/0123456789abcdef01234567/');
      expect(other.status).toBe(404);
      expect(other.body.code).toBe('OPERATION_NOT_FOUND');
      expect(none.body.code).toBe('OPERATION_NOT_FOUND');
      expect((await bob.post(`/v2/operations/${ids[0]}/cancel`)).status).toBe(404);
    });

    it('400: an unknown state, a malformed kind, a foreign cursor, a limit out of range', async () => {
      expect((await alice.get('/v2/operations/?state=DONE')).body).toMatchObject({ code: 'INVALID_VALUE', field: 'state' });
      expect((await alice.get('/v2/operations/?kind=Create!')).body).toMatchObject({ code: 'INVALID_VALUE', field: 'kind' });
      expect((await alice.get('/v2/operations/?cursor=bm9wZQ')).body).toMatchObject({ code: 'INVALID_VALUE', field: 'cursor' });
      expect((await alice.get('/v2/operations/?limit=-1')).status).toBe(400);
      expect((await alice.get('/v2/operations/?color=red')).status).toBe(400);
    });

    it('401 without credentials', async () => {
      expect((await th.anonymous().get('/v2/operations/')).status).toBe(401);
    });
  });

  describe('POST /v2/operations/<id>/cancel', () => {
    it('200: a create whose build has not started is CANCELLED and its instance removed', async () => {
      const release = th.hold();
      let id: string;
      try {
        // Nothing runs passes while the claim is held: the create stays PENDING.
        await th.hangar.reconciler.stop();
        id = operationOf(await alice.post('/v2/instances/', redisBody('to-cancel')));
        expect((await operation(alice, id)).state).toBe('PENDING');
        const res = await alice.post(`/v2/operations/${id}/cancel`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data).toMatchObject({ id, state: 'CANCELLED' });
        expect(res.body.data.steps.at(-1).message).toContain(`cancelled by ${alice.login}`);
      } finally {
        release();
        await th.hangar.reconciler.start();
      }
      await alice.waitGone('to-cancel');
      expect(await th.runtime.listInstanceIds()).not.toContain((await operation(alice, id)).instance_id);
      // finished: a second cancel says so
      const again = await alice.post(`/v2/operations/${id}/cancel`);
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'OPERATION_NOT_CANCELLABLE', message: expect.stringContaining('CANCELLED already') });
    });

    it('409: a create whose build has started, a resize, a delete: each says why', async () => {
      const release = th.hold();
      try {
        const create = operationOf(await alice.post('/v2/instances/', redisBody('building')));
        await expect.poll(async () => (await operation(alice, create)).state, WAIT).toBe('RUNNING');
        const res = await alice.post(`/v2/operations/${create}/cancel`);
        expect(res.status).toBe(409);
        expect(res.body.message).toContain('its build has started; delete the instance instead');
      } finally {
        release();
      }
      await alice.waitFor('building', (r) => r?.state === 'ACTIVE');
      const hold = th.hold();
      try {
        const resize = operationOf(await alice.post('/v2/redis/building/resize/', { new_plan: 1000 }));
        expect((await alice.post(`/v2/operations/${resize}/cancel`)).body).toMatchObject({
          code: 'OPERATION_NOT_CANCELLABLE',
          message: expect.stringContaining('a resize cannot be cancelled'),
        });
      } finally {
        hold();
      }
    });

    it('200: a backup started through the operations API is cancelled, and its runner is told at its next step', async () => {
      const inst = await alice.ready(redisBody('backed-up'));
      const account = (await alice.get('/v2/whoami/')).body.data.account_id;
      const ops = th.hangar.operations;
      const op = await ops.start({
        kind: 'backup',
        instance: { id: inst.id, name: inst.name },
        account,
        requestedBy: { login: alice.login, credential: 'token', id: null },
        requestId: 'r-1',
      });
      expect(op).toMatchObject({ state: 'PENDING', cancellable: true, progress: 0 });
      expect((await ops.listOpen({ kind: 'backup', instanceId: inst.id })).map((o) => o.id)).toEqual([op.id]);
      expect(await ops.step(op.id, { name: 'dumping', progress: 40 })).toBe(true);
      const running = await operation(alice, op.id);
      expect(running).toMatchObject({ kind: 'backup', state: 'RUNNING', progress: 40, request_id: 'r-1' });
      expect(running.steps.map((s: any) => s.name)).toEqual(['recorded', 'dumping']);
      const res = await alice.post(`/v2/operations/${op.id}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body.data.state).toBe('CANCELLED');
      expect(await ops.step(op.id, 'uploading')).toBe(false);
      expect(await ops.succeed(op.id)).toBe(false);
      expect((await operation(alice, op.id)).state).toBe('CANCELLED');
    });

    it('409: a restore is not cancellable', async () => {
      const inst = await alice.ready(redisBody('restored'));
      const account = (await alice.get('/v2/whoami/')).body.data.account_id;
      const op = await th.hangar.operations.start({ kind: 'restore', instance: { id: inst.id, name: inst.name }, account });
      const res = await alice.post(`/v2/operations/${op.id}/cancel`);
      expect(res.body).toMatchObject({ code: 'OPERATION_NOT_CANCELLABLE', message: expect.stringContaining('half restored') });
      expect(await th.hangar.operations.succeed(op.id, { detail: { size_bytes: 42 } })).toBe(true);
      expect(await operation(alice, op.id)).toMatchObject({ state: 'SUCCEEDED', progress: 100, detail: { size_bytes: 42 } });
    });
  });
});

describe.each(DIALECTS)('operation deadlines (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  const holds: (() => void)[] = [];

  beforeAll(async () => {
    th = await startTestHangar({ dialect, env: { HANGAR_OPERATION_DEADLINES: 'create=1,resize=1,acl=1' } });
    alice = await th.signup();
  });
  afterEach(() => {
    for (const r of holds.splice(0)) r();
  });
  afterAll(() => th?.close());

  it('a create stuck in its build is FAILED at its deadline, the instance FAILED; what the build made is removed once it moves', async () => {
    holds.push(th.hold());
    const id = operationOf(await alice.post('/v2/instances/', redisBody('stuck')));
    const op = await finished(alice, id);
    expect(op).toMatchObject({
      state: 'FAILED',
      error: { code: 'DEADLINE_EXCEEDED', message: 'create not finished within its deadline of 1 s; the instance is FAILED (delete it)' },
    });
    const inst = await alice.waitFor('stuck', (r) => r?.state === 'FAILED');
    expect(inst.state_reason).toBe('not ready within the create deadline of 1 s');
    // The stuck pass goes on once released and builds, but cannot make it ACTIVE (its spec
    // version moved); the pass after it (the one settle waits for) removes what was built.
    const settled = th.hangar.reconciler.settle(inst.id, 10_000);
    for (const r of holds.splice(0)) r();
    await settled;
    expect(await th.runtime.listInstanceIds()).not.toContain(inst.id);
    expect((await alice.get('/v2/instances/stuck/')).body.data.state).toBe('FAILED');
    expect(await finished(alice, operationOf(await alice.delete('/v2/instances/stuck/')))).toMatchObject({ state: 'SUCCEEDED' });
  });

  it('a resize stuck on its engines is FAILED; the instance is DEGRADED with the reason, then ACTIVE on the new plan once it moves', async () => {
    const th2 = th;
    await alice.ready(redisBody('slow'));
    holds.push(th2.hold());
    const op = await finished(alice, operationOf(await alice.post('/v2/redis/slow/resize/', { new_plan: 1000 })));
    expect(op.error).toEqual({
      code: 'DEADLINE_EXCEEDED',
      message: 'resize not finished within its deadline of 1 s; the instance is DEGRADED until hangar has carried the change out',
    });
    const degraded = await alice.waitFor('slow', (r) => r?.state === 'DEGRADED');
    expect(degraded.state_reason).toBe('resize to 1000 MB not done within 1 s; hangar keeps trying');
    for (const r of holds.splice(0)) r();
    await alice.waitFor('slow', (r) => r?.state === 'ACTIVE' && r.plan === 1000);
  });

  it('an ACL change that is not applied in time is FAILED; the ACL stays recorded and is applied later', async () => {
    await alice.ready(redisBody('acl-slow'));
    holds.push(th.hold());
    const res = await alice.post('/v2/instances/acl-slow/acls/', { cidr_mask: '198.51.100.10', description: 'late' });
    const op = await finished(alice, operationOf(res));
    expect(op).toMatchObject({ state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED' } });
    expect((await alice.get('/v2/instances/acl-slow/acls/')).body.data.map((a: any) => a.cidr_mask)).toEqual(['198.51.100.10']);
    for (const r of holds.splice(0)) r();
    await alice.waitFor('acl-slow', (r) => r?.state === 'ACTIVE');
  });
});

/**
 * A stand-in for an object storage that never answers: it takes requests and says nothing, so
 * that a backup's upload to it hangs until the backup is stopped. It tells how many uploads
 * (PUT requests) it was sent, and how many of their connections are still open: a stopped
 * upload closes its own.
 */
async function silentStorage(): Promise<{
  env: Record<string, string>;
  uploads: () => number;
  open: () => number;
  close: () => Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const puts = new Set<Socket>();
  let uploads = 0;
  const server = createServer((socket) => {
    sockets.add(socket);
    let head = '';
    socket.on('data', (chunk) => {
      if (head.includes('\n')) return;
      head += chunk.toString('latin1');
      if (head.startsWith('PUT ')) {
        uploads++;
        puts.add(socket);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      puts.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    env: {
      HANGAR_BACKUP_S3_BUCKET: 'silent',
      HANGAR_BACKUP_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      HANGAR_BACKUP_S3_ACCESS_KEY_ID: 'key',
      HANGAR_BACKUP_S3_SECRET_ACCESS_KEY: 'secret',
    },
    uploads: () => uploads,
    open: () => puts.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.each(DIALECTS)('backups as operations, on a storage that never answers (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let storage: Awaited<ReturnType<typeof silentStorage>>;

  beforeAll(async () => {
    storage = await silentStorage();
    th = await startTestHangar({ dialect, env: storage.env });
    alice = await th.signup();
  });
  afterAll(async () => {
    await th?.close();
    await storage?.close();
  });

  /** Takes a backup of `name` and waits until its upload hangs on the storage; returns its operation (of its id). */
  async function hangingBackup(name: string): Promise<string> {
    const before = storage.uploads();
    const res = await alice.post(`/v2/instances/${name}/backups/`);
    const id = operationOf(res);
    expect(id).toBe(res.body.data.id);
    await expect.poll(() => storage.uploads(), WAIT).toBeGreaterThan(before);
    await expect.poll(async () => (await operation(alice, id)).steps.at(-1).name, WAIT).toBe('storing');
    return id;
  }

  async function backupOf(name: string, id: string): Promise<any> {
    let b: any;
    await expect
      .poll(async () => {
        b = (await alice.get(`/v2/instances/${name}/backups/${id}/`)).body.data;
        return b.state;
      }, WAIT)
      .toMatch(/^(COMPLETED|FAILED)$/);
    return b;
  }

  it('a backup cancelled while its upload hangs stops at once: FAILED saying who cancelled it, its upload cut, nothing kept', async () => {
    await alice.ready(redisBody('cancelled'));
    const id = await hangingBackup('cancelled');
    expect(await operation(alice, id)).toMatchObject({
      kind: 'backup',
      state: 'RUNNING',
      progress: 50,
      cancellable: true,
      detail: { backup_id: id, scheduled: false },
    });
    const res = await alice.post(`/v2/operations/${id}/cancel`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.state).toBe('CANCELLED');
    const b = await backupOf('cancelled', id);
    expect(b).toMatchObject({
      state: 'FAILED',
      state_reason: `cancelled by ${alice.login}; nothing of it was kept`,
      size_bytes: null,
      sha256: null,
    });
    // the runner stopped: its upload to the storage is cut, long before the storage's own timeout
    await expect.poll(() => storage.open(), WAIT).toBe(0);
    const op = await operation(alice, id);
    expect(op).toMatchObject({ state: 'CANCELLED', error: null });
    expect(op.steps.map((s: any) => s.name)).toEqual(['recorded', 'started', 'snapshot', 'storing', 'cancelled']);
    // nothing of it holds the instance: another backup may be taken
    const next = await hangingBackup('cancelled');
    expect((await alice.post(`/v2/operations/${next}/cancel`)).status).toBe(200);
    expect((await backupOf('cancelled', next)).state).toBe('FAILED');
    expect((await alice.get('/v2/instances/cancelled/')).body.data.state).toBe('ACTIVE');
  });

  it('a backup whose upload never ends is FAILED at its deadline, and its runner stops', async () => {
    await alice.ready(redisBody('never-stored'));
    const id = await hangingBackup('never-stored');
    // its deadline comes while the upload hangs
    await th.hangar.store.db.updateTable('operations').set({ deadline_at: Date.now() }).where('id', '=', id).execute();
    const op = await finished(alice, id);
    expect(op).toMatchObject({
      kind: 'backup',
      state: 'FAILED',
      error: { code: 'DEADLINE_EXCEEDED', message: 'backup not finished within its deadline of 3600 s' },
    });
    const b = await backupOf('never-stored', id);
    expect(b).toMatchObject({ state: 'FAILED', state_reason: 'backup not finished within its deadline of 3600 s; nothing of it was kept' });
    await expect.poll(() => storage.open(), WAIT).toBe(0);
    expect((await operation(alice, id)).state).toBe('FAILED');
    expect((await alice.get('/v2/instances/never-stored/')).body.data.state).toBe('ACTIVE');
  });
});

describe.each(DIALECTS)('operations across a restart (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect });
    alice = await th.signup();
  });
  afterAll(() => th?.close());

  it('each kind of change, stopped in the middle, SUCCEEDS after hangar starts again', async () => {
    const m = await alice.ready(mongoBody('rs-m'));
    await alice.ready(redisBody('rs-resize'));
    await alice.ready(redisBody('rs-rename'));
    await alice.ready(redisBody('rs-delete'));
    const acl = (await alice.post('/v2/instances/rs-resize/acls/', { cidr_mask: '198.51.100.11', description: 'x' })).body.data;
    await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'keep', password: 'password-1', roles: [] });
    await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'drop', password: 'password-1', roles: [] });
    const users = `/v2/mongodb/${m.id}/databases/app/users`;
    th.hold();
    // ACL and user changes wait (2 s and 5 s at most) for a pass that does not come: send them at once
    const answers = await Promise.all([
      alice.post('/v2/instances/', redisBody('rs-create')),
      alice.post('/v2/redis/rs-resize/resize/', { new_plan: 1000 }),
      alice.post('/v2/instances/rs-rename/rename/', { name: 'rs-renamed' }),
      alice.delete('/v2/instances/rs-delete/'),
      alice.post('/v2/instances/rs-resize/acls/', { cidr_mask: '198.51.100.12', description: 'y' }),
      alice.delete(`/v2/instances/rs-resize/acls/${acl}/`),
      alice.post(users, { username: 'new', password: 'password-1', roles: [] }),
      alice.patch(`${users}/keep`, { password: 'password-2' }),
      alice.delete(`${users}/drop`),
    ]);
    const ids = answers.map(operationOf);
    const open = await Promise.all(ids.map((id) => operation(alice, id)));
    expect(open.map((o) => o.kind)).toEqual([
      'create',
      'resize',
      'rename',
      'delete',
      'acl.add',
      'acl.delete',
      'user.create',
      'user.update',
      'user.delete',
    ]);
    expect(open.every((o) => o.state === 'PENDING' || o.state === 'RUNNING')).toBe(true);
    // a new process: its runtime holds nothing
    await th.restart();
    for (const id of ids) expect(await finished(alice, id), id).toMatchObject({ state: 'SUCCEEDED' });
    expect((await alice.get('/v2/instances/rs-resize/')).body.data.plan).toBe(1000);
    expect((await alice.get('/v2/instances/rs-delete/')).status).toBe(404);
    expect(th.mongodb.authenticate(m.id, 'app', 'keep', 'password-2')).toBe(true);
  });
});

describe('operation retention', () => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ env: { HANGAR_OPERATION_RETENTION: '1' } });
    alice = await th.signup();
  });
  afterAll(() => th?.close());

  it('finished operations are pruned after HANGAR_OPERATION_RETENTION; open ones never are', async () => {
    const done = operationOf(await alice.post('/v2/instances/', redisBody('pruned')));
    await finished(alice, done);
    const account = (await alice.get('/v2/whoami/')).body.data.account_id;
    const open = await th.hangar.operations.start({ kind: 'backup', instance: null, account, deadlineSeconds: 3600 });
    await expect.poll(async () => (await alice.get(`/v2/operations/${done}/`)).status, WAIT).toBe(404);
    expect((await operation(alice, open.id)).state).toBe('PENDING');
  });
});
