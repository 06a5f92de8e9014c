import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarClient, type HangarEvent } from '../../src/client/index.js';
import { loadConfig } from '../../src/config.js';
import { startHangar, type Hangar } from '../../src/server.js';
import { eventsPrunedThrough, listEventsAfter } from '../../src/store/event-repository.js';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { SseReader, type Message } from '../helpers/sse.js';

// GET /v2/events/stream on a listening hangar (emulated runtime), read raw off the wire and
// through the typed client's iterator: what it sends, to whom, and resuming without loss.

const token = (a: Account) => (a.auth as { token: string }).token;
const open = (th: TestHangar, who: Account, query = '', headers: Record<string, string> = {}) =>
  SseReader.open(`${th.url}/v2/events/stream${query}`, { 'x-auth-token': token(who), ...headers });
const idsOf = (ms: Message[]) => ms.filter((m) => m.id !== undefined).map((m) => m.id!);
const succeeded =
  (name: string, kind = 'create') =>
  (ms: Message[]) =>
    ms.some((m) => m.event === 'operation.succeeded' && m.data.instance_name === name && m.data.data.kind === kind);

describe.each(DIALECTS)('GET /v2/events/stream (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect, listen: true });
    alice = await th.signup();
    bob = await th.signup();
  });
  afterAll(() => th?.close());

  it('200: streams the state changes and the operation of a create as they happen, in id order', async () => {
    const s = await open(th, alice);
    try {
      expect(s.status).toBe(200);
      expect(s.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(s.headers['cache-control']).toBe('no-store');
      expect(s.headers['x-request-id']).toBeDefined();
      const created = await alice.post('/v2/instances/', redisBody('live'));
      const opId = created.headers.get('x-operation-id');
      await s.until('the create to succeed', succeeded('live'));
      expect(s.text.startsWith('retry: 2000\n: connected\n\n')).toBe(true);
      const mine = s.events.filter((m) => m.data.instance_name === 'live');
      const ids = mine.map((m) => m.id!);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      const kinds = mine.map((m) => m.event);
      expect(kinds[0]).toBe('operation.created');
      expect(kinds).toContain('instance.created');
      expect(kinds.at(-1)).toBe('operation.succeeded');
      const states = mine.filter((m) => m.event === 'instance.state').map((m) => [m.data.data.from, m.data.data.to]);
      expect(states).toEqual([
        ['REQUESTED', 'BUILDING'],
        ['BUILDING', 'ACTIVE'],
      ]);
      for (const m of mine) {
        expect(m.data).toMatchObject({
          id: m.id,
          kind: m.event,
          instance_name: 'live',
          instance_id: created.body.data._id.$oid,
          created: expect.any(String),
          date_created: { $date: expect.any(Number) },
        });
        if (m.event!.startsWith('operation.'))
          expect(m.data).toMatchObject({ operation_id: opId, data: { id: opId, kind: 'create', last_event_id: m.id } });
      }
      expect(mine.at(-1)!.data.data).toMatchObject({ state: 'SUCCEEDED', progress: 100 });
    } finally {
      s.close();
    }
  });

  it('a pass shorter than its first write takes its operation from PENDING to SUCCEEDED in one write, its started step included', async () => {
    // The first write of a pass comes a quarter second in; on a busy machine no pass may be that
    // short. A hangar whose passes first write after a minute makes every pass of this test one
    // that ends before it: the rule is checked whatever the machine's load.
    const quiet = await startTestHangar({ dialect, listen: true, operationFirstFlushMs: 60_000 });
    try {
      const carol = await quiet.signup();
      await carol.ready(redisBody('one-write'));
      const s = await open(quiet, carol, '?instance=one-write&kinds=operation');
      try {
        const ops: string[] = [];
        for (let i = 0; i < 3; i++) {
          const add = await carol.post('/v2/instances/one-write/acls/', { cidr_mask: `198.51.100.${10 + i}`, description: 'one write' });
          ops.push(add.headers.get('x-operation-id')!);
        }
        const done = (ms: Message[]) => ops.every((id) => ms.some((m) => m.event === 'operation.succeeded' && m.data.operation_id === id));
        await s.until('the ACL adds to succeed', done);
        for (const id of ops) {
          const mine = s.events.filter((m) => m.data.operation_id === id);
          const op = mine.at(-1)!.data.data;
          expect(op.steps.map((st: any) => st.name).slice(0, 2)).toEqual(['recorded', 'started']);
          expect(op.steps.at(-1).name).toBe('succeeded');
          expect(op).toMatchObject({ state: 'SUCCEEDED', date_started: { $date: op.steps[1].at.$date } });
          // PENDING straight to SUCCEEDED: no RUNNING write between
          expect(mine.map((m) => m.event)).toEqual(['operation.created', 'operation.succeeded']);
        }
      } finally {
        s.close();
      }
    } finally {
      await quiet.close();
    }
  });

  it('200: an account sees its own events only; kinds and instance filter them', async () => {
    await alice.ready(redisBody('only-me'));
    const bobs = await open(th, bob);
    const ops = await open(th, alice, '?kinds=operation');
    const one = await open(th, alice, '?instance=only-me&kinds=instance.state,instance.renamed');
    try {
      expect(one.status).toBe(200);
      await alice.ready(redisBody('not-me'));
      await alice.post('/v2/redis/only-me/resize/', { new_plan: 1000 });
      await alice.post('/v2/redis/not-me/resize/', { new_plan: 1000 });
      await bob.ready(redisBody('bobs'));
      await bobs.until("bob's create", succeeded('bobs'));
      await ops.until("alice's second resize", succeeded('not-me', 'resize'));
      expect(bobs.events.every((m) => m.data.instance_name === 'bobs')).toBe(true);
      expect(ops.events.every((m) => m.event!.startsWith('operation.'))).toBe(true);
      await one.until('only-me ACTIVE on its new plan', (ms) =>
        ms.some((m) => m.event === 'instance.state' && m.data.data.to === 'ACTIVE' && m.data.data.plan === 1000),
      );
      expect(one.events.map((m) => [m.event, m.data.instance_name, m.data.data.to])).toEqual([
        ['instance.state', 'only-me', 'RESIZING'],
        ['instance.state', 'only-me', 'ACTIVE'],
      ]);
    } finally {
      for (const s of [bobs, ops, one]) s.close();
    }
  });

  it('200: a backup and a restore are streamed as their operations, with their steps and progress, and the instance RESTORING', async () => {
    await alice.ready(redisBody('backed'));
    const s = await open(th, alice, '?instance=backed');
    try {
      const backup = await alice.post('/v2/instances/backed/backups/');
      const backupId = backup.headers.get('x-operation-id')!;
      expect(backupId).toBe(backup.body.data.id);
      await s.until('the backup to succeed', succeeded('backed', 'backup'));
      const restore = await alice.post('/v2/instances/backed/restore/', { backup_id: backupId });
      expect(restore.status, JSON.stringify(restore.body)).toBe(200);
      const restoreId = restore.headers.get('x-operation-id')!;
      await s.until('the restore to succeed', succeeded('backed', 'restore'));
      const of = (id: string) => s.events.filter((m) => m.data.operation_id === id);
      expect(of(backupId).map((m) => [m.event, m.data.data.steps.at(-1).name, m.data.data.progress])).toEqual([
        ['operation.created', 'recorded', 0],
        ['operation.progress', 'started', 5],
        ['operation.progress', 'snapshot', 10],
        ['operation.progress', 'storing', 50],
        ['operation.succeeded', 'succeeded', 100],
      ]);
      expect(of(backupId).every((m) => m.data.data.kind === 'backup' && m.data.data.detail.backup_id === backupId)).toBe(true);
      const restoreEvents = of(restoreId).map((m) => m.event);
      expect(restoreEvents[0]).toBe('operation.created');
      expect(restoreEvents.at(-1)).toBe('operation.succeeded');
      const states = s.events.filter((m) => m.event === 'instance.state').map((m) => m.data.data.to);
      expect(states).toEqual(['RESTORING', 'ACTIVE']);
      // the restore's operation SUCCEEDS after the instance is ACTIVE again
      const active = s.events.findIndex((m) => m.event === 'instance.state' && m.data.data.to === 'ACTIVE');
      expect(s.events.findIndex((m) => m.event === 'operation.succeeded' && m.data.operation_id === restoreId)).toBeGreaterThan(active);
    } finally {
      s.close();
    }
  });

  it('200: reconnecting with Last-Event-ID gets every event missed, once, then the live ones', async () => {
    const reference = await open(th, alice);
    try {
      const first = await open(th, alice);
      await alice.ready(redisBody('resume-1'));
      await first.until('resume-1', succeeded('resume-1'));
      first.close();
      const lastSeen = first.events.at(-1)!.id!;
      // missed while disconnected
      await alice.ready(redisBody('resume-2'));
      await alice.post('/v2/instances/resume-1/acls/', { cidr_mask: '198.51.100.1', description: 'x' });
      const second = await open(th, alice, '', { 'last-event-id': String(lastSeen) });
      const viaQuery = await open(th, alice, `?last_event_id=${lastSeen}`);
      try {
        await alice.ready(redisBody('resume-3'));
        await reference.until('resume-3', succeeded('resume-3'));
        const end = reference.events.at(-1)!.id!;
        for (const s of [second, viaQuery]) await s.until('the reference stream', (ms) => idsOf(ms).includes(end));
        const fromFirst = idsOf(reference.messages).filter((id) => id >= first.events[0]!.id!);
        expect([...idsOf(first.messages), ...idsOf(second.messages)]).toEqual(fromFirst);
        expect(idsOf(viaQuery.messages)).toEqual(idsOf(second.messages));
        expect(idsOf(second.messages)[0]).toBeGreaterThan(lastSeen);
      } finally {
        second.close();
        viaQuery.close();
      }
    } finally {
      reference.close();
    }
  });

  it('400: an unknown kind, a malformed Last-Event-ID; 404: an unknown instance; 401: no credentials', async () => {
    const bad = await alice.get('/v2/events/stream?kinds=operation,nope');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'INVALID_VALUE' });
    expect((await alice.get('/v2/events/stream', { headers: { 'last-event-id': 'yesterday' } })).status).toBe(400);
    const missing = await alice.get('/v2/events/stream?instance=no-such-instance');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('INSTANCE_NOT_FOUND');
    // bob's instance is not alice's
    expect((await alice.get('/v2/events/stream?instance=bobs')).status).toBe(404);
    expect((await new Client(th.url, undefined).get('/v2/events/stream')).status).toBe(401);
  });

  it('ends a stream whose token is revoked, saying so (no stream outlives its credentials)', async () => {
    const carol = await th.signup();
    const s = await open(th, carol);
    try {
      expect(s.status).toBe(200);
      expect((await carol.delete('/v2/tokens/')).status).toBe(200);
      await s.until('the stream to say its credentials ended', (ms) => ms.some((m) => m.event === 'unauthorized'));
      expect(s.messages.find((m) => m.event === 'unauthorized')!.data.message).toMatch(/no longer valid/);
      const until = Date.now() + 5000;
      while (!s.isEnded && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(s.isEnded).toBe(true);
    } finally {
      s.close();
    }
  });

  it("the typed client's iterator follows the stream across a restart of hangar, resuming without loss", async () => {
    const client = new HangarClient({ url: th.url, token: token(alice) });
    const seen: HangarEvent[] = [];
    const stop = new AbortController();
    let opened = 0;
    const following = (async () => {
      for await (const e of client.events({ signal: stop.signal, onOpen: () => opened++ })) seen.push(e);
    })();
    try {
      await expect.poll(() => opened).toBe(1);
      const from = (await listEventsAfter(th.hangar.store.db, { afterId: 0, limit: 100_000 })).at(-1)?.id ?? 0;
      await alice.ready(redisBody('iter-1'));
      await expect
        .poll(() => seen.some((e) => e.kind === 'operation.succeeded' && e.instance_name === 'iter-1'), { timeout: 15_000 })
        .toBe(true);
      await th.restart();
      await alice.ready(redisBody('iter-2'));
      await expect
        .poll(() => seen.some((e) => e.kind === 'operation.succeeded' && e.instance_name === 'iter-2'), { timeout: 30_000 })
        .toBe(true);
      expect(opened).toBeGreaterThanOrEqual(2);
      const account = (await alice.get('/v2/whoami/')).body.data.account_id;
      const stored = await listEventsAfter(th.hangar.store.db, { afterId: from, accountId: account, limit: 100_000 });
      const through = seen.at(-1)!.id;
      expect(seen.map((e) => e.id)).toEqual(stored.filter((e) => e.id <= through).map((e) => e.id));
      const op = await client.waitForOperation((await client.listOperations({ instance: 'iter-2', kinds: ['create'] })).operations[0]!.id);
      expect(op.state).toBe('SUCCEEDED');
    } finally {
      stop.abort();
      await following;
    }
  });

  it('a stream open while hangar stops is ended, and does not hold the stop', async () => {
    const s = await open(th, alice);
    await th.restart();
    await expect.poll(() => s.isEnded).toBe(true);
  });
});

describe('events past their retention', () => {
  let th: TestHangar;
  let alice: Account;
  beforeAll(async () => {
    th = await startTestHangar({ listen: true, env: { HANGAR_EVENT_RETENTION: '1' } });
    alice = await th.signup();
  });
  afterAll(() => th?.close());

  it('are pruned; resuming before them starts with `event: gap`, then the events kept', async () => {
    await alice.ready(redisBody('old'));
    await expect.poll(() => eventsPrunedThrough(th.hangar.store.db), { timeout: 15_000 }).toBeGreaterThan(1);
    const s = await open(th, alice, '', { 'last-event-id': '1' });
    try {
      await s.until('the gap', (ms) => ms.length > 0);
      expect(s.messages[0]).toMatchObject({ event: 'gap', data: { message: expect.stringContaining('were pruned') } });
      expect(s.messages[0]!.id).toBeUndefined();
    } finally {
      s.close();
    }
  });
});

describe.runIf(DIALECTS.includes('postgres'))('events across two replicas on one PostgreSQL', () => {
  let th: TestHangar;
  let other: Hangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect: 'postgres', listen: true });
    alice = await th.signup();
    const env: Record<string, string> = {
      HANGAR_PORT: '0',
      HANGAR_DATA_DIR: th.config.dataDir,
      HANGAR_RUNTIME: 'emulated',
      HANGAR_LOG_LEVEL: 'silent',
      HANGAR_HOST_ID: th.config.hostId,
      HANGAR_DATABASE_URL: th.config.databaseUrl!,
      HANGAR_REPLICA_ID: 'second-replica',
    };
    other = await startHangar(loadConfig({}, env), undefined, { listen: true });
  });
  afterAll(async () => {
    await other?.close();
    await th?.close();
  });

  it('a stream on one replica gets, in order, the events of work requested on the other and done by whichever owns the runtime', async () => {
    const onOther = await SseReader.open(`${other.url}/v2/events/stream`, { 'x-auth-token': token(alice) });
    const onFirst = await open(th, alice);
    try {
      await alice.ready(redisBody('two-replicas'));
      for (const s of [onOther, onFirst]) await s.until('the create', succeeded('two-replicas'));
      const last = onFirst.events.at(-1)!.id!;
      await onOther.until('the same events', (ms) => idsOf(ms).includes(last));
      expect(idsOf(onOther.messages).filter((id) => id <= last)).toEqual(idsOf(onFirst.messages));
      // the operation reads the same on both
      const id = onFirst.events.find((m) => m.event === 'operation.succeeded')!.data.operation_id;
      const viaOther = await (await fetch(`${other.url}/v2/operations/${id}/`, { headers: { 'x-auth-token': token(alice) } })).json();
      expect(viaOther.data).toMatchObject({ id, state: 'SUCCEEDED' });
    } finally {
      onOther.close();
      onFirst.close();
    }
  });
});
