import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/** Columns of `instances` that instance records show; changing one changes the account's version. */
const RECORD_COLUMNS = [
  'account_id',
  'name',
  'service',
  'type',
  'version',
  'zone',
  'plan',
  'encrypted',
  'api_key_enc',
  'password_enc',
  'state',
  'state_reason',
  'ports',
  'created_at',
];

/**
 * A version per account that the store itself moves on every insert, delete, and update of a
 * shown column of the account's instances (triggers, so no write path can forget it, whichever
 * replica writes). A reader that saw version v and finds v again knows none of the account's
 * instance records changed, and may answer from what it rendered then.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('instance_list_versions')
    .addColumn('account_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  const columns = sql.raw(RECORD_COLUMNS.join(', '));
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`
      CREATE OR REPLACE FUNCTION hangar_instance_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO instance_list_versions (account_id, version)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END, 1)
        ON CONFLICT (account_id) DO UPDATE SET version = instance_list_versions.version + 1;
        RETURN NULL;
      END
      $$`.execute(db);
    await sql`
      CREATE TRIGGER instances_list_version AFTER INSERT OR DELETE OR UPDATE OF ${columns} ON instances
      FOR EACH ROW EXECUTE FUNCTION hangar_instance_list_version()`.execute(db);
    return;
  }
  const bump = (account: 'NEW' | 'OLD') =>
    sql.raw(`INSERT INTO instance_list_versions (account_id, version) VALUES (${account}.account_id, 1)
      ON CONFLICT (account_id) DO UPDATE SET version = version + 1;`);
  await sql`CREATE TRIGGER instances_list_version_insert AFTER INSERT ON instances BEGIN ${bump('NEW')} END`.execute(db);
  await sql`CREATE TRIGGER instances_list_version_delete AFTER DELETE ON instances BEGIN ${bump('OLD')} END`.execute(db);
  await sql`CREATE TRIGGER instances_list_version_update AFTER UPDATE OF ${columns} ON instances BEGIN ${bump('NEW')} END`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`DROP TRIGGER IF EXISTS instances_list_version ON instances`.execute(db);
    await sql`DROP FUNCTION IF EXISTS hangar_instance_list_version()`.execute(db);
  } else {
    for (const t of ['insert', 'delete', 'update']) await sql.raw(`DROP TRIGGER IF EXISTS instances_list_version_${t}`).execute(db);
  }
  await db.schema.dropTable('instance_list_versions').ifExists().execute();
}
