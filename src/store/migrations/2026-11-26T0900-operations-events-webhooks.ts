import { PostgresAdapter, sql, type Kysely } from 'kysely';

// Frozen: a migration that has shipped is never edited; add a new one instead.

/**
 * The advisory lock that orders events on PostgreSQL ("events" in ASCII): every transaction
 * that appends an event takes it first, so events commit in the order of their ids and a reader
 * that has seen id N has seen every event below N. Must equal EVENTS_LOCK of event-repository.ts.
 */
const EVENTS_LOCK = 111559182283891;

/**
 * Operations (every asynchronous action, with its steps and outcome), events (the live stream:
 * instance state changes and operation progress, with monotonic ids), webhooks and their
 * delivery records. Instance events are written by triggers, so that no write path (request,
 * pass, replica) can forget one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  await db.schema
    .createTable('operations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text')
    .addColumn('instance_name', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull())
    .addColumn('progress', 'integer')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('requested_by', 'text')
    .addColumn('request_id', 'text')
    .addColumn('detail', 'text', (c) => c.notNull())
    .addColumn('target_version', 'integer')
    .addColumn('cancellable', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .addColumn('deadline_at', 'bigint', (c) => c.notNull())
    .addColumn('last_event_id', 'bigint')
    .addColumn('rev', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('operations_account').on('operations').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('operations_instance').on('operations').columns(['instance_id', 'state']).execute();
  await db.schema.createIndex('operations_state').on('operations').columns(['state', 'deadline_at']).execute();
  await db.schema.createIndex('operations_finished').on('operations').column('finished_at').execute();
  // A repeat with the same Idempotency-Key answers the first operation's id again.
  await db.schema.alterTable('idempotency_keys').addColumn('operation_id', 'text').execute();

  await db.schema
    .createTable('events')
    .addColumn('id', postgres ? 'bigserial' : 'integer', (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text')
    .addColumn('instance_name', 'text')
    .addColumn('operation_id', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_account').on('events').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('events_created').on('events').column('created_at').execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('kinds', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('previous_secret_enc', 'text')
    .addColumn('previous_secret_until', 'bigint')
    .addColumn('after_event_id', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('webhooks_account').on('webhooks').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'bigint', (c) => c.notNull())
    .addColumn('event_kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addUniqueConstraint('webhook_deliveries_once', ['webhook_id', 'event_id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'created_at']).execute();

  if (postgres) {
    await sql`
      CREATE OR REPLACE FUNCTION hangar_instance_events() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        now_ms bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      BEGIN
        IF TG_OP = 'INSERT' THEN
          PERFORM pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)});
          INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
          VALUES (NEW.account_id, 'instance.created', NEW.id, NEW.name, NULL,
            json_build_object('state', NEW.state, 'service', NEW.service, 'type', NEW.type, 'plan', NEW.plan, 'zone', NEW.zone)::text, now_ms);
        ELSIF TG_OP = 'DELETE' THEN
          PERFORM pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)});
          INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
          VALUES (OLD.account_id, 'instance.deleted', OLD.id, OLD.name, NULL, json_build_object('state', OLD.state)::text, now_ms);
        ELSE
          IF OLD.name IS DISTINCT FROM NEW.name THEN
            PERFORM pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)});
            INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
            VALUES (NEW.account_id, 'instance.renamed', NEW.id, NEW.name, NULL, json_build_object('from', OLD.name, 'to', NEW.name)::text, now_ms);
          END IF;
          IF OLD.state IS DISTINCT FROM NEW.state OR OLD.state_reason IS DISTINCT FROM NEW.state_reason THEN
            PERFORM pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)});
            INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
            VALUES (NEW.account_id, 'instance.state', NEW.id, NEW.name, NULL,
              json_build_object('from', OLD.state, 'to', NEW.state, 'reason', NEW.state_reason, 'plan', NEW.plan)::text, now_ms);
          END IF;
        END IF;
        RETURN NULL;
      END
      $$`.execute(db);
    await sql`
      CREATE TRIGGER instances_events AFTER INSERT OR DELETE OR UPDATE OF name, state, state_reason ON instances
      FOR EACH ROW EXECUTE FUNCTION hangar_instance_events()`.execute(db);
    return;
  }
  const now = sql.raw(`CAST(unixepoch('subsec') * 1000 AS INTEGER)`);
  await sql`CREATE TRIGGER instances_event_created AFTER INSERT ON instances BEGIN
    INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
    VALUES (NEW.account_id, 'instance.created', NEW.id, NEW.name, NULL,
      json_object('state', NEW.state, 'service', NEW.service, 'type', NEW.type, 'plan', NEW.plan, 'zone', NEW.zone), ${now}); END`.execute(
    db,
  );
  await sql`CREATE TRIGGER instances_event_deleted AFTER DELETE ON instances BEGIN
    INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
    VALUES (OLD.account_id, 'instance.deleted', OLD.id, OLD.name, NULL, json_object('state', OLD.state), ${now}); END`.execute(db);
  await sql`CREATE TRIGGER instances_event_renamed AFTER UPDATE OF name ON instances WHEN OLD.name IS NOT NEW.name BEGIN
    INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
    VALUES (NEW.account_id, 'instance.renamed', NEW.id, NEW.name, NULL, json_object('from', OLD.name, 'to', NEW.name), ${now}); END`.execute(
    db,
  );
  await sql`CREATE TRIGGER instances_event_state AFTER UPDATE OF state, state_reason ON instances
    WHEN OLD.state IS NOT NEW.state OR OLD.state_reason IS NOT NEW.state_reason BEGIN
    INSERT INTO events (account_id, kind, instance_id, instance_name, operation_id, data, created_at)
    VALUES (NEW.account_id, 'instance.state', NEW.id, NEW.name, NULL,
      json_object('from', OLD.state, 'to', NEW.state, 'reason', NEW.state_reason, 'plan', NEW.plan), ${now}); END`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`DROP TRIGGER IF EXISTS instances_events ON instances`.execute(db);
    await sql`DROP FUNCTION IF EXISTS hangar_instance_events()`.execute(db);
  } else {
    for (const t of ['instances_event_created', 'instances_event_deleted', 'instances_event_renamed', 'instances_event_state']) {
      await sql`DROP TRIGGER IF EXISTS ${sql.raw(t)}`.execute(db);
    }
  }
  for (const t of ['webhook_deliveries', 'webhooks', 'events', 'operations']) await db.schema.dropTable(t).execute();
  await db.schema.alterTable('idempotency_keys').dropColumn('operation_id').execute();
}
