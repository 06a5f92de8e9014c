import type { AuditEvent, RecordedAuditEvent } from '../domain/model.js';
import { appendAuditEvent, listAuditEvents } from '../store/audit-repository.js';
import type { Db } from '../store/database.js';
import type { Caller } from './deps.js';

/** The audit log: every change and login, appended, never updated; each account reads its own. */
export class AuditService {
  constructor(private readonly db: Db) {}

  /** Appends one event. */
  record(event: AuditEvent): Promise<void> {
    return appendAuditEvent(this.db, event);
  }

  /** The caller's own events, newest first: at most `limit`, older than event `before` when given. */
  list(caller: Caller, opts: { limit: number; before?: number }): Promise<RecordedAuditEvent[]> {
    return listAuditEvents(this.db, {
      accountId: caller.accountId,
      limit: opts.limit,
      ...(opts.before !== undefined ? { beforeId: opts.before } : {}),
    });
  }
}
