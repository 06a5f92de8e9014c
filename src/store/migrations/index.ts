import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as initial from './2026-11-21T0900-initial.js';
import * as auditAppendOnly from './2026-11-21T1100-audit-append-only.js';
import * as instanceListVersions from './2026-11-21T1500-instance-list-versions.js';
import * as instanceAddress from './2026-11-25T1700-instance-address.js';
import * as operationsEventsWebhooks from './2026-11-26T0900-operations-events-webhooks.js';
import * as backups from './2026-11-26T1000-backups.js';
import * as accessDayTwo from './2026-11-26T1100-access-day-two.js';
import * as eventsLockFirst from './2026-11-26T1200-events-lock-first.js';
import * as placementIndex from './2026-11-26T1500-placement-index.js';
import * as instanceEngine from './2026-12-07T1000-instance-engine.js';
import * as tlsCertificates from './2026-12-07T1100-tls-certificates.js';
import * as instanceNamesAnyCase from './2026-12-07T1200-instance-names-any-case.js';

/** Every migration, in order. Names sort by time; a shipped migration is never edited. */
const MIGRATIONS: Record<string, Migration> = {
  '2026-11-21T0900-initial': initial,
  '2026-11-21T1100-audit-append-only': auditAppendOnly,
  '2026-11-21T1500-instance-list-versions': instanceListVersions,
  '2026-11-25T1700-instance-address': instanceAddress,
  '2026-11-26T0900-operations-events-webhooks': operationsEventsWebhooks,
  '2026-11-26T1000-backups': backups,
  '2026-11-26T1100-access-day-two': accessDayTwo,
  '2026-11-26T1200-events-lock-first': eventsLockFirst,
  '2026-11-26T1500-placement-index': placementIndex,
  '2026-12-07T1000-instance-engine': instanceEngine,
  '2026-12-07T1100-tls-certificates': tlsCertificates,
  '2026-12-07T1200-instance-names-any-case': instanceNamesAnyCase,
};

/** The names of every migration, in order. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/** Attempts at migrating before a failure is final (see below). */
const ATTEMPTS = 4;

/** Brings the schema to the latest version; safe when several processes start at once. */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) break;
    // PostgreSQL serialises migrations with a lock; SQLite has none, so two processes opening a
    // new data dir at once (`hangar serve` and `hangar accounts create`) can both try the same
    // migration, and the later one fails. Each migration runs in a transaction and is rolled
    // back whole, so trying again finds it applied and moves on.
    if (attempt < ATTEMPTS) {
      await new Promise((r) => setTimeout(r, 20 * attempt + Math.random() * 30));
      continue;
    }
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`store migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  // Keep a cheap read here so a broken connection fails the start, not the first request.
  await sql`select 1`.execute(db);
}

/**
 * Brings the schema to the migration `name`, down (through the `down` of those after it) or up:
 * for tests of a migration over data written with the schema before it.
 */
export async function migrateTo(db: Kysely<any>, name: string): Promise<void> {
  const { error } = await new Migrator({ db, provider }).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
