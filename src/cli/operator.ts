import type { Config } from '../config.js';
import { openKeyring } from '../store/keyring.js';
import { AccountService } from '../service/accounts.js';
import { openStore, type Store } from '../store/database.js';
import type { Keyring } from '../lib/secrets.js';

/** What an operator command works on: the store of a data dir or database URL, directly. */
export interface OperatorContext {
  readonly store: Store;
  readonly keyring: Keyring;
  readonly accounts: AccountService;
}

export async function withOperatorContext<T>(config: Config, fn: (ctx: OperatorContext) => Promise<T>): Promise<T> {
  const store = await openStore({ ...config, poolSize: 2 });
  try {
    const keyring = await openKeyring(config, store.db);
    const accounts = new AccountService(store.db, { tokenTtlSeconds: config.tokenTtlSeconds, now: Date.now });
    return await fn({ store, keyring, accounts });
  } finally {
    await store.close();
  }
}
