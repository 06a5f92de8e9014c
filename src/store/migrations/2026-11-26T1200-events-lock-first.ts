import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * The advisory lock of the events (EVENTS_LOCK of store/event-repository.ts), written here as
 * the number it was when this shipped: a migration imports nothing of the live code, which
 * changes (and imported the store back, a cycle). The SQL is the same as before.
 */
const EVENTS_LOCK = 111559182283891;

/**
 * PostgreSQL: every statement that writes `instances` takes the events lock before it locks a
 * row. The row triggers of 2026-11-26T0900 took it after the row (they run once the row is
 * written), while a request's transaction takes it first (its operation's event) and the row
 * after: a reconciler's state change and a DELETE or rename of the same instance then waited for
 * each other, and PostgreSQL ended one with "deadlock detected" (a 500). A statement trigger
 * runs before any row is touched, so every writer now takes the two locks in one order. SQLite
 * has one writer at a time and needs nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`
    CREATE OR REPLACE FUNCTION hangar_lock_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)});
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER instances_lock_events BEFORE INSERT OR UPDATE OR DELETE ON instances
    FOR EACH STATEMENT EXECUTE FUNCTION hangar_lock_events()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`DROP TRIGGER IF EXISTS instances_lock_events ON instances`.execute(db);
  await sql`DROP FUNCTION IF EXISTS hangar_lock_events()`.execute(db);
}
