import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../../service/accounts.js';
import type { AuditService } from '../../service/audit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Name of the change this route makes, recorded in the audit log (e.g. `instance.create`). */
    audit?: string;
  }
}

/** The action of a failed HTTP Basic login on a route that changes nothing. */
export const LOGIN_FAILED_ACTION = 'login';

/** Logins are e-mail addresses or key ids; anything longer is cut (it is attacker input). */
const MAX_LOGIN = 254;

/** The resource a request acts on, from its path parameters (and the name of a new instance). */
function targetOf(req: FastifyRequest): string | null {
  const p = (req.params ?? {}) as Record<string, string | undefined>;
  const body = req.body as { name?: unknown } | undefined;
  const created =
    req.routeOptions.config.audit === 'instance.create' && typeof body?.name === 'string' ? body.name.slice(0, 64) : undefined;
  const parts = [
    created !== undefined ? `instance:${created}` : undefined,
    p.instance_name !== undefined ? `instance:${p.instance_name}` : undefined,
    p.instance_id !== undefined ? `instance:${p.instance_id}` : undefined,
    p.acl_id !== undefined ? `acl:${p.acl_id}` : undefined,
    p.database_name !== undefined ? `database:${p.database_name}` : undefined,
    p.username !== undefined ? `user:${p.username}` : undefined,
    p.key_id !== undefined ? `key:${p.key_id}` : undefined,
    p.operation_id !== undefined ? `operation:${p.operation_id}` : undefined,
    p.webhook_id !== undefined ? `webhook:${p.webhook_id}` : undefined,
    p.backup_id !== undefined ? `backup:${p.backup_id}` : undefined,
    p.serial !== undefined ? `client_cert:${p.serial}` : undefined,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join('/') : null;
}

/**
 * Every change, and every login, is appended to the audit log before the answer leaves: who,
 * what, on what, from where, with which outcome, and the request id that ties it to the logs.
 * Routes name their change in `config.audit`; logins are `token.create`. A failed HTTP Basic
 * login on any other route is recorded as `login`. A failed login names the login tried and,
 * when that login (or key) exists, is filed under its account, so the account sees attempts
 * on it in its own log.
 */
export function registerAudit(
  app: FastifyInstance,
  deps: { now: () => number; services: { accounts: AccountService; audit: AuditService } },
): void {
  // A callback hook: answers that record nothing (reads) go on without a promise of their own.
  app.addHook('onSend', (req, reply, payload, done) => {
    const attempt = req.loginAttempt;
    const action = req.routeOptions.config.audit ?? (attempt?.failed ? LOGIN_FAILED_ACTION : undefined);
    // A 503 changed nothing, and when the store is what is unavailable, writing to it would only
    // hold the answer for another timeout. A replayed Idempotency-Key answer changed nothing either.
    if (!action || reply.statusCode === 503 || reply.getHeader('idempotent-replayed')) {
      done(null, payload);
      return;
    }
    // The answer leaves once the event is recorded (or failed to be).
    record(req, reply, action, attempt)
      .catch((err: unknown) => req.log.error({ err }, 'audit event not recorded'))
      .then(
        () => done(null, payload),
        () => done(null, payload),
      );
  });

  async function record(req: FastifyRequest, reply: FastifyReply, action: string, attempt: FastifyRequest['loginAttempt']): Promise<void> {
    const status = reply.statusCode;
    let accountId = req.caller?.accountId ?? null;
    let login = req.caller?.login ?? null;
    if (!req.caller && attempt) {
      login = attempt.user.slice(0, MAX_LOGIN);
      accountId = (await deps.services.accounts.accountIdOf(attempt.user)) ?? null;
    }
    await deps.services.audit.record({
      accountId,
      login,
      action,
      target: targetOf(req),
      sourceIp: req.ip,
      outcome: status < 400 ? 'success' : 'failure',
      statusCode: status,
      requestId: req.id,
      createdAt: deps.now(),
    });
  }
}
