import type { Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * What platform teams change after an instance exists:
 * - `acls.expires_at`: an ACL that stops admitting at that time (epoch ms; null: never);
 * - `instances.password_prior_enc` / `password_rotation_ends_at`: the instance password a
 *   rotation replaced, accepted until the end of its grace period;
 * - `redis_users`: application users of a Redis instance (Redis ACL users), their passwords
 *   sealed like the instance's, with the one a rotation replaced;
 * - `redis_settings`: the Redis settings a tenant chose from hangar's allow-list.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('acls').addColumn('expires_at', 'bigint').execute();
  await db.schema.alterTable('instances').addColumn('password_prior_enc', 'text').execute();
  await db.schema.alterTable('instances').addColumn('password_rotation_ends_at', 'bigint').execute();

  await db.schema
    .createTable('redis_users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('password_enc', 'text', (c) => c.notNull())
    .addColumn('password_prior_enc', 'text')
    .addColumn('rotation_ends_at', 'bigint')
    /** JSON arrays: key patterns, channel patterns, command rules (`+@read`, `-keys`). */
    .addColumn('keys', 'text', (c) => c.notNull())
    .addColumn('channels', 'text', (c) => c.notNull())
    .addColumn('commands', 'text', (c) => c.notNull())
    .addColumn('deleting', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('redis_users_identity', ['instance_id', 'username'])
    .execute();

  await db.schema
    .createTable('redis_settings')
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('redis_settings_pk', ['instance_id', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('redis_settings').ifExists().execute();
  await db.schema.dropTable('redis_users').ifExists().execute();
  await db.schema.alterTable('instances').dropColumn('password_rotation_ends_at').execute();
  await db.schema.alterTable('instances').dropColumn('password_prior_enc').execute();
  await db.schema.alterTable('acls').dropColumn('expires_at').execute();
}
