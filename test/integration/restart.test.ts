import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { latestEventId, listEventsAfter } from '../../src/store/event-repository.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/**
 * hangar stopped (in-process) in the middle of work, and started again on the same store: the
 * work is finished, no instance stays in a transitional state. The emulated runtime keeps its
 * engines in memory, so the new start also rebuilds them from the store.
 */
describe.each(DIALECTS)('restart on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect });
    alice = await th.signup();
  });
  afterAll(() => th.close());

  /** Client of the restarted hangar with alice's token (tokens live in the store). */
  const again = () => new Client(th.target, alice.auth);

  it('an instance stopped while BUILDING is ACTIVE after the restart, with the same record', async () => {
    const release = th.hold();
    let created: any;
    try {
      created = (await alice.post('/v2/instances/', redisBody('half'))).body.data;
      await alice.waitFor('half', (r) => r?.state === 'BUILDING');
      await th.restart();
    } finally {
      release();
    }
    const rec = await again().waitFor('half', (r) => r?.state === 'ACTIVE');
    for (const k of ['id', 'password', 'connect_string', 'servicenet_connect_string', 'api_key', 'created', 'plan'])
      expect(rec[k]).toEqual(created[k]);
    expect((await again().get('/v2/redis/half/maxClients/')).body).toEqual({ data: '10000' });
  });

  it('an instance stopped while DELETING is gone after the restart', async () => {
    await alice.ready(redisBody('doomed'));
    const release = th.hold();
    try {
      expect((await alice.delete('/v2/instances/doomed/')).status).toBe(200);
      expect((await alice.get('/v2/instances/doomed/')).body.data.state).toBe('DELETING');
      await th.restart();
    } finally {
      release();
    }
    await again().waitGone('doomed');
    expect((await again().get('/v2/instances/')).body.data.map((r: any) => r.name)).not.toContain('doomed');
  });

  it('an instance stopped while RESIZING is ACTIVE on the new plan after the restart', async () => {
    await alice.ready(redisBody('growing'));
    const release = th.hold();
    try {
      expect((await alice.post('/v2/redis/growing/resize/', { new_plan: 2500 })).status).toBe(200);
      expect((await alice.get('/v2/instances/growing/')).body.data).toMatchObject({ state: 'RESIZING', plan: 500 });
      await th.restart();
    } finally {
      release();
    }
    expect(await again().waitFor('growing', (r) => r?.state === 'ACTIVE')).toMatchObject({ plan: 2500 });
  });

  it('ACLs and users are applied again to engines rebuilt after a restart', async () => {
    const m = await alice.ready(mongoBody('keep', 'mongodb_singledb'));
    await alice.post('/v2/instances/keep/acls/', { cidr_mask: '192.0.2.0/24', description: 'x' });
    await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, {
      username: 'u',
      password: 'password-1',
      roles: [{ role: 'read', db: 'app' }],
    });
    await th.restart();
    await expect.poll(() => th.mongodb.authenticate(m.id, 'app', 'u', 'password-1')).toBe(true);
    expect(th.runtime.rulesOf(m.id)).toEqual([{ cidr: '192.0.2.0/24', transport: false, kibana: false }]);
    const engine = th.mongodb.usersOf(m.id, 'app');
    expect(engine).toEqual([{ name: 'u', roles: [{ role: 'read', db: 'app' }] }]);
    // (the emulated engines are rebuilt after a restart, by its first pass)
    await again().waitFor('keep', (r) => r?.state === 'ACTIVE');
  });

  it('a restart is no incident: engines that do not run yet are started before they are judged, with no state change', async () => {
    const r = await alice.ready(redisBody('cold'));
    const before = await latestEventId(th.hangar.store.db);
    await th.restart();
    // the new runtime runs nothing of it until the first pass of this process has brought it up
    await expect.poll(() => th.runtime.wholePasses.get(r.id) ?? 0).toBeGreaterThan(0);
    expect((await again().waitFor('cold', (rec) => rec?.state === 'ACTIVE')).state_reason ?? null).toBeNull();
    await th.hangar.reconciler.sweep();
    await th.hangar.reconciler.settle(r.id, 5000);
    const changes = (await listEventsAfter(th.hangar.store.db, { afterId: before, limit: 100 }))
      .filter((e) => e.instanceId === r.id && e.kind === 'instance.state')
      .map((e) => e.data);
    expect(changes).toEqual([]);
  });

  it('engines that stop while hangar runs are DEGRADED with the reason, then ACTIVE again', async () => {
    const r = await alice.ready(redisBody('crashing'));
    const before = await latestEventId(th.hangar.store.db);
    const passes = th.runtime.wholePasses.get(r.id)!;
    th.runtime.crash(r.id);
    await again().waitFor('crashing', (rec) => rec?.state === 'ACTIVE' && th.runtime.wholePasses.get(r.id)! > passes);
    const changes = (await listEventsAfter(th.hangar.store.db, { afterId: before, limit: 100 }))
      .filter((e) => e.instanceId === r.id && e.kind === 'instance.state')
      .map((e) => e.data);
    expect(changes).toEqual([
      { from: 'ACTIVE', to: 'DEGRADED', reason: 'not running', plan: r.plan },
      { from: 'DEGRADED', to: 'ACTIVE', reason: null, plan: r.plan },
    ]);
  });

  it('accounts and tokens survive a restart', async () => {
    await th.restart();
    expect((await again().get('/v2/instances/')).status).toBe(200);
    expect((await new Client(th.target, { basic: [alice.login, alice.password] }).get('/v2/tokens/')).status).toBe(200);
  });
});
