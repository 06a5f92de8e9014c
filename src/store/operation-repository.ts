import type { Operation, OperationState, OperationStep, RequestedBy } from '../domain/operations.js';
import { OPEN_OPERATION_STATES } from '../domain/operations.js';
import type { Db, OperationRow, OperationTable } from './database.js';

/** The one row -> domain mapping of operations. */
export function toOperation(r: OperationRow): Operation {
  return {
    id: r.id,
    kind: r.kind,
    accountId: r.account_id,
    instanceId: r.instance_id,
    instanceName: r.instance_name,
    state: r.state as OperationState,
    steps: JSON.parse(r.steps) as OperationStep[],
    progress: r.progress,
    error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
    requestedBy: r.requested_by === null ? null : (JSON.parse(r.requested_by) as RequestedBy),
    requestId: r.request_id,
    detail: JSON.parse(r.detail) as Record<string, unknown>,
    targetVersion: r.target_version,
    cancellable: r.cancellable === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    startedAt: r.started_at === null ? null : Number(r.started_at),
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
    deadlineAt: Number(r.deadline_at),
    lastEventId: r.last_event_id === null ? null : Number(r.last_event_id),
    rev: r.rev,
  };
}

/** The row of an operation (all but what the store moves itself). */
function toRow(op: Operation): OperationTable {
  return {
    id: op.id,
    account_id: op.accountId,
    instance_id: op.instanceId,
    instance_name: op.instanceName,
    kind: op.kind,
    state: op.state,
    steps: JSON.stringify(op.steps),
    progress: op.progress,
    error_code: op.error?.code ?? null,
    error_message: op.error?.message ?? null,
    requested_by: op.requestedBy === null ? null : JSON.stringify(op.requestedBy),
    request_id: op.requestId,
    detail: JSON.stringify(op.detail),
    target_version: op.targetVersion,
    cancellable: op.cancellable ? 1 : 0,
    created_at: op.createdAt,
    updated_at: op.updatedAt,
    started_at: op.startedAt,
    finished_at: op.finishedAt,
    deadline_at: op.deadlineAt,
    last_event_id: op.lastEventId,
    rev: op.rev,
  };
}

export async function insertOperation(db: Db, op: Operation): Promise<void> {
  await db.insertInto('operations').values(toRow(op)).execute();
}

/**
 * Writes `next` over the operation if it is still at revision `rev` (no other replica changed it
 * since it was read); `next.rev` is written as it is. True when it was written.
 */
export async function replaceOperation(db: Db, rev: number, next: Operation): Promise<boolean> {
  const { id: _id, ...row } = toRow(next);
  const r = await db.updateTable('operations').set(row).where('id', '=', next.id).where('rev', '=', rev).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records the spec version whose carrying out completes the operation (in the transaction of the change). */
export async function setOperationTarget(db: Db, id: string, version: number): Promise<void> {
  await db.updateTable('operations').set({ target_version: version }).where('id', '=', id).execute();
}

export async function findOperation(db: Db, id: string): Promise<Operation | undefined> {
  const r = await db.selectFrom('operations').selectAll().where('id', '=', id).executeTakeFirst();
  return r && toOperation(r);
}

/** Where a page of a list starts: after this operation (newest first). */
export interface OperationCursor {
  readonly createdAt: number;
  readonly id: string;
}

export interface OperationFilter {
  readonly accountId: string;
  readonly instanceId?: string;
  /** The instance's name when the operation was recorded (an instance since deleted). */
  readonly instanceName?: string;
  readonly states?: readonly string[];
  readonly kinds?: readonly string[];
  readonly after?: OperationCursor;
  readonly limit: number;
}

/** An account's operations, newest first, one page. */
export async function listOperations(db: Db, f: OperationFilter): Promise<Operation[]> {
  let q = db.selectFrom('operations').selectAll().where('account_id', '=', f.accountId);
  if (f.instanceId !== undefined) q = q.where('instance_id', '=', f.instanceId);
  if (f.instanceName !== undefined) q = q.where('instance_name', '=', f.instanceName);
  if (f.states && f.states.length > 0) q = q.where('state', 'in', f.states);
  if (f.kinds && f.kinds.length > 0) q = q.where('kind', 'in', f.kinds);
  const after = f.after;
  if (after) {
    q = q.where((eb) =>
      eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
    );
  }
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  return rows.map(toOperation);
}

/** Operations still PENDING or RUNNING: of one instance, or every one (oldest deadline first). */
export async function listOpenOperations(db: Db, opts: { instanceId?: string; kind?: string; limit: number }): Promise<Operation[]> {
  let q = db.selectFrom('operations').selectAll().where('state', 'in', OPEN_OPERATION_STATES);
  if (opts.instanceId !== undefined) q = q.where('instance_id', '=', opts.instanceId);
  if (opts.kind !== undefined) q = q.where('kind', '=', opts.kind);
  q = q.orderBy('deadline_at');
  // One instance has few open operations: they are all read and the limit applied here. SQLite
  // sorts under a LIMIT at a fixed cost of tens of microseconds (measured: 47 us with it, 4 us
  // without, for the same rows), and every pass asks this.
  if (opts.instanceId !== undefined) return (await q.execute()).slice(0, opts.limit).map(toOperation);
  return (await q.limit(opts.limit).execute()).map(toOperation);
}

/** Removes operations finished before `before`, at most `batch`; returns how many went. */
export async function pruneOperations(db: Db, before: number, batch: number): Promise<number> {
  const old = await db.selectFrom('operations').select('id').where('finished_at', '<', before).limit(batch).execute();
  if (old.length === 0) return 0;
  await db
    .deleteFrom('operations')
    .where(
      'id',
      'in',
      old.map((r) => r.id),
    )
    .execute();
  return old.length;
}
