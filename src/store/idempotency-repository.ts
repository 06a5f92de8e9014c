import type { Db } from './database.js';
import { isUniqueViolation } from './errors.js';

export interface IdempotencyRecord {
  readonly requestHash: string;
  /** Undefined while the first request is still running. */
  readonly statusCode: number | undefined;
  readonly response: string | undefined;
  readonly createdAt: number;
  /** The operation the first request started, if any. */
  readonly operationId: string | undefined;
}

/** Reserves a key for a request; false when the account already used it. */
export async function reserveIdempotencyKey(db: Db, accountId: string, key: string, requestHash: string, now: number): Promise<boolean> {
  try {
    await db
      .insertInto('idempotency_keys')
      .values({ account_id: accountId, idem_key: key, request_hash: requestHash, status_code: null, response: null, created_at: now })
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export async function findIdempotencyKey(db: Db, accountId: string, key: string): Promise<IdempotencyRecord | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('idem_key', '=', key)
    .executeTakeFirst();
  return (
    row && {
      requestHash: row.request_hash,
      statusCode: row.status_code ?? undefined,
      response: row.response ?? undefined,
      createdAt: row.created_at,
      operationId: row.operation_id ?? undefined,
    }
  );
}

/** Records the answer given to the request that reserved the key. */
export async function completeIdempotencyKey(
  db: Db,
  accountId: string,
  key: string,
  statusCode: number,
  response: string,
  operationId?: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status_code: statusCode, response, ...(operationId !== undefined ? { operation_id: operationId } : {}) })
    .where('account_id', '=', accountId)
    .where('idem_key', '=', key)
    .execute();
}

/** Frees a key (its request failed without an answer worth repeating, or was abandoned). */
export async function releaseIdempotencyKey(db: Db, accountId: string, key: string, onlyIfBefore?: number): Promise<boolean> {
  let q = db
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', accountId)
    .where('idem_key', '=', key)
    .where('status_code', 'is', null);
  if (onlyIfBefore !== undefined) q = q.where('created_at', '<', onlyIfBefore);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Drops keys older than `before`. */
export async function purgeIdempotencyKeys(db: Db, before: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<', before).execute();
}
