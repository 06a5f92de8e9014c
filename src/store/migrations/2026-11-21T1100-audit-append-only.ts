import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * The audit log is append-only in the store itself: triggers refuse every UPDATE and DELETE
 * of `audit_events` (and TRUNCATE on PostgreSQL), whoever issues them through hangar's
 * connection. Whoever owns the database can still drop the triggers; see SECURITY.md.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`
      CREATE OR REPLACE FUNCTION hangar_audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP;
      END
      $$`.execute(db);
    await sql`
      CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION hangar_audit_events_append_only()`.execute(db);
    await sql`
      CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
      FOR EACH STATEMENT EXECUTE FUNCTION hangar_audit_events_append_only()`.execute(db);
    return;
  }
  await sql`
    CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: UPDATE refused'); END`.execute(db);
  await sql`
    CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
    BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: DELETE refused'); END`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`DROP TRIGGER IF EXISTS audit_events_no_truncate ON audit_events`.execute(db);
    await sql`DROP TRIGGER IF EXISTS audit_events_append_only ON audit_events`.execute(db);
    await sql`DROP FUNCTION IF EXISTS hangar_audit_events_append_only()`.execute(db);
    return;
  }
  await sql`DROP TRIGGER IF EXISTS audit_events_no_delete`.execute(db);
  await sql`DROP TRIGGER IF EXISTS audit_events_no_update`.execute(db);
}
