import type { Config } from '../config.js';
import { openKeyring } from '../store/keyring.js';
import { AccountService } from '../service/accounts.js';
import { assertStoreExists, openStore, type Store } from '../store/database.js';
import type { Keyring } from '../lib/secrets.js';

/** What an operator command works on: the store of a data dir or database URL, directly. */
export interface OperatorContext {
  readonly store: Store;
  readonly keyring: Keyring;
  readonly accounts: AccountService;
}

/**
 * Opens the store of the data dir or database URL and runs `fn` on it. A store that is not there
 * is refused (StoreMissingError, naming where it looked) rather than made: a mistyped
 * --data-dir, or a command run from another directory, must not leave an empty store behind.
 * Only `init` (the --init flag) makes one, as `hangar serve` does.
 */
export async function withOperatorContext<T>(
  config: Config,
  fn: (ctx: OperatorContext) => Promise<T>,
  opts: { init?: boolean } = {},
): Promise<T> {
  if (!opts.init) await assertStoreExists(config);
  const store = await openStore({ ...config, poolSize: 2 });
  try {
    const keyring = await openKeyring(config, store.db);
    const accounts = new AccountService(store.db, { tokenTtlSeconds: config.tokenTtlSeconds, now: Date.now });
    return await fn({ store, keyring, accounts });
  } finally {
    await store.close();
  }
}
