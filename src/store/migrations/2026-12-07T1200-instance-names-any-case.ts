import { sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * Instance names are unique in an account regardless of case (`MyCache` and `mycache` cannot
 * both exist): a unique index on the account and the lower-cased name. Names are ASCII, which
 * `lower` folds alike on SQLite and PostgreSQL.
 *
 * Instances that already share a name but for its case are kept as they are, so that no start
 * fails and no client loses the name it knows: in each such group the oldest keeps the rule and
 * the others are marked `case_duplicate`, which the index leaves out (it is partial). A marked
 * instance joins the rule when it is renamed; while it is marked, no new instance can take its
 * name in any case either, since the oldest of its group holds it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('case_duplicate', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`
    UPDATE instances SET case_duplicate = 1
    WHERE EXISTS (
      SELECT 1 FROM instances older
      WHERE older.account_id = instances.account_id
        AND lower(older.name) = lower(instances.name)
        AND (older.created_at < instances.created_at OR (older.created_at = instances.created_at AND older.id < instances.id))
    )`.execute(db);
  await sql`
    CREATE UNIQUE INDEX instances_account_name_any_case ON instances (account_id, lower(name))
    WHERE case_duplicate = 0`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS instances_account_name_any_case`.execute(db);
  await db.schema.alterTable('instances').dropColumn('case_duplicate').execute();
}
