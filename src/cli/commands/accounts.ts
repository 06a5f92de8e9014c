import type { Config } from '../../config.js';
import { appendAuditEvent } from '../../store/audit-repository.js';
import type { Db } from '../../store/database.js';
import { formatCreated } from '../../lib/time.js';
import { type Io, UsageError, json } from '../io.js';
import { withOperatorContext } from '../operator.js';

/** --init: make the store when there is none (otherwise a missing store is refused). */
export const init = (opts: Record<string, string | boolean | undefined>) => ({ init: opts.init === true });

function need(v: string | boolean | undefined, flag: string): string {
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${flag} is required`);
  return v;
}

/**
 * Changes made by the operator are in the audit log too, filed under the account they touch,
 * without a source address or request id (they came through no request).
 */
async function recordOperatorChange(db: Db, action: string, account: { id: string; login: string }, target: string): Promise<void> {
  await appendAuditEvent(db, {
    accountId: account.id,
    login: account.login,
    action,
    target,
    sourceIp: null,
    outcome: 'success',
    statusCode: null,
    requestId: null,
    createdAt: Date.now(),
  });
}

export async function accountsCreate(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const login = need(opts.login, 'login');
  const password = need(opts.password, 'password');
  await withOperatorContext(
    config,
    async ({ accounts, store }) => {
      const a = await accounts.createAccount(login, password);
      await recordOperatorChange(store.db, 'account.create', a, `account:${a.login}`);
      io.out(json({ id: a.id, login: a.login, created: formatCreated(a.created_at) }));
    },
    init(opts),
  );
}

export async function keysCreate(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const login = need(opts.login, 'login');
  await withOperatorContext(
    config,
    async ({ accounts, store }) => {
      const key = await accounts.createApiKey(login);
      await recordOperatorChange(store.db, 'api_key.create', await accounts.accountByLogin(login), `api_key:${key.user_key}`);
      io.out(json({ id: key.id, user_key: key.user_key, pass_key: key.pass_key, created: formatCreated(key.created_at) }));
    },
    init(opts),
  );
}

export async function keysList(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const login = need(opts.login, 'login');
  await withOperatorContext(
    config,
    async ({ accounts }) => {
      const keys = await accounts.listApiKeys(login);
      io.out(json(keys.map((k) => ({ user_key: k.user_key, created: formatCreated(Number(k.created_at)) }))));
    },
    init(opts),
  );
}

export async function keysDelete(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const login = need(opts.login, 'login');
  const userKey = need(opts['user-key'], 'user-key');
  await withOperatorContext(
    config,
    async ({ accounts, store }) => {
      await accounts.deleteApiKey(login, userKey);
      await recordOperatorChange(store.db, 'api_key.delete', await accounts.accountByLogin(login), `api_key:${userKey}`);
      io.out(json({ deleted: userKey }));
    },
    init(opts),
  );
}

export async function tokensRevoke(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const login = need(opts.login, 'login');
  await withOperatorContext(
    config,
    async ({ accounts, store }) => {
      const revoked = await accounts.revokeAllTokens(login);
      await recordOperatorChange(store.db, 'token.revoke_all', await accounts.accountByLogin(login), `account:${login}`);
      io.out(json({ login, revoked }));
    },
    init(opts),
  );
}
