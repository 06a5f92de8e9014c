import { join } from 'node:path';
import { MONGODB_ADMIN_DB, MONGODB_ADMIN_USER } from '../mongodb/mongodb-config.js';

/** The one unit of an instance, and its directory's name. */
export const FERRETDB_ROLE = 'ferretdb';
/** FerretDB's SQLite files, one per database (`<database>.sqlite`), in this directory of the unit. */
export const DATA_DIR = 'data';
/** Memory of the FerretDB process beyond its share of the plan (Go runtime, connections, SQLite's page caches). */
export const FERRETDB_BASE_MB = 256;

/**
 * The memory an instance promises: 256 MB for the process and 5 % of the plan (GB) for what its
 * queries hold, the share a mongod's WiredTiger cache gets, so that both engines of the service
 * promise alike. FerretDB keeps no cache that grows with the data: SQLite's page cache is 2 MB
 * per connection, and idle the process holds about 30 MB. What grows is what a query holds:
 * FerretDB 1.x filters and sorts in the process what it cannot hand to SQLite, and an unindexed
 * sort of 41 MB of documents took it to about 200 MB here. GOMEMLIMIT is set to the promise, so
 * that Go's collector works harder before the process passes it (a soft limit: a query that
 * needs more still gets it).
 */
export function ferretdbMemoryMb(plan: number): number {
  return FERRETDB_BASE_MB + Math.round(plan * 1024 * 0.05);
}

export interface FerretdbArgsInput {
  /** The loopback port it listens on. */
  readonly port: number;
  /** The unit's directory: SQLite files in `data/`, FerretDB's state (`state.json`) beside them. */
  readonly dir: string;
}

/**
 * The command line of FerretDB 1.x over SQLite. No secret is on it: the password of hangar's
 * user comes in FERRETDB_SETUP_PASSWORD (ferretdbEnv). Pure: the same input gives the same
 * arguments, and they name the unit's directory, which is how the runtime recognises the process.
 */
export function ferretdbArgs(c: FerretdbArgsInput): string[] {
  return [
    '--handler=sqlite',
    // a directory (the trailing slash is required): one SQLite file per database
    `--sqlite-url=file:${join(c.dir, DATA_DIR)}/`,
    `--state-dir=${c.dir}`,
    // loopback only: clients come through the edge, which enforces the ACLs
    `--listen-addr=127.0.0.1:${c.port}`,
    // its metrics and profiling listener would take 127.0.0.1:8088, and a second instance would exit
    '--debug-addr=-',
    // SCRAM users stored in the backend: authentication always on
    '--test-enable-new-auth',
    // hangar's user, made at the first start (while the admin database does not exist yet)
    `--setup-database=${MONGODB_ADMIN_DB}`,
    `--setup-username=${MONGODB_ADMIN_USER}`,
    '--telemetry=disable',
  ];
}

/**
 * The environment of the process: the password of hangar's user (FerretDB reads every flag from
 * a FERRETDB_ variable too; the environment of a process is readable by its user and root only,
 * its command line by everyone), and GOMEMLIMIT at the memory the plan promises.
 */
export function ferretdbEnv(adminSecret: string, plan: number): Record<string, string> {
  return { FERRETDB_SETUP_PASSWORD: adminSecret, GOMEMLIMIT: `${ferretdbMemoryMb(plan)}MiB` };
}
