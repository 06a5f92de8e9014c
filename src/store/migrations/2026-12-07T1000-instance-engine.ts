import { type Kysely, sql } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * The product an instance runs (`engine`): a service may be served by several (Redis or Valkey).
 * Instances made before the choice existed run their service's first product: redis, mongod,
 * elasticsearch. Capacity checks count memory per engine too (products of one service may promise
 * different memory for one plan), so the placement index gains the column.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('engine', 'text', (c) => c.notNull().defaultTo('redis'))
    .execute();
  await sql`update instances set engine = case service when 'mongodb' then 'mongod' when 'elasticsearch' then 'elasticsearch' else 'redis' end`.execute(
    db,
  );
  await db.schema.dropIndex('instances_placement').execute();
  await db.schema
    .createIndex('instances_placement')
    .on('instances')
    .columns(['zone', 'service', 'engine', 'type', 'plan', 'desired_plan'])
    .execute();
}
