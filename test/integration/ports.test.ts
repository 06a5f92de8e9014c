import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

/** A range of 152 ports: more than one window of the free-port search, and not a multiple of a Redis instance's 6 ports. */
const FIRST = 21000;
const LAST = 21151;
const SIZE = LAST - FIRST + 1;
/** public, servicenet, engine.primary, engine.replica, public.tls, servicenet.tls */
const REDIS_PORTS = 6;

describe.each(DIALECTS)('ports of a small range on %s', (dialect) => {
  let th: TestHangar, alice: Account;

  beforeAll(
    async () =>
      ({ th, alice } = await startWithTwoAccounts({
        dialect,
        env: { HANGAR_PORT_RANGE: `${FIRST}-${LAST}`, HANGAR_MAX_INSTANCES: '1000' },
      })),
  );
  afterAll(() => th.close());

  it('hands out every port of the range once, wherever each search starts, then answers 503 CAPACITY_EXHAUSTED naming the range', async () => {
    const fits = Math.floor(SIZE / REDIS_PORTS);
    for (let i = 0; i < fits; i++) {
      const res = await alice.post('/v2/instances/', redisBody(`p-${i}`));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const full = await alice.post('/v2/instances/', redisBody('p-one-too-many'));
    expect(full.status).toBe(503);
    expect(full.body.code).toBe('CAPACITY_EXHAUSTED');
    expect(full.body.message).toContain(`${FIRST}-${LAST}`);

    const rows = (await sql<{ port: number }>`select port from ports`.execute(th.hangar.store.db)).rows.map((r) => Number(r.port));
    expect(rows).toHaveLength(fits * REDIS_PORTS);
    expect(new Set(rows).size).toBe(rows.length);
    expect(rows.every((p) => p >= FIRST && p <= LAST)).toBe(true);
  });
});
