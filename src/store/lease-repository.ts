import { sql } from 'kysely';
import type { Db } from './database.js';
import { isUniqueViolation } from './errors.js';

/**
 * Acquires or renews the named lease for `owner` until `now + ttlMs`. Succeeds when the lease
 * is free, expired, or already held by `owner`. True when `owner` holds it afterwards.
 */
export async function acquireLease(db: Db, name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('leases')
    .set({ owner, expires_at: now + ttlMs })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('owner', '=', owner), eb('expires_at', '<', now)]))
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) > 0) return true;
  try {
    await db
      .insertInto('leases')
      .values({ name, owner, expires_at: now + ttlMs })
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/**
 * Takes the named lease over from `from`, a holder known to be dead (its lease has not expired
 * yet). Only succeeds while `from` still holds it, so of several replicas taking over at once
 * exactly one wins. True when `owner` holds it afterwards.
 */
export async function takeLease(db: Db, name: string, from: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('leases')
    .set({ owner, expires_at: now + ttlMs })
    .where('name', '=', name)
    .where('owner', '=', from)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function releaseLease(db: Db, name: string, owner: string): Promise<void> {
  await db.deleteFrom('leases').where('name', '=', name).where('owner', '=', owner).execute();
}

/** Leases whose name starts with `prefix` and ends with `suffix`, held now (not expired). */
export function listLiveLeases(db: Db, prefix: string, suffix: string, now: number) {
  return db.selectFrom('leases').selectAll().where('name', 'like', `${prefix}%${suffix}`).where('expires_at', '>=', now).execute();
}

export function findLease(db: Db, name: string) {
  return db.selectFrom('leases').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function getMeta(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

export async function setMeta(db: Db, key: string, value: string): Promise<void> {
  await db
    .insertInto('meta')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: sql`excluded.value` }))
    .execute();
}
