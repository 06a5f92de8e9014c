import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

// Which passes converge an instance whole (its units, then its access) and which apply its access
// alone, through the HTTP API on the emulated runtime (a fake of the local one: it counts the
// passes that converged an instance whole). The same on real engines: test/e2e/access-pass.test.ts.

describe.each(DIALECTS)('the pass of an access change, on %s', (dialect) => {
  let th: TestHangar, alice: Account;
  let inst: any;

  beforeAll(async () => {
    // The periodic resync's passes converge every instance whole (they are the check that its
    // units still run as asked): one of them, every 30 s by default, would count among the passes
    // this file counts when a slow run reaches it. Kept out of the file's time, as on real engines.
    ({ th, alice } = await startWithTwoAccounts({ dialect, env: { HANGAR_RESYNC_INTERVAL: '3600' } }));
    inst = await alice.ready(redisBody('r'));
  });
  afterAll(() => th.close());

  const whole = () => th.runtime.wholePasses.get(inst.id) ?? 0;
  const rules = () =>
    th.runtime
      .rulesOf(inst.id)
      ?.map((r) => r.cidr)
      .sort();
  const record = async () => (await alice.get('/v2/instances/r/')).body.data;

  it('an ACL add and delete on a serving instance reach the edge without converging its units again', async () => {
    const before = whole();
    expect(before).toBeGreaterThan(0);
    const added = await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.10', description: 'office' });
    expect(added.status).toBe(200);
    expect(rules()).toContain('192.0.2.10');
    expect(th.runtime.connect(inst.id, '192.0.2.10')).toBe(true);
    const removed = await alice.delete(`/v2/instances/r/acls/${added.body.data}/`);
    expect(removed.status).toBe(200);
    await alice.waitFor('r', (r) => r.state === 'ACTIVE');
    expect(rules()).not.toContain('192.0.2.10');
    expect(th.runtime.connect(inst.id, '192.0.2.10')).toBe(false);
    expect(whole()).toBe(before);
    expect((await record()).state).toBe('ACTIVE');
  });

  it('a rename changes nothing the units run: carried out without converging them', async () => {
    const before = whole();
    expect((await alice.post('/v2/instances/r/rename/', { name: 'r2' })).status).toBe(200);
    expect((await alice.post('/v2/instances/r2/rename/', { name: 'r' })).status).toBe(200);
    expect((await alice.waitFor('r', (r) => r.state === 'ACTIVE')).name).toBe('r');
    expect(whole()).toBe(before);
  });

  it('a change of a setting, and a resize, converge the units whole', async () => {
    const before = whole();
    const patched = await alice.patch('/v2/redis/r/config/', { timeout: '300' });
    expect(patched.status).toBe(200);
    expect(whole()).toBe(before + 1);
    expect((await alice.post('/v2/redis/r/resize/', { new_plan: 1000 })).status).toBe(200);
    await alice.waitFor('r', (r) => r.state === 'ACTIVE' && r.plan === 1000);
    expect(whole()).toBe(before + 2);
    // and an ACL change after them applies the access alone again
    expect((await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.11', description: 'after' })).status).toBe(200);
    expect(rules()).toContain('192.0.2.11');
    expect(whole()).toBe(before + 2);
  });

  it('an access pass that fails is followed by passes that converge the instance whole', async () => {
    const release = th.runtime.failWith(new Error('the engines do not answer'));
    let before: number;
    try {
      before = whole();
      await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.12', description: 'while failing' });
      const degraded = await alice.waitFor('r', (r) => r.state === 'DEGRADED');
      expect(degraded.state_reason ?? degraded.stateReason ?? '').toContain('do not answer');
    } finally {
      release();
    }
    await alice.waitFor('r', (r) => r.state === 'ACTIVE', 10_000);
    expect(rules()).toContain('192.0.2.12');
    expect(whole()).toBeGreaterThan(before!);
  });
});
