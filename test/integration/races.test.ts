import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable } from '../e2e/helpers/hangar-process.js';
import { claimPortRange } from '../helpers/ports.js';
import { killAllUnder, processesUnder } from '../e2e/helpers/processes.js';
import { edgeAllowList } from '../e2e/helpers/what-runs.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type Reply, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/**
 * Requests racing on one instance leave it consistent: one wins, the others get a 409 or another
 * clean 4xx with a message; never a 5xx. On the local runtime, never two engines for one
 * instance. Each race fires its requests at once, several rounds over fresh instances.
 */

const ROUNDS = 4;
/**
 * A test of ROUNDS rounds, each creating an instance until ACTIVE and waiting for it to be renamed,
 * resized or gone: on the local runtime a round starts and stops real engines (7 s a round seen
 * on a loaded 2-core machine), and each wait is bounded at 20 s, so the suite's 30 s is too short.
 */
const ROUNDS_MS = 150_000;
const LOCAL_ENGINES = enginesAvailable();

/** Every answer is a success or a clean client error: JSON with a message and a code, never a 5xx. */
function expectClean(replies: readonly Reply[]): void {
  for (const r of replies) {
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
    if (r.status >= 400) expect(r.body).toEqual({ message: expect.any(String), code: expect.any(String) });
  }
}

const ok = (replies: readonly Reply[]) => replies.filter((r) => r.status === 200).length;
const codes = (replies: readonly Reply[]) => replies.filter((r) => r.status !== 200).map((r) => r.body.code as string);

const runtimes = LOCAL_ENGINES ? (['emulated', 'local'] as const) : (['emulated'] as const);
const cases = DIALECTS.flatMap((dialect) => runtimes.map((runtime) => ({ dialect, runtime })));

describe.each(cases)('races on $dialect, $runtime runtime', ({ dialect, runtime }) => {
  let th: TestHangar;
  let alice: Account;
  const local = runtime === 'local';
  // The instance quota is a rule of the store, and the local runtime has no mongod here: these
  // cases exist on the emulated runtime only (for both stores), rather than as skipped tests.
  const onEmulated = (local ? () => {} : it) as typeof it;
  const version = () =>
    local
      ? th.hangar.zones
          .get('US-Dallas')!
          .engines.offerings()
          .find((o) => o.engine === 'redis')!.versions[0]!
      : '7.0.15';
  const body = (name: string, extra: Record<string, unknown> = {}) => redisBody(name, { version: version(), ...extra });
  const ready = (name: string) => alice.ready(body(name) as any);

  beforeAll(async () => {
    const ports = local ? await claimPortRange(200) : undefined;
    th = await startTestHangar({
      dialect,
      env: {
        HANGAR_RUNTIME: runtime,
        HANGAR_MAX_ACLS: '30',
        HANGAR_MAX_INSTANCES: '60',
        ...(ports ? { HANGAR_PORT_RANGE: `${ports.first}-${ports.last}` } : {}),
      },
    });
    alice = await th.signup();
  }, 60_000);

  afterAll(async () => {
    await th?.stop();
    if (local) await killAllUnder(th.config.dataDir);
    await th?.close();
  });

  /** On the local runtime: each listed instance has exactly one process per engine; nothing else runs. */
  async function oneEnginePairEach(): Promise<void> {
    if (!local) return;
    const listed = (await alice.get('/v2/instances/')).body.data as any[];
    for (const r of listed)
      if (!['ACTIVE', 'FAILED'].includes(r.state))
        await alice.waitFor(r.name, (x) => x === undefined || ['ACTIVE', 'FAILED'].includes(x.state), 20_000);
    const now = (await alice.get('/v2/instances/')).body.data as any[];
    const procs = processesUnder(`${th.config.dataDir}/instances`).filter((p) => p.program.includes('redis'));
    const pids = new Set(procs.map((p) => p.pid));
    const roots = procs.filter((p) => !pids.has(p.ppid));
    const perUnit = new Map<string, number>();
    for (const p of roots) {
      const unit = /\/instances\/([^/]+\/[^/]+)\/redis\.conf/.exec(p.cmdline)?.[1] ?? '?';
      perUnit.set(unit, (perUnit.get(unit) ?? 0) + 1);
    }
    const expected = new Map(
      now
        .filter((r) => r.state === 'ACTIVE')
        .flatMap(
          (r) =>
            [
              [`${r.id}/primary`, 1],
              [`${r.id}/replica`, 1],
            ] as [string, number][],
        ),
    );
    expect(Object.fromEntries(perUnit)).toEqual(Object.fromEntries(expected));
  }

  it(
    'two renames at once: one wins, the other is a clean 4xx; the instance has one of the names',
    async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await ready(`ren-${i}`);
        const replies = await Promise.all([
          alice.post(`/v2/instances/ren-${i}/rename/`, { name: `ren-${i}-a` }),
          alice.post(`/v2/instances/ren-${i}/rename/`, { name: `ren-${i}-b` }),
        ]);
        expectClean(replies);
        expect(ok(replies), JSON.stringify(replies.map((r) => r.body))).toBe(1);
        const winner = replies[0]!.status === 200 ? `ren-${i}-a` : `ren-${i}-b`;
        expect((await alice.get(`/v2/instances/${winner}/`)).status).toBe(200);
        expect((await alice.get(`/v2/instances/ren-${i}/`)).status).toBe(404);
        await alice.waitFor(winner, (r) => r?.state === 'ACTIVE');
      }
      await oneEnginePairEach();
    },
    ROUNDS_MS,
  );

  it('two renames to one name at once: one wins, the other is 409 NAME_TAKEN', async () => {
    await ready('one-a');
    await ready('one-b');
    const replies = await Promise.all([
      alice.post('/v2/instances/one-a/rename/', { name: 'one' }),
      alice.post('/v2/instances/one-b/rename/', { name: 'one' }),
    ]);
    expectClean(replies);
    expect(ok(replies)).toBe(1);
    expect(codes(replies)).toEqual(['NAME_TAKEN']);
  });

  it(
    'a resize and a delete at once: the instance is gone in the end; the resize is 200 or a clean 409',
    async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await ready(`rd-${i}`);
        const replies = await Promise.all([
          alice.post(`/v2/redis/rd-${i}/resize/`, { new_plan: 1000 }),
          alice.delete(`/v2/instances/rd-${i}/`),
        ]);
        expectClean(replies);
        expect(replies[1]!.status).toBe(200);
        await alice.waitGone(`rd-${i}`, 20_000);
      }
      await oneEnginePairEach();
    },
    ROUNDS_MS,
  );

  it(
    'two creates with one name at once: one instance; the other is 409 NAME_TAKEN',
    async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const replies = await Promise.all([
          alice.post('/v2/instances/', body(`twin-${i}`)),
          alice.post('/v2/instances/', body(`twin-${i}`)),
        ]);
        expectClean(replies);
        expect(ok(replies)).toBe(1);
        expect(codes(replies)).toEqual(['NAME_TAKEN']);
        await alice.waitFor(`twin-${i}`, (r) => r?.state === 'ACTIVE', 20_000);
      }
      expect((await alice.get('/v2/instances/')).body.data.filter((r: any) => r.name.startsWith('twin-'))).toHaveLength(ROUNDS);
      await oneEnginePairEach();
    },
    ROUNDS_MS,
  );

  it('twenty ACL adds at once: all recorded and all enforced', async () => {
    const inst = await ready('acl20');
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        alice.post('/v2/instances/acl20/acls/', { cidr_mask: `192.0.2.${i + 1}`, description: `n${i}` }),
      ),
    );
    expectClean(replies);
    expect(ok(replies)).toBe(20);
    const listed = (await alice.get('/v2/instances/acl20/acls/')).body.data.map((a: any) => a.cidr_mask).sort();
    expect(listed).toEqual(Array.from({ length: 20 }, (_, i) => `192.0.2.${i + 1}`).sort());
    await alice.waitFor('acl20', (r) => r?.state === 'ACTIVE');
    if (local) await expect.poll(() => edgeAllowList(th.config.dataDir, inst.id), { timeout: 15_000 }).toEqual(listed);
    // ACTIVE does not wait for the pass that applies the ACLs (the instance stays ACTIVE meanwhile)
    else
      await expect
        .poll(
          () =>
            th.runtime
              .rulesOf(inst.id)
              ?.map((r) => r.cidr)
              .sort(),
          { timeout: 15_000 },
        )
        .toEqual(listed);
  });

  it('twenty adds of one ACL at once: one is recorded, the others are 409 ACL_EXISTS', async () => {
    await ready('acl-same');
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => alice.post('/v2/instances/acl-same/acls/', { cidr_mask: '198.51.100.7', description: 'same' })),
    );
    expectClean(replies);
    expect(ok(replies)).toBe(1);
    expect(new Set(codes(replies))).toEqual(new Set(['ACL_EXISTS']));
    expect((await alice.get('/v2/instances/acl-same/acls/')).body.data).toHaveLength(1);
  });

  it('ACL adds at once past the quota: exactly the quota is recorded, the others are 409 QUOTA_EXCEEDED', async () => {
    await ready('acl-quota');
    // 30 allowed per instance; 40 at once
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        alice.post('/v2/instances/acl-quota/acls/', { cidr_mask: `203.0.113.${i + 1}`, description: 'q' }),
      ),
    );
    expectClean(replies);
    expect(ok(replies)).toBe(30);
    expect(new Set(codes(replies))).toEqual(new Set(['QUOTA_EXCEEDED']));
    expect((await alice.get('/v2/instances/acl-quota/acls/')).body.data).toHaveLength(30);
  });

  it(
    'a delete and ACL adds at once: the instance is gone in the end; each add is 200 or a clean 4xx',
    async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await ready(`del-acl-${i}`);
        const replies = await Promise.all([
          alice.post(`/v2/instances/del-acl-${i}/acls/`, { cidr_mask: '192.0.2.200', description: 'before' }),
          alice.delete(`/v2/instances/del-acl-${i}/`),
          alice.post(`/v2/instances/del-acl-${i}/acls/`, { cidr_mask: '192.0.2.201', description: 'after' }),
        ]);
        expectClean(replies);
        expect(replies[1]!.status).toBe(200);
        for (const code of codes(replies)) expect(['INSTANCE_DELETING', 'INSTANCE_NOT_FOUND']).toContain(code);
        await alice.waitGone(`del-acl-${i}`, 20_000);
      }
      await oneEnginePairEach();
    },
    ROUNDS_MS,
  );

  it('two deletes at once: one is 200, the other a clean 4xx; the instance is gone', async () => {
    await ready('del-twice');
    const replies = await Promise.all([alice.delete('/v2/instances/del-twice/'), alice.delete('/v2/instances/del-twice/')]);
    expectClean(replies);
    expect(ok(replies)).toBe(1);
    // the second finds it being deleted, or already gone
    for (const code of codes(replies)) expect(['INSTANCE_DELETING', 'INSTANCE_NOT_FOUND']).toContain(code);
    await alice.waitGone('del-twice', 20_000);
  });

  onEmulated(
    'creates at once past the instance quota: exactly the quota is created',
    async () => {
      const bob = await th.signup();
      const small = 3;
      // bob's quota is the hangar's (60); fill it up to 3 short of it, then race 6 creates
      const have = (await bob.get('/v2/instances/')).body.data.length;
      expect(have).toBe(0);
      const prefill = 60 - small;
      for (let i = 0; i < prefill; i += 20) {
        const batch = Array.from({ length: Math.min(20, prefill - i) }, (_, j) => bob.post('/v2/instances/', body(`fill-${i + j}`)));
        expectClean(await Promise.all(batch));
      }
      const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => bob.post('/v2/instances/', body(`last-${i}`))));
      expectClean(replies);
      expect(ok(replies)).toBe(small);
      expect(new Set(codes(replies))).toEqual(new Set(['QUOTA_EXCEEDED']));
      expect((await bob.get('/v2/instances/')).body.data).toHaveLength(60);
      for (const r of (await bob.get('/v2/instances/')).body.data) expect((await bob.delete(`/v2/instances/${r.name}/`)).status).toBe(200);
      for (const r of (await bob.get('/v2/instances/')).body.data) await bob.waitGone(r.name, 30_000);
    },
    120_000,
  );

  onEmulated('two creates of one MongoDB user at once: one is recorded, the other is 409 USER_EXISTS', async () => {
    const m = await alice.ready(mongoBody('users'));
    const user = { username: 'u', password: 'password-1', roles: [{ role: 'read', db: 'app' }] };
    const replies = await Promise.all([
      alice.post(`/v2/mongodb/${m.id}/databases/app/users`, user),
      alice.post(`/v2/mongodb/${m.id}/databases/app/users`, user),
    ]);
    expectClean(replies);
    expect(ok(replies)).toBe(1);
    expect(codes(replies)).toEqual(['USER_EXISTS']);
    const again = await Promise.all([
      alice.delete(`/v2/mongodb/${m.id}/databases/app/users/u`),
      alice.delete(`/v2/mongodb/${m.id}/databases/app/users/u`),
    ]);
    expectClean(again);
    expect(ok(again)).toBe(1);
    expect(codes(again)).toEqual(['USER_NOT_FOUND']);
  });
});
