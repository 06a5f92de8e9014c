import { errors } from '../domain/errors.js';
import type { Db } from '../store/database.js';
import {
  completeIdempotencyKey,
  findIdempotencyKey,
  purgeIdempotencyKeys,
  releaseIdempotencyKey,
  reserveIdempotencyKey,
} from '../store/idempotency-repository.js';

/** How long a key and its answer are kept. */
const KEEP_MS = 24 * 3_600_000;
/** A reservation without an answer this old belongs to a request that died (requests end within 30 s). */
const ABANDONED_MS = 60_000;
/** How often a reservation also drops expired keys. */
const PURGE_EVERY_MS = 3_600_000;

/** What a request carrying a key is to do: run (it reserved the key), or give the first answer again. */
export type Reservation =
  | { readonly kind: 'reserved' }
  | { readonly kind: 'replay'; readonly statusCode: number; readonly body: string; readonly operationId?: string };

/**
 * Idempotency keys: the first request with a key reserves it and its answer is recorded; a repeat
 * with the same key and the same request gets that answer again and does nothing; the same key
 * with another request is a 409, and so is a repeat while the first is still running. Keys belong
 * to the account and expire after 24 hours.
 */
export class IdempotencyService {
  private lastPurge = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /** Reserves `key` for the request hashed `hash`, or says which answer to give again. */
  async reserve(accountId: string, key: string, hash: string): Promise<Reservation> {
    const now = this.now();
    if (now - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = now;
      await purgeIdempotencyKeys(this.db, now - KEEP_MS);
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await reserveIdempotencyKey(this.db, accountId, key, hash, now)) return { kind: 'reserved' };
      const first = await findIdempotencyKey(this.db, accountId, key);
      if (!first) continue; // released meanwhile: reserve again
      if (first.statusCode === undefined && first.createdAt < now - ABANDONED_MS) {
        // reserved by a process that died before answering: the key is free again
        await releaseIdempotencyKey(this.db, accountId, key, now - ABANDONED_MS);
        continue;
      }
      if (first.requestHash !== hash) throw errors.idempotencyConflict();
      if (first.statusCode !== undefined) {
        return {
          kind: 'replay',
          statusCode: first.statusCode,
          body: first.response ?? '',
          ...(first.operationId ? { operationId: first.operationId } : {}),
        };
      }
      throw errors.idempotencyInUse();
    }
    throw errors.idempotencyInUse();
  }

  /** Records the answer of the request that reserved `key` (and the operation it started). */
  complete(accountId: string, key: string, statusCode: number, body: string, operationId?: string): Promise<void> {
    return completeIdempotencyKey(this.db, accountId, key, statusCode, body, operationId);
  }

  /** Frees `key` (the request failed with a 5xx: a retry runs it again). */
  async release(accountId: string, key: string): Promise<void> {
    await releaseIdempotencyKey(this.db, accountId, key);
  }
}
