import type { Hangar } from '../../src/server.js';
import { AccountService } from '../../src/service/accounts.js';

/** Account administration on a running test hangar's store, as the CLI does it. */
export function accounts(hangar: Hangar): AccountService {
  return new AccountService(hangar.store.db, { tokenTtlSeconds: hangar.config.tokenTtlSeconds, now: Date.now });
}
