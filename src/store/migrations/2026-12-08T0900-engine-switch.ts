import { type Kysely, sql } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * Switching an instance's engine in place (Redis to Valkey):
 * - `instances.desired_engine`, `desired_version`: the engine and version asked for; they differ
 *   from `engine` and `version` while a switch runs (as `desired_plan` from `plan` in a resize);
 * - `backups.engine`: the product that took the backup (a backup of Valkey is not restored into
 *   Redis). Those made before are of their instance's engine while the instance exists (no switch
 *   existed); of an instance deleted since, it is not known (null): Valkey's RDB files and Redis's,
 *   Elasticsearch's snapshots and OpenSearch's, have the same format.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('desired_engine', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('instances')
    .addColumn('desired_version', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await sql`update instances set desired_engine = engine, desired_version = version`.execute(db);
  await db.schema.alterTable('backups').addColumn('engine', 'text').execute();
  await sql`update backups set engine = (select i.engine from instances i where i.id = backups.instance_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('backups').dropColumn('engine').execute();
  await db.schema.alterTable('instances').dropColumn('desired_version').execute();
  await db.schema.alterTable('instances').dropColumn('desired_engine').execute();
}
