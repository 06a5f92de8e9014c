import { type Kysely, sql } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * Switching an instance's engine in place (Redis to Valkey):
 * - `instances.desired_engine`, `desired_version`: the engine and version asked for; they differ
 *   from `engine` and `version` while a switch runs (as `desired_plan` from `plan` in a resize);
 * - `backups.engine`: the product that took the backup (a backup of Valkey is not restored into
 *   Redis). Backups made before are of their instance's engine when it still exists (no switch
 *   existed), else of their service's first product.
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
  await db.schema
    .alterTable('backups')
    .addColumn('engine', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await sql`update backups set engine = coalesce(
    (select i.engine from instances i where i.id = backups.instance_id),
    case service when 'mongodb' then 'mongod' when 'elasticsearch' then 'elasticsearch' else 'redis' end
  )`.execute(db);
}
