import { sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * Backups, restores and backup policies. None of them references `instances`: a deleted
 * instance's backups (and the policy whose retention prunes them) outlive it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('instance_name', 'text', (c) => c.notNull())
    .addColumn('service', 'text', (c) => c.notNull())
    .addColumn('engine_version', 'text', (c) => c.notNull())
    .addColumn('zone', 'text', (c) => c.notNull())
    .addColumn('plan', 'integer', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('step', 'text')
    .addColumn('scheduled', 'integer', (c) => c.notNull())
    .addColumn('storage_key', 'text', (c) => c.notNull())
    .addColumn('location', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('used_bytes', 'bigint')
    .addColumn('data_key_enc', 'text', (c) => c.notNull())
    .addColumn('requested_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .execute();
  await db.schema.createIndex('backups_instance').on('backups').columns(['instance_id', 'requested_at']).execute();
  await db.schema.createIndex('backups_state').on('backups').column('state').execute();
  // At most one backup of an instance in the making: the store refuses a second one, so two
  // requests (or a request and the scheduler, on two replicas) cannot both start one.
  await sql`CREATE UNIQUE INDEX backups_one_active ON backups (instance_id) WHERE state IN ('PENDING', 'RUNNING')`.execute(db);

  await db.schema
    .createTable('restores')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('instance_name', 'text', (c) => c.notNull())
    .addColumn('backup_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('step', 'text')
    .addColumn('requested_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('restores_instance').on('restores').columns(['instance_id', 'requested_at']).execute();
  await sql`CREATE UNIQUE INDEX restores_one_active ON restores (instance_id) WHERE state IN ('PENDING', 'RUNNING')`.execute(db);

  await db.schema
    .createTable('backup_policies')
    .addColumn('instance_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('schedule', 'text', (c) => c.notNull())
    .addColumn('every_hours', 'integer')
    .addColumn('daily_minute', 'integer')
    .addColumn('keep_last', 'integer')
    .addColumn('keep_days', 'integer')
    .addColumn('next_run_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('backup_policies_next_run').on('backup_policies').column('next_run_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('backup_policies').execute();
  await db.schema.dropTable('restores').execute();
  await db.schema.dropTable('backups').execute();
}
