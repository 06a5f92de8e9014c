import type { Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * What capacity checks read on every create and resize (the instances of a zone, counted by
 * service, type and plans) from an index that holds all of it: the aggregate reads the index
 * in group order, without the table and without sorting.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('instances_placement').on('instances').columns(['zone', 'service', 'type', 'plan', 'desired_plan']).execute();
}
