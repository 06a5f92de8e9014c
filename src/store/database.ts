import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type SQLite from 'better-sqlite3';
import {
  Kysely,
  PostgresDialect,
  sql,
  SqliteDialect,
  type PostgresCursor,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
  type Compilable,
  type CompiledQuery,
  type Generated,
  type Insertable,
  type Selectable,
  type SqliteDatabase,
  type Updateable,
} from 'kysely';
import type pg from 'pg';
import { migrateToLatest } from './migrations/index.js';
import { isStoreUnavailable, StoreMissingError } from './errors.js';

// Booleans are integers (0/1) and times are epoch milliseconds in both dialects, so one set of
// queries serves SQLite and PostgreSQL alike.

export interface AccountTable {
  id: string;
  login: string;
  password_hash: string;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  account_id: string;
  user_key: string;
  secret_hash: string;
  created_at: number;
  last_used_at: number | null;
}

export interface TokenTable {
  id: string;
  account_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface InstanceTable {
  id: string;
  account_id: string;
  login: string;
  name: string;
  name_prior: string | null;
  service: string;
  /** The product that runs it (`redis`, `valkey`, ...). */
  engine: string;
  type: string;
  version: string;
  zone: string;
  plan: number;
  desired_plan: number;
  encrypted: number;
  storage_engine: string | null;
  api_key_enc: string;
  password_enc: string | null;
  admin_secret_enc: string;
  state: string;
  state_reason: string | null;
  deleting: number;
  spec_version: number;
  observed_version: number;
  build_id: string;
  /** JSON PortMap */
  ports: string;
  created_at: number;
  updated_at: number;
  transition_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** Where clients reach the instance when its runtime says so; null: the advertised host. */
  address: Generated<string | null>;
  /** The password a rotation replaced, accepted until `password_rotation_ends_at`. */
  password_prior_enc: Generated<string | null>;
  password_rotation_ends_at: Generated<number | null>;
  /**
   * 1: shares its name but for case with an older instance of the account, as created before
   * names were unique regardless of case; left out of that rule until it is renamed.
   */
  case_duplicate: Generated<number>;
}

export interface PortTable {
  host_id: string;
  port: number;
  instance_id: string;
  role: string;
}

export interface AclTable {
  id: string;
  instance_id: string;
  account_id: string;
  cidr_mask: string;
  description: string;
  transport: number;
  kibana: number;
  created_at: number;
  deleting: number;
  /** When the ACL stops admitting (epoch ms); null: never. */
  expires_at: Generated<number | null>;
}

export interface RedisUserTable {
  id: string;
  instance_id: string;
  username: string;
  password_enc: string;
  /** The password a rotation replaced, accepted until `rotation_ends_at`. */
  password_prior_enc: string | null;
  rotation_ends_at: number | null;
  /** JSON arrays of key patterns, channel patterns and command rules. */
  keys: string;
  channels: string;
  commands: string;
  deleting: number;
  created_at: number;
  updated_at: number;
}

export interface RedisSettingTable {
  instance_id: string;
  name: string;
  value: string;
  updated_at: number;
}

export interface MongodbUserTable {
  id: string;
  instance_id: string;
  database_name: string;
  username: string;
  password_enc: string;
  /** JSON array of {role, db} */
  roles: string;
  spec_version: number;
  applied_version: number;
  deleting: number;
  created_at: number;
  updated_at: number;
}

export interface IdempotencyKeyTable {
  account_id: string;
  idem_key: string;
  request_hash: string;
  status_code: number | null;
  response: string | null;
  created_at: number;
  /** The operation the first request started, given again with its answer. */
  operation_id: Generated<string | null>;
}

export interface AuditEventTable {
  id: Generated<number>;
  account_id: string | null;
  login: string | null;
  action: string;
  target: string | null;
  source_ip: string | null;
  outcome: string;
  status_code: number | null;
  request_id: string | null;
  created_at: number;
}

/** Moved by triggers on every change of an account's instance records (see its migration). */
export interface InstanceListVersionTable {
  account_id: string;
  version: number;
}

export interface LeaseTable {
  name: string;
  owner: string;
  expires_at: number;
}

export interface OperationTable {
  id: string;
  account_id: string;
  instance_id: string | null;
  instance_name: string | null;
  kind: string;
  state: string;
  /** JSON array of {name, at, message?} */
  steps: string;
  progress: number | null;
  error_code: string | null;
  error_message: string | null;
  /** JSON {login, credential, id} */
  requested_by: string | null;
  request_id: string | null;
  /** JSON object */
  detail: string;
  target_version: number | null;
  cancellable: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  deadline_at: number;
  last_event_id: number | null;
  rev: number;
}

/** The live stream; instance events are written by triggers (see their migration). */
export interface EventTable {
  id: Generated<number>;
  account_id: string;
  kind: string;
  instance_id: string | null;
  instance_name: string | null;
  operation_id: string | null;
  /** JSON object */
  data: string;
  created_at: number;
}

export interface WebhookTable {
  id: string;
  account_id: string;
  url: string;
  /** JSON array of event kinds or families */
  kinds: string;
  description: string;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_until: number | null;
  /** Events up to this id were there before the webhook: they are not delivered. */
  after_event_id: number;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: number;
  event_kind: string;
  payload: string;
  state: string;
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

export interface BackupTable {
  id: string;
  account_id: string;
  instance_id: string;
  instance_name: string;
  service: string;
  engine_version: string;
  zone: string;
  plan: number;
  format: string;
  state: string;
  state_reason: string | null;
  step: string | null;
  scheduled: number;
  storage_key: string;
  location: string;
  size_bytes: number | null;
  sha256: string | null;
  used_bytes: number | null;
  data_key_enc: string;
  requested_at: number;
  started_at: number | null;
  finished_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

export interface RestoreTable {
  id: string;
  account_id: string;
  instance_id: string;
  instance_name: string;
  backup_id: string;
  kind: string;
  state: string;
  state_reason: string | null;
  step: string | null;
  requested_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface BackupPolicyTable {
  instance_id: string;
  account_id: string;
  /** off, every, daily */
  schedule: string;
  every_hours: number | null;
  daily_minute: number | null;
  keep_last: number | null;
  keep_days: number | null;
  /** When the schedule fires next (epoch ms); null when off. */
  next_run_at: number | null;
  updated_at: number;
}

/** The deployment's generated CA: one row, `id` 'deployment'. */
export interface TlsAuthorityTable {
  id: string;
  cert_pem: string;
  key_enc: string;
  fingerprint: string;
  /** The replica that made it. */
  created_by: string;
  created_at: number;
}

/** An instance's server certificates, one generation per renewal. */
export interface TlsServerCertificateTable {
  serial: string;
  instance_id: string;
  generation: number;
  fingerprint: string;
  ca_fingerprint: string;
  /** JSON array of subjectAltName entries */
  names: string;
  cert_pem: string;
  key_enc: string;
  not_before: number;
  not_after: number;
  created_at: number;
  served_at: number | null;
  retired_at: number | null;
}

/** Client certificates of mutual TLS (never their keys). */
export interface TlsClientCertificateTable {
  serial: string;
  instance_id: string;
  common_name: string;
  fingerprint: string;
  ca_fingerprint: string;
  cert_pem: string;
  not_before: number;
  not_after: number;
  created_at: number;
  revoked_at: number | null;
}

export interface MetaTable {
  key: string;
  value: string;
}

export interface Database {
  accounts: AccountTable;
  api_keys: ApiKeyTable;
  tokens: TokenTable;
  instances: InstanceTable;
  ports: PortTable;
  acls: AclTable;
  mongodb_users: MongodbUserTable;
  redis_users: RedisUserTable;
  redis_settings: RedisSettingTable;
  idempotency_keys: IdempotencyKeyTable;
  audit_events: AuditEventTable;
  leases: LeaseTable;
  meta: MetaTable;
  instance_list_versions: InstanceListVersionTable;
  operations: OperationTable;
  events: EventTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  backups: BackupTable;
  restores: RestoreTable;
  backup_policies: BackupPolicyTable;
  tls_authorities: TlsAuthorityTable;
  tls_server_certificates: TlsServerCertificateTable;
  tls_client_certificates: TlsClientCertificateTable;
}

export type InstanceRow = Selectable<InstanceTable>;
export type NewInstanceRow = Insertable<InstanceTable>;
export type InstanceRowUpdate = Updateable<InstanceTable>;
export type AclRow = Selectable<AclTable>;
export type MongodbUserRow = Selectable<MongodbUserTable>;
export type OperationRow = Selectable<OperationTable>;
export type EventRow = Selectable<EventTable>;
export type WebhookRow = Selectable<WebhookTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
export type RedisUserRow = Selectable<RedisUserTable>;
export type BackupRow = Selectable<BackupTable>;
export type RestoreRow = Selectable<RestoreTable>;
export type BackupPolicyRow = Selectable<BackupPolicyTable>;
export type TlsServerCertificateRow = Selectable<TlsServerCertificateTable>;
export type TlsClientCertificateRow = Selectable<TlsClientCertificateTable>;

export type Dialect = 'sqlite' | 'postgres';

/**
 * A query of a fixed shape built and compiled once per store, then run with new parameters: for
 * the reads every request makes, where building the query cost more than running it. `build`
 * makes the query with placeholder values, which `run` replaces in order.
 */
export function reusableQuery<R>(build: (db: Db) => Compilable<R>): (db: Db, parameters: readonly unknown[]) => Promise<R[]> {
  const compiled = new WeakMap<Db, CompiledQuery<R>>();
  return async (db, parameters) => {
    let q = compiled.get(db);
    if (!q) {
      q = build(db).compile();
      compiled.set(db, q);
    }
    if (parameters.length !== q.parameters.length)
      throw new Error(`reusable query takes ${q.parameters.length} parameters, got ${parameters.length}`);
    const direct = directReads.get(db);
    if (direct && q.query.kind === 'SelectQueryNode') {
      const rows = direct(q.sql, parameters) as R[] | undefined;
      if (rows) return rows;
    }
    return (await db.executeQuery<R>({ ...q, parameters })).rows;
  };
}

/**
 * Reads run on SQLite's connection at once, without Kysely's connection mutex and its promises,
 * for the reads every request makes (reusableQuery). Only while no transaction is open on the
 * connection (undefined otherwise, and the read waits its turn through Kysely): a statement
 * outside a transaction sees committed rows only, and better-sqlite3 runs it to its end before
 * anything else can run, so the answer is the one the queued read would give.
 */
const directReads = new WeakMap<Db, (sql: string, parameters: readonly unknown[]) => unknown[] | undefined>();

/** One round trip to the store: resolves when it answers (readiness). */
export async function pingStore(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
export type Db = Kysely<Database>;

export interface Store {
  readonly db: Db;
  readonly dialect: Dialect;
  /** Where the state lives, for logs and errors (no credentials). */
  readonly location: string;
  /** Statements sent to the database since it was opened (BEGIN and COMMIT included). */
  statements(): number;
  close(): Promise<void>;
}

export interface StoreOptions {
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  /** PostgreSQL pool size. */
  readonly poolSize?: number;
}

/**
 * The driver of the store's dialect, loaded when a store of that dialect is opened: a hangar on
 * SQLite never holds the PostgreSQL driver, nor one on PostgreSQL the SQLite library.
 */
async function loadPg(): Promise<typeof pg> {
  const driver = (await import('pg')).default;
  // int8 (count(*), bigint columns) arrives as a string by default; every such value here fits a
  // JS number (epoch milliseconds, counters).
  driver.types.setTypeParser(20, (v) => Number(v));
  return driver;
}

async function loadSqlite(): Promise<typeof SQLite> {
  return (await import('better-sqlite3')).default;
}

/** Opens the store (SQLite file in the data dir, or PostgreSQL) and runs the migrations. */
export async function openStore(opts: StoreOptions): Promise<Store> {
  const store = opts.databaseUrl
    ? openPostgres(await loadPg(), opts.databaseUrl, opts.poolSize ?? 10)
    : openSqlite(await loadSqlite(), opts.dataDir);
  try {
    await migrateToLatest(store.db);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/**
 * Whether there is a store of hangar to open: the SQLite file in the data dir, or hangar's tables
 * in the PostgreSQL database. Creates nothing (no directory, no file, no table).
 */
export async function storeExists(opts: StoreOptions): Promise<boolean> {
  if (!opts.databaseUrl) return existsSync(join(opts.dataDir, 'hangar.sqlite'));
  const pool = new (await loadPg()).Pool({ connectionString: opts.databaseUrl, max: 1, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS });
  pool.on('error', () => {});
  try {
    const r = await pool.query<{ ok: boolean }>("select to_regclass('accounts') is not null as ok");
    return r.rows[0]?.ok === true;
  } finally {
    await pool.end();
  }
}

/** Throws StoreMissingError, naming where it looked, unless there is a store to open. */
export async function assertStoreExists(opts: StoreOptions): Promise<void> {
  if (await storeExists(opts)) return;
  if (!opts.databaseUrl) throw new StoreMissingError(`there is no hangar store in the data dir ${opts.dataDir} (no hangar.sqlite there)`);
  const u = new URL(opts.databaseUrl);
  throw new StoreMissingError(`there is no hangar store in the database postgres://${u.host}${u.pathname} (none of hangar's tables there)`);
}

/** Prepared statements kept per SQL text; hangar's queries are a few dozen shapes. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * The database as Kysely sees it, with prepared statements reused: Kysely prepares every query
 * again, and preparing cost more than running a one-row read. Statements run one at a time on
 * SQLite's single connection (Kysely holds a mutex), so sharing one is safe; hangar never streams.
 */
function withStatementCache(sqlite: SQLite.Database, count: () => void): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    // called once per statement run (Kysely prepares each query it executes)
    prepare(sql) {
      count();
      let stmt = statements.get(sql);
      if (!stmt) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
        stmt = sqlite.prepare(sql);
        statements.set(sql, stmt);
      }
      return stmt;
    },
    close: () => sqlite.close(),
  };
}

/**
 * WAL pages after which a commit copies them back into the database file (SQLite's default is
 * 1,000). Each such checkpoint copies and syncs the file in the commit that reaches it; at 1,000
 * that cost about as much again as the commits themselves (measured here: 36 to 44 us per
 * insert and commit at 1,000, 26 to 28 at 10,000, 13 to 21 with none). The WAL file grows to
 * about 40 MB (4 KiB pages) and is reused from its start after each checkpoint. Durability is
 * the same: every commit is in the WAL either way.
 */
export const SQLITE_WAL_AUTOCHECKPOINT = 10_000;

function openSqlite(SQLite: Awaited<ReturnType<typeof loadSqlite>>, dataDir: string): Store {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'hangar.sqlite');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma(`wal_autocheckpoint = ${SQLITE_WAL_AUTOCHECKPOINT}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  let statements = 0;
  const cached = withStatementCache(sqlite, () => statements++);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  directReads.set(db, (text, parameters) =>
    sqlite.inTransaction ? undefined : (cached.prepare(text) as unknown as SQLite.Statement).all(parameters as unknown[]),
  );
  return { db, dialect: 'sqlite', location: file, statements: () => statements, close: () => db.destroy() };
}

/**
 * How long a PostgreSQL connection may take to open, and a query to answer. Every query of
 * hangar is small: past these the server is unreachable or hung, and the request gets a 503
 * rather than waiting on.
 */
const PG_CONNECT_TIMEOUT_MS = 5000;
const PG_QUERY_TIMEOUT_MS = 5000;
/**
 * How long a request may wait for one of the pool's connections while the store answers (every
 * connection taken by work that goes on, as when many writes to one row queue for its lock on a
 * busy machine). While the store does not answer, the wait ends after PG_CONNECT_TIMEOUT_MS.
 */
const PG_POOL_WAIT_MAX_MS = 30_000;
/** How often a waiting request looks whether the store still answers. */
const PG_POOL_WAIT_CHECK_MS = 250;

function openPostgres(pg: Awaited<ReturnType<typeof loadPg>>, url: string, max: number): Store {
  // a new connection gets PG_CONNECT_TIMEOUT_MS (the client's own timeout); the pool's, which also
  // bounds the wait for a connection, is the outer limit only
  class Client extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS });
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max,
    Client,
    connectionTimeoutMillis: PG_POOL_WAIT_MAX_MS,
    query_timeout: PG_QUERY_TIMEOUT_MS,
    // a server that vanished without closing its connections is found out by TCP keepalives
    keepAlive: true,
  });
  // A connection that loses its server (PostgreSQL stopped or restarted) emits 'error': an
  // idle one through the pool, one checked out between two queries (a transaction waiting on
  // hangar) on itself. Without a listener either would crash the process. The loss reaches the
  // work that holds the connection as a failed query, and the pool drops the connection.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const answering = new AnsweringPool(pool);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: answering }) });
  const u = new URL(url);
  return {
    db,
    dialect: 'postgres',
    location: `postgres://${u.host}${u.pathname}`,
    statements: () => answering.statements,
    close: () => db.destroy(),
  };
}

/**
 * The pool as Kysely uses it, telling a busy hangar from a store that does not answer. pg's own
 * wait for a pooled connection cannot: with every connection taken by work the store answers
 * (forty ACL adds to one instance queue for its row on a saturated machine), the last waiter
 * passed it and got a 503 though the store was fine. Here a waiter gives up after
 * PG_CONNECT_TIMEOUT_MS only if no query was answered in that time either; while queries are
 * answered it waits on, up to the pool's own limit (PG_POOL_WAIT_MAX_MS).
 */
class AnsweringPool implements PostgresPool {
  /** When a query last got an answer from the store (a result, or an error the store sent). */
  private lastAnswer = Date.now();
  /** Queries sent through the pool's connections. */
  statements = 0;

  constructor(private readonly pool: pg.Pool) {}

  connect(): Promise<AnsweringClient> {
    return new Promise<AnsweringClient>((resolve, reject) => {
      const started = Date.now();
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const settle = (f: () => void) => {
        settled = true;
        clearTimeout(timer);
        f();
      };
      this.pool.connect().then(
        (client) => {
          // a connection that comes after this waiter gave up goes back at once
          if (settled) client.release();
          else
            settle(() =>
              resolve(
                new AnsweringClient(
                  client,
                  () => (this.lastAnswer = Date.now()),
                  () => this.statements++,
                ),
              ),
            );
        },
        (err: unknown) => {
          if (!settled) settle(() => reject(err));
        },
      );
      const look = () => {
        if (settled) return;
        const now = Date.now();
        if (now - started >= PG_CONNECT_TIMEOUT_MS && now - this.lastAnswer >= PG_CONNECT_TIMEOUT_MS) {
          settle(() => reject(new Error('timeout exceeded when trying to connect (the store answered no query meanwhile)')));
        } else {
          timer = setTimeout(look, PG_POOL_WAIT_CHECK_MS);
          timer.unref();
        }
      };
      timer = setTimeout(look, PG_CONNECT_TIMEOUT_MS);
      timer.unref();
    });
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

/** A pooled connection that records each answer of the store (see AnsweringPool). */
class AnsweringClient implements PostgresPoolClient {
  constructor(
    private readonly client: pg.PoolClient,
    private readonly answered: () => void,
    private readonly sent: () => void,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query(...args: unknown[]): unknown {
    this.sent();
    const r = (this.client.query as (...a: unknown[]) => unknown)(...args);
    if (r instanceof Promise) {
      r.then(this.answered, (err: unknown) => {
        if (!isStoreUnavailable(err)) this.answered();
      });
    }
    return r;
  }

  release(): void {
    this.client.release();
  }
}
