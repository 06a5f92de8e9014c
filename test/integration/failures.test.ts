import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/domain/errors.js';
import { keysOf, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/**
 * FAILED and DEGRADED, with their reason in the record: what clients see when the runtime cannot
 * build or keep an instance (the emulated runtime fails on demand).
 */
describe.each(DIALECTS)('failed and degraded instances on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect, env: { HANGAR_BUILD_TIMEOUT: '1' } });
    alice = await th.signup();
  });
  afterAll(() => th.close());

  it('a build that cannot succeed is FAILED with the reason; it stays FAILED and can be deleted', async () => {
    const restore = th.runtime.failWith(new TerminalError('no such engine version here'));
    let rec: any;
    try {
      await alice.post('/v2/instances/', redisBody('broken'));
      rec = await alice.waitFor('broken', (r) => r?.state === 'FAILED');
    } finally {
      restore();
    }
    expect(rec.state_reason).toBe('no such engine version here');
    expect(keysOf(rec)).toContain('state_reason');
    expect((await alice.get('/v2/redis/broken/maxClients/')).body.code).toBe('INSTANCE_NOT_READY');
    expect((await alice.post('/v2/redis/broken/resize/', { new_plan: 1000 })).status).toBe(409);
    // FAILED is final: a later change does not rebuild it
    expect((await alice.post('/v2/instances/broken/acls/', { cidr_mask: '192.0.2.1', description: 'x' })).status).toBe(200);
    expect((await alice.get('/v2/instances/broken/')).body.data.state).toBe('FAILED');
    expect(th.runtime.rulesOf(rec.id)).toBeUndefined();
    expect((await alice.delete('/v2/instances/broken/')).status).toBe(200);
    await alice.waitGone('broken');
  });

  it('a build that keeps failing is FAILED once HANGAR_BUILD_TIMEOUT has passed', async () => {
    const restore = th.runtime.failWith(new Error('engine does not start'));
    try {
      await alice.post('/v2/instances/', redisBody('slow'));
      const building = await alice.waitFor('slow', (r) => r?.state !== 'REQUESTED');
      expect(building.state).toBe('BUILDING');
      const rec = await alice.waitFor('slow', (r) => r?.state === 'FAILED');
      expect(rec.state_reason).toBe('not ready after 1 s: engine does not start');
    } finally {
      restore();
    }
  });

  it('an instance that served and then fails is DEGRADED with the reason, then ACTIVE again without one', async () => {
    await alice.ready(redisBody('flaky'));
    const restore = th.runtime.failWith(new Error('engine went away'));
    try {
      await alice.post('/v2/instances/flaky/acls/', { cidr_mask: '192.0.2.2', description: 'x' });
      const rec = await alice.waitFor('flaky', (r) => r?.state === 'DEGRADED');
      expect(rec.state_reason).toBe('engine went away');
      expect((await alice.post('/v2/redis/flaky/resize/', { new_plan: 1000 })).status).toBe(409);
    } finally {
      restore();
    }
    const rec = await alice.waitFor('flaky', (r) => r?.state === 'ACTIVE');
    expect(keysOf(rec)).not.toContain('state_reason');
    expect(th.runtime.rulesOf(rec.id)).toEqual([{ cidr: '192.0.2.2', transport: false, kibana: false }]);
  });
});
