import type { Keyring } from '../lib/secrets.js';
import type { RedisUser } from '../domain/model.js';
import type { Db, RedisUserRow } from './database.js';
import { isUniqueViolation } from './errors.js';

function toRedisUser(row: RedisUserRow, keyring: Keyring): RedisUser {
  return {
    id: row.id,
    instanceId: row.instance_id,
    username: row.username,
    password: keyring.decrypt(row.password_enc),
    passwordPrior: row.password_prior_enc === null ? null : keyring.decrypt(row.password_prior_enc),
    rotationEndsAt: row.rotation_ends_at === null ? null : Number(row.rotation_ends_at),
    keys: JSON.parse(row.keys) as string[],
    channels: JSON.parse(row.channels) as string[],
    commands: JSON.parse(row.commands) as string[],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    deleting: row.deleting === 1,
  };
}

export interface NewRedisUser {
  readonly id: string;
  readonly instanceId: string;
  readonly username: string;
  readonly password: string;
  readonly keys: readonly string[];
  readonly channels: readonly string[];
  readonly commands: readonly string[];
  readonly now: number;
}

/** Inserts a user, its password sealed; false when one of that name exists (or is still being removed). */
export async function insertRedisUser(db: Db, keyring: Keyring, u: NewRedisUser): Promise<boolean> {
  try {
    await db
      .insertInto('redis_users')
      .values({
        id: u.id,
        instance_id: u.instanceId,
        username: u.username,
        password_enc: keyring.encrypt(u.password),
        password_prior_enc: null,
        rotation_ends_at: null,
        keys: JSON.stringify(u.keys),
        channels: JSON.stringify(u.channels),
        commands: JSON.stringify(u.commands),
        deleting: 0,
        created_at: u.now,
        updated_at: u.now,
      })
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** The users of an instance, passwords unsealed; `withDeleting` includes those being removed (what a pass applies). */
export async function listRedisUsers(db: Db, keyring: Keyring, instanceId: string, withDeleting = false): Promise<RedisUser[]> {
  let q = db.selectFrom('redis_users').selectAll().where('instance_id', '=', instanceId);
  if (!withDeleting) q = q.where('deleting', '=', 0);
  const rows = await q.orderBy('username').execute();
  return rows.map((r) => toRedisUser(r, keyring));
}

/** One user (not being removed), or undefined. */
export async function findRedisUser(db: Db, keyring: Keyring, instanceId: string, username: string): Promise<RedisUser | undefined> {
  const row = await db
    .selectFrom('redis_users')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('username', '=', username)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return row && toRedisUser(row, keyring);
}

/** Records a change of a user; a new password ends any rotation in progress. False when the user is gone. */
export async function updateRedisUser(
  db: Db,
  keyring: Keyring,
  id: string,
  patch: { password?: string; keys?: readonly string[]; channels?: readonly string[]; commands?: readonly string[] },
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('redis_users')
    .set({
      ...(patch.password !== undefined
        ? { password_enc: keyring.encrypt(patch.password), password_prior_enc: null, rotation_ends_at: null }
        : {}),
      ...(patch.keys !== undefined ? { keys: JSON.stringify(patch.keys) } : {}),
      ...(patch.channels !== undefined ? { channels: JSON.stringify(patch.channels) } : {}),
      ...(patch.commands !== undefined ? { commands: JSON.stringify(patch.commands) } : {}),
      updated_at: now,
    })
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Starts a rotation: `password` becomes the user's password, the current one stays accepted
 * until `endsAt`. False when a rotation is in progress already (or the user is gone).
 */
export async function startRedisUserRotation(
  db: Db,
  keyring: Keyring,
  user: RedisUser,
  password: string,
  endsAt: number,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('redis_users')
    .set({
      password_enc: keyring.encrypt(password),
      password_prior_enc: keyring.encrypt(user.password),
      rotation_ends_at: endsAt,
      updated_at: now,
    })
    .where('id', '=', user.id)
    .where('deleting', '=', 0)
    .where('password_prior_enc', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Retires the password a rotation replaced; false when no rotation was in progress. */
export async function finishRedisUserRotation(db: Db, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('redis_users')
    .set({ password_prior_enc: null, rotation_ends_at: null, updated_at: now })
    .where('id', '=', id)
    .where('password_prior_enc', 'is not', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Ends the rotations whose grace period is over at `now`; returns the names of those users. */
export async function endDueRedisUserRotations(db: Db, instanceId: string, now: number): Promise<string[]> {
  const rows = await db
    .selectFrom('redis_users')
    .select(['id', 'username'])
    .where('instance_id', '=', instanceId)
    .where('rotation_ends_at', '<=', now)
    .execute();
  if (rows.length === 0) return [];
  await db
    .updateTable('redis_users')
    .set({ password_prior_enc: null, rotation_ends_at: null, updated_at: now })
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .execute();
  return rows.map((r) => r.username);
}

export async function markRedisUserDeleting(db: Db, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('redis_users')
    .set({ deleting: 1, updated_at: now })
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Drops the rows of users the engines no longer have. */
export async function purgeDeletedRedisUsers(db: Db, instanceId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('redis_users').where('instance_id', '=', instanceId).where('id', 'in', ids).where('deleting', '=', 1).execute();
}

/** The settings a tenant chose for a Redis instance, by name. */
export async function listRedisSettings(db: Db, instanceId: string): Promise<Record<string, string>> {
  const rows = await db
    .selectFrom('redis_settings')
    .select(['name', 'value'])
    .where('instance_id', '=', instanceId)
    .orderBy('name')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

/** Records settings (inserted or replaced). */
export async function putRedisSettings(db: Db, instanceId: string, values: Readonly<Record<string, string>>, now: number): Promise<void> {
  for (const [name, value] of Object.entries(values)) {
    await db
      .insertInto('redis_settings')
      .values({ instance_id: instanceId, name, value, updated_at: now })
      .onConflict((oc) => oc.columns(['instance_id', 'name']).doUpdateSet({ value, updated_at: now }))
      .execute();
  }
}
