import { newObjectId, randomHex } from '../lib/ids.js';
import { DUMMY_HASH, hashSecret, hashToken, newToken, verifySecret } from '../lib/passwords.js';
import {
  countApiKeys,
  deleteApiKey,
  deleteApiKeyById,
  findAccountById,
  findAccountByLogin,
  findApiKey,
  findLiveToken,
  findTokenState,
  insertAccount,
  insertApiKey,
  insertToken,
  listApiKeys,
  purgeDeadTokens,
  revokeAccountTokens,
  revokeToken,
  touchApiKey,
} from '../store/account-repository.js';
import type { Db } from '../store/database.js';
import { isUniqueViolation } from '../store/errors.js';
import type { Caller } from './deps.js';
import { HangarError, errors } from '../domain/errors.js';

/** Account passwords shorter than this are refused. */
export const MIN_PASSWORD_LENGTH = 12;

/** Key pairs an account may have at once (the HTTP API refuses more with QUOTA_EXCEEDED). */
export const MAX_API_KEYS = 100;

/** A key pair as listed: never its secret. */
export interface ApiKeyInfo {
  readonly id: string;
  readonly userKey: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

/** How long a verified credential is trusted without asking the store again. */
const CACHE_MS = 5000;

/** How often token issuing also drops tokens dead for more than a day. */
const PURGE_EVERY_MS = 3_600_000;

export interface AuthenticatedCaller extends Caller {
  /** The token in use, when the caller sent one. */
  readonly tokenHash?: string;
  readonly tokenExpiresAt?: number;
  readonly accountCreatedAt: number;
  /** What the caller authenticated with, and its id (a token's id, a key pair's user_key): who requested an operation. */
  readonly credential?: 'token' | 'password' | 'api_key';
  readonly credentialId?: string;
}

export interface AccountServiceOptions {
  readonly tokenTtlSeconds: number;
  readonly now: () => number;
}

/**
 * Accounts, API key pairs and tokens. Passwords and key secrets are kept as scrypt hashes,
 * tokens as SHA-256 hashes (they carry 256 random bits). Verified tokens and Basic credentials
 * are cached for a few seconds so that authentication costs nothing on the hot path.
 */
export class AccountService {
  private readonly cache = new Map<string, { caller: AuthenticatedCaller; until: number }>();
  private lastPurge = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Db,
    private readonly opts: AccountServiceOptions,
  ) {}

  async createAccount(login: string, password: string): Promise<{ id: string; login: string; created_at: number }> {
    assertLogin(login);
    assertAccountPassword(password);
    const id = newObjectId();
    const createdAt = this.opts.now();
    try {
      await insertAccount(this.db, { id, login, passwordHash: await hashSecret(password), createdAt });
    } catch (err) {
      if (isUniqueViolation(err)) throw errors.loginTaken(login);
      throw err;
    }
    return { id, login, created_at: createdAt };
  }

  /** Creates the account unless it exists; true when it was created. */
  async ensureAccount(login: string, password: string): Promise<boolean> {
    if (await findAccountByLogin(this.db, login)) return false;
    try {
      await this.createAccount(login, password);
      return true;
    } catch (err) {
      if (err instanceof HangarError && err.code === 'LOGIN_TAKEN') return false;
      throw err;
    }
  }

  async accountByLogin(login: string) {
    const account = await findAccountByLogin(this.db, login);
    if (!account) throw errors.accountNotFound(login);
    return account;
  }

  /** A new key pair; the secret is shown once and stored only as a hash. */
  async createApiKey(login: string): Promise<{ id: string; user_key: string; pass_key: string; created_at: number }> {
    const account = await this.accountByLogin(login);
    const key = await this.insertKey(account.id);
    return { id: key.id, user_key: key.userKey, pass_key: key.passKey, created_at: key.createdAt };
  }

  private async insertKey(accountId: string): Promise<ApiKeyInfo & { passKey: string }> {
    const id = newObjectId();
    const userKey = randomHex(16);
    const passKey = randomHex(24);
    const createdAt = this.opts.now();
    await insertApiKey(this.db, { id, accountId, userKey, secretHash: await hashSecret(passKey), createdAt });
    return { id, userKey, passKey, createdAt, lastUsedAt: null };
  }

  // The caller's own key pairs (the HTTP API): another account's key is not found, as a missing one.

  /** A new key pair of the caller's account; `passKey` is shown this once. */
  async createOwnApiKey(caller: Caller): Promise<ApiKeyInfo & { passKey: string }> {
    if ((await countApiKeys(this.db, caller.accountId)) >= MAX_API_KEYS) throw errors.quotaExceeded('API keys per account', MAX_API_KEYS);
    return this.insertKey(caller.accountId);
  }

  async listOwnApiKeys(caller: Caller): Promise<ApiKeyInfo[]> {
    const rows = await listApiKeys(this.db, caller.accountId);
    return rows.map((r) => ({
      id: r.id,
      userKey: r.user_key,
      createdAt: Number(r.created_at),
      lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
    }));
  }

  /** Deletes one of the caller's key pairs; credentials cached from it stop working at once. */
  async deleteOwnApiKey(caller: Caller, id: string): Promise<void> {
    if (!(await deleteApiKeyById(this.db, caller.accountId, id))) throw errors.apiKeyNotFound(caller.login, id);
    this.cache.clear();
  }

  async listApiKeys(login: string) {
    const account = await this.accountByLogin(login);
    return listApiKeys(this.db, account.id);
  }

  async deleteApiKey(login: string, userKey: string): Promise<void> {
    const account = await this.accountByLogin(login);
    if (!(await deleteApiKey(this.db, account.id, userKey))) {
      throw errors.apiKeyNotFound(login, userKey);
    }
    this.cache.clear();
  }

  /**
   * Checks HTTP Basic credentials: an API key pair (user_key:pass_key) or a login and password.
   * Undefined when they are wrong; the time taken does not tell which part was.
   */
  async verifyBasic(user: string, secret: string): Promise<AuthenticatedCaller | undefined> {
    const cacheKey = `b:${hashToken(`${user}\u0000${secret}`)}`;
    const hit = this.cached(cacheKey);
    if (hit) return hit;
    let caller: AuthenticatedCaller | undefined;
    const key = await findApiKey(this.db, user);
    if (key) {
      if (await verifySecret(secret, key.secret_hash)) {
        caller = {
          accountId: key.account_id,
          login: key.login,
          accountCreatedAt: key.created_at,
          credential: 'api_key',
          credentialId: user,
        };
        await touchApiKey(this.db, key.id, this.opts.now());
      }
    } else {
      const account = await findAccountByLogin(this.db, user);
      const ok = await verifySecret(secret, account?.password_hash ?? DUMMY_HASH);
      if (account && ok)
        caller = { accountId: account.id, login: account.login, accountCreatedAt: account.created_at, credential: 'password' };
    }
    if (caller) this.cache.set(cacheKey, { caller, until: this.opts.now() + CACHE_MS });
    return caller;
  }

  async issueToken(caller: Caller): Promise<{ token: string; expiresAt: number }> {
    const token = newToken();
    const now = this.opts.now();
    const expiresAt = now + this.opts.tokenTtlSeconds * 1000;
    await insertToken(this.db, {
      id: newObjectId(now),
      accountId: caller.accountId,
      tokenHash: hashToken(token),
      createdAt: now,
      expiresAt,
    });
    // Every login adds a row: drop the dead ones now and then, so the table does not grow forever.
    if (now - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = now;
      await purgeDeadTokens(this.db, now);
    }
    return { token, expiresAt };
  }

  /** The caller a token belongs to, or undefined when it is unknown, expired or revoked. */
  /**
   * The caller of a token verified within the cache period (and not revoked here since), without
   * the store; undefined when it must be verified (verifyToken).
   */
  cachedTokenCaller(token: string): AuthenticatedCaller | undefined {
    if (token.length === 0 || token.length > 512) return undefined;
    return this.cached(`t:${hashToken(token)}`);
  }

  async verifyToken(token: string): Promise<AuthenticatedCaller | undefined> {
    if (token.length === 0 || token.length > 512) return undefined;
    const tokenHash = hashToken(token);
    const cacheKey = `t:${tokenHash}`;
    const hit = this.cached(cacheKey);
    if (hit) return hit;
    const now = this.opts.now();
    const row = await findLiveToken(this.db, tokenHash, now);
    if (!row) return undefined;
    const caller: AuthenticatedCaller = {
      accountId: row.account_id,
      login: row.login,
      tokenHash,
      tokenExpiresAt: row.expires_at,
      accountCreatedAt: row.created_at,
      credential: 'token',
      credentialId: row.id,
    };
    this.cache.set(cacheKey, { caller, until: Math.min(now + CACHE_MS, row.expires_at) });
    return caller;
  }

  /**
   * The 401 of a token verifyToken refused, saying why: when it expired, or was revoked, or that
   * it is unknown. A dead token is kept a day (purgeDeadTokens), so for a day it is told apart;
   * only its holder can ask, and a token is 256 random bits, so that tells no one anything new.
   */
  async tokenRefusal(token: string): Promise<HangarError> {
    if (token.length === 0 || token.length > 512) return errors.tokenUnknown();
    const row = await findTokenState(this.db, hashToken(token));
    if (row?.revoked_at != null) return errors.tokenRevoked(row.revoked_at);
    if (row && row.expires_at <= this.opts.now()) return errors.tokenExpired(row.expires_at);
    return errors.tokenUnknown();
  }

  /**
   * Whether what the caller authenticated with still holds, read from the store (no cache): the
   * token is live (not revoked, not expired), the key pair exists, the account exists. For long
   * requests (the event stream) that must end when their credentials do.
   */
  async stillValid(caller: AuthenticatedCaller): Promise<boolean> {
    const now = this.opts.now();
    if (caller.tokenHash !== undefined) return (await findLiveToken(this.db, caller.tokenHash, now)) !== undefined;
    if (caller.credential === 'api_key' && caller.credentialId !== undefined) {
      const key = await findApiKey(this.db, caller.credentialId);
      return key !== undefined && key.account_id === caller.accountId;
    }
    return (await findAccountById(this.db, caller.accountId)) !== undefined;
  }

  async revokeToken(tokenHash: string): Promise<void> {
    await revokeToken(this.db, tokenHash, this.opts.now());
    this.cache.delete(`t:${tokenHash}`);
  }

  /** Revokes every token of the account; returns how many were live. */
  async revokeAllTokens(login: string): Promise<number> {
    const account = await this.accountByLogin(login);
    const n = await revokeAccountTokens(this.db, account.id, this.opts.now());
    this.cache.clear();
    return n;
  }

  /** The account a Basic user name (a login or a key id) belongs to, if any. */
  async accountIdOf(user: string): Promise<string | undefined> {
    if (user.length === 0 || user.length > 254) return undefined;
    const key = await findApiKey(this.db, user);
    if (key) return key.account_id;
    return (await findAccountByLogin(this.db, user))?.id;
  }

  async accountById(id: string) {
    return findAccountById(this.db, id);
  }

  private cached(key: string): AuthenticatedCaller | undefined {
    const hit = this.cache.get(key);
    if (!hit) return undefined;
    if (hit.until > this.opts.now()) return hit.caller;
    this.cache.delete(key);
    return undefined;
  }
}

export function assertLogin(login: string): void {
  if (!/^[^\s:\x00-\x1f\x7f]{1,254}$/.test(login)) {
    throw errors.invalidValue(
      'login',
      'the login must be 1 to 254 characters without spaces, control characters or ":" (usually an e-mail address)',
    );
  }
}

export function assertAccountPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
    throw errors.invalidValue('password', `the password must be ${MIN_PASSWORD_LENGTH} to 1024 characters`);
  }
}
