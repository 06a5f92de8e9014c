import type { AuditEvent, RecordedAuditEvent } from '../domain/model.js';
import type { Db } from './database.js';

/** Appends one event; the audit log is never updated or deleted from. */
export async function appendAuditEvent(db: Db, e: AuditEvent): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      account_id: e.accountId,
      login: e.login,
      action: e.action,
      target: e.target,
      source_ip: e.sourceIp,
      outcome: e.outcome,
      status_code: e.statusCode,
      request_id: e.requestId,
      created_at: e.createdAt,
    })
    .execute();
}

/** Newest first; the account's own events, or every event when `accountId` is undefined. */
export async function listAuditEvents(
  db: Db,
  opts: { accountId?: string; limit: number; beforeId?: number },
): Promise<RecordedAuditEvent[]> {
  let q = db.selectFrom('audit_events').selectAll();
  if (opts.accountId !== undefined) q = q.where('account_id', '=', opts.accountId);
  if (opts.beforeId !== undefined) q = q.where('id', '<', opts.beforeId);
  const rows = await q.orderBy('id', 'desc').limit(opts.limit).execute();
  return rows.map((r) => ({
    id: Number(r.id),
    accountId: r.account_id,
    login: r.login,
    action: r.action,
    target: r.target,
    sourceIp: r.source_ip,
    outcome: r.outcome as AuditEvent['outcome'],
    statusCode: r.status_code,
    requestId: r.request_id,
    createdAt: Number(r.created_at),
  }));
}
