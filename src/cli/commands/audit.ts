import type { Config } from '../../config.js';
import { listAuditEvents } from '../../store/audit-repository.js';
import { findAccountByLogin } from '../../store/account-repository.js';
import { type Io, UsageError, json } from '../io.js';
import { withOperatorContext } from '../operator.js';
import { auditEventRecord } from '../../http/serializers.js';
import { init } from './accounts.js';

/** The audit log of every account (or of one, with --login), newest first. */
export async function audit(config: Config, opts: Record<string, string | boolean | undefined>, io: Io): Promise<void> {
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new UsageError('--limit must be an integer from 1 to 100000');
  await withOperatorContext(
    config,
    async ({ store }) => {
      let accountId: string | undefined;
      if (typeof opts.login === 'string') {
        const account = await findAccountByLogin(store.db, opts.login);
        if (!account) throw new UsageError(`no account with login "${opts.login}"`);
        accountId = account.id;
      }
      const rows = await listAuditEvents(store.db, { limit, ...(accountId ? { accountId } : {}) });
      io.out(json(rows.map((e) => ({ account_id: e.accountId, login: e.login, ...auditEventRecord(e) }))));
    },
    init(opts),
  );
}
