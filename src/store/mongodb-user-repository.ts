import type { Keyring } from '../lib/secrets.js';
import type { MongoRole, MongoUser } from '../domain/model.js';
import type { Db, MongodbUserRow } from './database.js';
import { isUniqueViolation } from './errors.js';

function toMongoUser(row: MongodbUserRow, keyring: Keyring): MongoUser {
  return {
    id: row.id,
    instanceId: row.instance_id,
    database: row.database_name,
    username: row.username,
    password: keyring.decrypt(row.password_enc),
    roles: JSON.parse(row.roles) as MongoRole[],
    specVersion: row.spec_version,
    appliedVersion: row.applied_version,
    deleting: row.deleting === 1,
  };
}

/** Inserts a user to create on the engine, its password sealed; false when it exists (or is still being deleted). */
export async function insertMongoUser(
  db: Db,
  keyring: Keyring,
  u: { id: string; instanceId: string; database: string; username: string; password: string; roles: readonly MongoRole[]; now: number },
): Promise<boolean> {
  try {
    await db
      .insertInto('mongodb_users')
      .values({
        id: u.id,
        instance_id: u.instanceId,
        database_name: u.database,
        username: u.username,
        password_enc: keyring.encrypt(u.password),
        roles: JSON.stringify(u.roles),
        spec_version: 1,
        applied_version: 0,
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

/** Every user of an instance (those being dropped too), passwords unsealed: what a pass applies. */
export async function listMongoUsers(db: Db, keyring: Keyring, instanceId: string): Promise<MongoUser[]> {
  const rows = await db
    .selectFrom('mongodb_users')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('database_name')
    .orderBy('username')
    .execute();
  return rows.map((r) => toMongoUser(r, keyring));
}

/** The users of one database of an instance with their roles (no password is read). */
export async function listMongoUserRoles(db: Db, instanceId: string, database: string): Promise<{ name: string; roles: MongoRole[] }[]> {
  const rows = await db
    .selectFrom('mongodb_users')
    .select(['username', 'roles'])
    .where('instance_id', '=', instanceId)
    .where('database_name', '=', database)
    .where('deleting', '=', 0)
    .orderBy('username')
    .execute();
  return rows.map((r) => ({ name: r.username, roles: JSON.parse(r.roles) as MongoRole[] }));
}

/** The id of a user (not being dropped), or undefined. */
export async function findMongoUserId(db: Db, instanceId: string, database: string, username: string): Promise<string | undefined> {
  const r = await db
    .selectFrom('mongodb_users')
    .select('id')
    .where('instance_id', '=', instanceId)
    .where('database_name', '=', database)
    .where('username', '=', username)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return r?.id;
}

/** Records a new password and/or role list to apply; false when the user does not exist. */
export async function updateMongoUser(
  db: Db,
  keyring: Keyring,
  id: string,
  patch: { password?: string; roles?: readonly MongoRole[] },
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('mongodb_users')
    .set((eb) => ({
      ...(patch.password !== undefined ? { password_enc: keyring.encrypt(patch.password) } : {}),
      ...(patch.roles !== undefined ? { roles: JSON.stringify(patch.roles) } : {}),
      spec_version: eb('spec_version', '+', 1),
      updated_at: now,
    }))
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function markMongoUserDeleting(db: Db, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('mongodb_users')
    .set({ deleting: 1, updated_at: now })
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records that the engine holds the user at `version` (only if nothing newer was asked since). */
export async function markMongoUserApplied(db: Db, id: string, version: number): Promise<void> {
  await db
    .updateTable('mongodb_users')
    .set({ applied_version: version })
    .where('id', '=', id)
    .where('spec_version', '=', version)
    .execute();
}

export async function deleteMongoUserRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('mongodb_users').where('id', '=', id).where('deleting', '=', 1).execute();
}
