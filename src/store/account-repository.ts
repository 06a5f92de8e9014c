import type { Db } from './database.js';

/** Accounts, their API key pairs and their tokens. */

export async function insertAccount(db: Db, row: { id: string; login: string; passwordHash: string; createdAt: number }): Promise<void> {
  await db
    .insertInto('accounts')
    .values({ id: row.id, login: row.login, password_hash: row.passwordHash, created_at: row.createdAt })
    .execute();
}

export function findAccountByLogin(db: Db, login: string) {
  return db.selectFrom('accounts').selectAll().where('login', '=', login).executeTakeFirst();
}

export function findAccountById(db: Db, id: string) {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listAccounts(db: Db) {
  return db.selectFrom('accounts').select(['id', 'login', 'created_at']).orderBy('created_at').execute();
}

export async function updateAccountPassword(db: Db, id: string, passwordHash: string): Promise<void> {
  await db.updateTable('accounts').set({ password_hash: passwordHash }).where('id', '=', id).execute();
}

export async function insertApiKey(
  db: Db,
  row: { id: string; accountId: string; userKey: string; secretHash: string; createdAt: number },
): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: row.id,
      account_id: row.accountId,
      user_key: row.userKey,
      secret_hash: row.secretHash,
      created_at: row.createdAt,
      last_used_at: null,
    })
    .execute();
}

/** The key pair and its account's login. */
export function findApiKey(db: Db, userKey: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.id', 'api_keys.account_id', 'api_keys.secret_hash', 'accounts.login', 'accounts.created_at'])
    .where('api_keys.user_key', '=', userKey)
    .executeTakeFirst();
}

/** Records when a key pair last logged in. */
export async function touchApiKey(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
}

export function listApiKeys(db: Db, accountId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'user_key', 'created_at', 'last_used_at'])
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .execute();
}

/** How many key pairs the account has. */
export async function countApiKeys(db: Db, accountId: string): Promise<number> {
  const r = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Deletes the account's key pair with this id; false when the account has none such. */
export async function deleteApiKeyById(db: Db, accountId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('api_keys').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function deleteApiKey(db: Db, accountId: string, userKey: string): Promise<boolean> {
  const r = await db.deleteFrom('api_keys').where('account_id', '=', accountId).where('user_key', '=', userKey).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function insertToken(
  db: Db,
  row: { id: string; accountId: string; tokenHash: string; createdAt: number; expiresAt: number },
): Promise<void> {
  await db
    .insertInto('tokens')
    .values({
      id: row.id,
      account_id: row.accountId,
      token_hash: row.tokenHash,
      created_at: row.createdAt,
      expires_at: row.expiresAt,
      revoked_at: null,
    })
    .execute();
}

/** A live token (not revoked, not expired at `now`) with its account. */
export function findLiveToken(db: Db, tokenHash: string, now: number) {
  return db
    .selectFrom('tokens')
    .innerJoin('accounts', 'accounts.id', 'tokens.account_id')
    .select(['tokens.id', 'tokens.account_id', 'tokens.expires_at', 'accounts.login', 'accounts.created_at'])
    .where('tokens.token_hash', '=', tokenHash)
    .where('tokens.revoked_at', 'is', null)
    .where('tokens.expires_at', '>', now)
    .executeTakeFirst();
}

/** A token by its hash whatever its state (dead ones are kept a day): to tell why it is refused. */
export function findTokenState(db: Db, tokenHash: string) {
  return db.selectFrom('tokens').select(['expires_at', 'revoked_at']).where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function revokeToken(db: Db, tokenHash: string, now: number): Promise<void> {
  await db.updateTable('tokens').set({ revoked_at: now }).where('token_hash', '=', tokenHash).where('revoked_at', 'is', null).execute();
}

export async function revokeAccountTokens(db: Db, accountId: string, now: number): Promise<number> {
  const r = await db
    .updateTable('tokens')
    .set({ revoked_at: now })
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Drops tokens that expired or were revoked more than a day ago. */
export async function purgeDeadTokens(db: Db, now: number): Promise<void> {
  const day = 86_400_000;
  await db
    .deleteFrom('tokens')
    .where((eb) => eb.or([eb('expires_at', '<', now - day), eb('revoked_at', '<', now - day)]))
    .execute();
}
