import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/** The record columns of the earlier migrations, and the TLS ones, which records now show too. */
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
  'address',
  'tls_mode',
  'tls_client_auth',
];

/**
 * How clients reach an instance over TLS: `tls_mode` (`off`, `preferred`, `required`) and
 * `tls_client_auth` (mutual TLS, 1). Instances made before the choice existed are `preferred`:
 * their plain listeners stay as they were, and a TLS listener beside each is added (its port is
 * allocated by the instance's next pass). Their changes move the account's record version like
 * the other shown columns.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('tls_mode', 'text', (c) => c.notNull().defaultTo('preferred'))
    .execute();
  await db.schema
    .alterTable('instances')
    .addColumn('tls_client_auth', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await recordVersionTrigger(db, RECORD_COLUMNS);
}

/** Back to the schema before: the trigger on the columns it had (SQLite drops no column a trigger names), then the columns. */
export async function down(db: Kysely<any>): Promise<void> {
  await recordVersionTrigger(
    db,
    RECORD_COLUMNS.filter((c) => !c.startsWith('tls_')),
  );
  await db.schema.alterTable('instances').dropColumn('tls_client_auth').execute();
  await db.schema.alterTable('instances').dropColumn('tls_mode').execute();
}

/** The trigger that moves the account's record version when one of `recordColumns` changes. */
async function recordVersionTrigger(db: Kysely<any>, recordColumns: readonly string[]): Promise<void> {
  const columns = sql.raw(recordColumns.join(', '));
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`DROP TRIGGER IF EXISTS instances_list_version ON instances`.execute(db);
    await sql`
      CREATE TRIGGER instances_list_version AFTER INSERT OR DELETE OR UPDATE OF ${columns} ON instances
      FOR EACH ROW EXECUTE FUNCTION hangar_instance_list_version()`.execute(db);
    return;
  }
  await sql`DROP TRIGGER IF EXISTS instances_list_version_update`.execute(db);
  await sql`CREATE TRIGGER instances_list_version_update AFTER UPDATE OF ${columns} ON instances BEGIN
    INSERT INTO instance_list_versions (account_id, version) VALUES (NEW.account_id, 1)
    ON CONFLICT (account_id) DO UPDATE SET version = version + 1; END`.execute(db);
}
