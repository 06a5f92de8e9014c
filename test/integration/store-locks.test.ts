import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockEvents } from '../../src/store/event-repository.js';
import { redisBody } from '../helpers/bodies.js';
import { POSTGRES_URL } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

/**
 * PostgreSQL: a request's transaction takes the events lock (its operation's event), then the
 * instance's row; a lone state change of the reconciler writes the row and appends its event in
 * one statement. Both must take the two locks in the same order, or each waits for the other
 * and PostgreSQL ends one with "deadlock detected" (seen as a 500 of a DELETE or a rename
 * right after a create).
 */
describe.runIf(POSTGRES_URL !== undefined)('the locks of instance writes on postgres', () => {
  let th: TestHangar, alice: Account;

  beforeAll(async () => ({ th, alice } = await startWithTwoAccounts({ dialect: 'postgres' })));
  afterAll(() => th.close());

  it('a statement changing an instance waits for the events lock before it locks the row: no deadlock', async () => {
    const inst = await alice.ready(redisBody('locks'));
    const db = th.hangar.store.db;
    const release = th.hold();
    try {
      let lone: Promise<unknown> | undefined;
      await db.transaction().execute(async (trx) => {
        await lockEvents(trx);
        // another connection: a change of the same row with its event, as the reconciler makes
        lone = db.updateTable('instances').set({ state_reason: 'second' }).where('id', '=', inst.id).execute();
        // long enough for it to lock what it locks before waiting (PostgreSQL looks for deadlocks after 1 s)
        await new Promise((r) => setTimeout(r, 300));
        await trx.updateTable('instances').set({ state_reason: 'first' }).where('id', '=', inst.id).execute();
      });
      await lone;
      const row = await db.selectFrom('instances').select('state_reason').where('id', '=', inst.id).executeTakeFirstOrThrow();
      expect(row.state_reason).toBe('second');
    } finally {
      release();
    }
  });
});
