import type { Db } from './database.js';

export interface AuditEvent {
  accountId: string | null;
  login: string | null;
  action: string;
  target: string | null;
  sourceIp: string | null;
  outcome: 'success' | 'failure';
  statusCode: number | null;
  requestId: string | null;
  createdAt: number;
}

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
export function listAuditEvents(db: Db, opts: { accountId?: string; limit: number; beforeId?: number }) {
  let q = db.selectFrom('audit_events').selectAll();
  if (opts.accountId !== undefined) q = q.where('account_id', '=', opts.accountId);
  if (opts.beforeId !== undefined) q = q.where('id', '<', opts.beforeId);
  return q.orderBy('id', 'desc').limit(opts.limit).execute();
}
