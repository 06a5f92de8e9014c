import { PostgresAdapter, sql } from 'kysely';
import type { StreamEvent } from '../domain/operations.js';
import type { Db, EventRow } from './database.js';
import { getMeta, setMeta } from './lease-repository.js';

/**
 * The advisory lock that orders events on PostgreSQL ("events" in ASCII; the instance triggers
 * of the 2026-11-26T0900 migration take the same one). A sequence hands out ids in the order
 * transactions ask, not in the order they commit: without the lock, a reader could see id 11
 * before id 10 commits and skip 10 for ever. Held until the transaction ends, it makes events
 * commit in id order. SQLite has one writer at a time already.
 */
export const EVENTS_LOCK = 111559182283891;

/** Meta key: the largest event id removed by pruning (a stream resumed below it has lost events). */
const PRUNED_THROUGH = 'events_pruned_through';

export interface NewEvent {
  readonly accountId: string;
  readonly kind: string;
  readonly instanceId: string | null;
  readonly instanceName: string | null;
  readonly operationId: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  readonly createdAt: number;
}

export function toStreamEvent(r: EventRow): StreamEvent {
  return {
    id: Number(r.id),
    accountId: r.account_id,
    kind: r.kind,
    instanceId: r.instance_id,
    instanceName: r.instance_name,
    operationId: r.operation_id,
    data: JSON.parse(r.data) as Record<string, unknown>,
    createdAt: Number(r.created_at),
  };
}

/**
 * Takes the events lock for the rest of the transaction `trx` (PostgreSQL). A transaction that
 * will append an event takes it before any other lock (an instance row, the placement lock), so
 * that two such transactions never wait for each other in opposite orders.
 */
export async function lockEvents(trx: Db): Promise<void> {
  if (trx.getExecutor().adapter instanceof PostgresAdapter) await sql`select pg_advisory_xact_lock(${EVENTS_LOCK})`.execute(trx);
}

/** Appends one event and returns its id. Run it in a transaction: on PostgreSQL the lock lasts until it ends. */
export async function appendEvent(trx: Db, e: NewEvent): Promise<number> {
  await lockEvents(trx);
  const row = await trx
    .insertInto('events')
    .values({
      account_id: e.accountId,
      kind: e.kind,
      instance_id: e.instanceId,
      instance_name: e.instanceName,
      operation_id: e.operationId,
      data: JSON.stringify(e.data),
      created_at: e.createdAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** Events after `afterId` (oldest first): of one account when given, at most up to `throughId`. */
export async function listEventsAfter(
  db: Db,
  opts: { afterId: number; accountId?: string; throughId?: number; limit: number },
): Promise<StreamEvent[]> {
  let q = db.selectFrom('events').selectAll().where('id', '>', opts.afterId);
  if (opts.accountId !== undefined) q = q.where('account_id', '=', opts.accountId);
  if (opts.throughId !== undefined) q = q.where('id', '<=', opts.throughId);
  const rows = await q.orderBy('id').limit(opts.limit).execute();
  return rows.map(toStreamEvent);
}

/** The id of the newest event; 0 when there is none. */
export async function latestEventId(db: Db): Promise<number> {
  const r = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return r?.id === null || r?.id === undefined ? 0 : Number(r.id);
}

/** The largest event id pruning removed; 0 when none was. */
export async function eventsPrunedThrough(db: Db): Promise<number> {
  return Number((await getMeta(db, PRUNED_THROUGH)) ?? 0);
}

/**
 * Removes events created before `before`, at most `batch` of them (the oldest), and records the
 * largest id removed. Returns how many went.
 */
export async function pruneEvents(db: Db, before: number, batch: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const old = await trx.selectFrom('events').select('id').where('created_at', '<', before).orderBy('id').limit(batch).execute();
    if (old.length === 0) return 0;
    const last = Number(old[old.length - 1]!.id);
    await trx.deleteFrom('events').where('id', '<=', last).where('created_at', '<', before).execute();
    if (last > (await eventsPrunedThrough(trx))) await setMeta(trx, PRUNED_THROUGH, String(last));
    return old.length;
  });
}
