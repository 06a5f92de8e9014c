import { chmodSync, mkdirSync, statSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { pino, type DestinationStream, type Logger } from 'pino';
import { type HttpLimits, buildApp } from './app.js';
import type { Config } from './config.js';
import type { Services } from './http/context.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { Metrics } from './lib/metrics.js';
import { SecretKeyError, loadKeyring, type Keyring } from './lib/secrets.js';
import { Reconciler, stepContext } from './reconciler/reconciler.js';
import { createRuntime } from './runtimes/index.js';
import type { Runtime } from './runtimes/runtime.js';
import { AccountService } from './service/accounts.js';
import { AclService } from './service/acls.js';
import type { ServiceDeps } from './service/deps.js';
import { INSTANCE_STATES } from './service/model.js';
import { InstanceService } from './service/instances.js';
import { LoginGuard, RateLimiter } from './service/limits.js';
import { MongoUserService } from './service/mongodb-users.js';
import { RedisService } from './service/redis.js';
import { openStore, type Db, type Store } from './store/database.js';
import { getMeta, setMeta } from './store/lease-repository.js';
import { appendAuditEvent } from './store/audit-repository.js';

export interface Hangar {
  readonly config: Config;
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly runtime: Runtime;
  readonly reconciler: Reconciler;
  readonly log: Logger;
  /** The Prometheus registry of this hangar, served at /metrics. */
  readonly metrics: Metrics;
  /** Base URL of the API, e.g. http://127.0.0.1:8080 */
  readonly url: string;
  /** Stops serving (in-flight requests finish), stops the reconciler between steps, closes the store. Engines keep running. */
  close(): Promise<void>;
}

/** While stopping, how often connections that went idle are closed. */
const IDLE_CHECK_MS = 50;

/** Fields that never reach a log line. */
export const REDACT = [
  'password', '*.password', 'pass_key', '*.pass_key', 'token', '*.token', 'secret', '*.secret',
  'headers.authorization', 'headers["x-auth-token"]', 'req.headers.authorization', 'req.headers["x-auth-token"]',
  'body.password', 'body.token', 'req.body',
];

/** JSON lines on stdout (or `destination`), credentials redacted. */
export function createLogger(config: Config, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' }, base: { replica: config.replicaId } };
  return destination ? pino(options, destination) : pino(options);
}

/** Instances by service and state, for /metrics. */
async function countInstancesByServiceAndState(db: Db): Promise<{ service: string; state: string; count: number }[]> {
  const rows = await db
    .selectFrom('instances')
    .select((eb) => ['service', 'state', eb.fn.countAll<number | string | bigint>().as('n')])
    .groupBy(['service', 'state'])
    .execute();
  return rows.map((r) => ({ service: r.service, state: r.state, count: Number(r.n) }));
}

/** The keyring, checked against the store: a wrong key fails the start instead of every request. */
export async function openKeyring(config: Config, db: Db): Promise<Keyring> {
  const keyring = loadKeyring(config.secretKey, config.dataDir);
  const check = await getMeta(db, 'secret_check');
  if (check === undefined) {
    await setMeta(db, 'secret_check', keyring.encrypt('hangar'));
  } else {
    try {
      keyring.decrypt(check);
    } catch (err) {
      throw new SecretKeyError(
        `the secret key does not decrypt this store (${(err as Error).message}); set HANGAR_SECRET_KEY to the key(s) it was encrypted with`,
      );
    }
  }
  return keyring;
}

/** The id of the key that sealed each encrypted value in the store, with how many it sealed. */
export async function sealingKeyIds(db: Db): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  const add = (sealed: string | null) => {
    if (sealed === null) return;
    const id = sealed.split('.')[1] ?? '?';
    ids.set(id, (ids.get(id) ?? 0) + 1);
  };
  for (const r of await db.selectFrom('instances').select(['api_key_enc', 'password_enc', 'admin_secret_enc']).execute()) {
    add(r.api_key_enc);
    add(r.password_enc);
    add(r.admin_secret_enc);
  }
  for (const r of await db.selectFrom('mongodb_users').select('password_enc').execute()) add(r.password_enc);
  add((await getMeta(db, 'secret_check')) ?? null);
  return ids;
}

/**
 * Every stored secret must be readable with the configured keys: a key dropped too early (before
 * `hangar secrets rotate` finished) fails the start, naming what is missing, instead of
 * failing instances one by one later.
 */
export async function assertKeysOpenStore(db: Db, keyring: Keyring): Promise<void> {
  const missing = [...(await sealingKeyIds(db))].filter(([id]) => !keyring.ids.includes(id));
  if (missing.length === 0) return;
  const n = missing.reduce((sum, [, count]) => sum + count, 0);
  throw new SecretKeyError(
    `${n} stored secret(s) are encrypted with key(s) ${missing.map(([id]) => id).join(', ')}, which are not configured; ` +
      'give hangar those keys again (after the current one in HANGAR_SECRET_KEY) and run hangar secrets rotate',
  );
}

/**
 * The data dir holds the key file, the SQLite store and engine data: readable by its owner only.
 * A dir made by someone else with wider permissions is narrowed (and said so), and the process
 * creates files and directories with mode 0600/0700 from then on (umask 077).
 */
export function ensurePrivateDataDir(dataDir: string, log: Logger): void {
  // Everything hangar and the engines it starts create (the SQLite files, engine data written
  // by redis-server itself) is then for the owner only; children inherit the mask.
  try {
    process.umask(0o077);
  } catch {
    /* a worker thread cannot change it; the directories below still keep others out */
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    chmodSync(dataDir, 0o700);
    log.warn({ dataDir, was: mode.toString(8) }, 'data dir was readable by others; now 0700');
  }
}

export interface StartOptions {
  /** Overrides of the HTTP limits (tests shorten the timeouts). */
  readonly http?: Partial<HttpLimits>;
}

/** The composition root: store, keyring, runtime, reconciler, services, HTTP. */
export async function startHangar(config: Config, logger?: Logger, options: StartOptions = {}): Promise<Hangar> {
  const log = logger ?? createLogger(config);
  ensurePrivateDataDir(config.dataDir, log);
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  let store: Store | undefined;
  try {
    store = await openStore(config);
    const db = store.db;
    const keyring = await openKeyring(config, db);
    await assertKeysOpenStore(db, keyring);
    const runtime = await createRuntime(config, log);
    const now = Date.now;
    const metrics = new Metrics({ defaultMetrics: true });
    const reconciler = new Reconciler({
      db,
      keyring,
      runtime,
      config,
      log: log.child({ component: 'reconciler' }),
      now,
      steps: (signal) => stepContext(signal, config.dieAt),
      metrics,
    });
    metrics.watch({
      queueDepth: () => reconciler.queueDepth,
      isOwner: () => reconciler.isOwner,
      instanceCounts: () => countInstancesByServiceAndState(db),
      states: INSTANCE_STATES,
      runtimeStats: () => runtime.stats(),
      onError: (what, err) => log.warn({ err, metric: what }, 'metric not collected'),
    });
    const deps: ServiceDeps = { db, keyring, runtime, config, work: reconciler, now };
    const accounts = new AccountService(db, { tokenTtlSeconds: config.tokenTtlSeconds, now });
    const instances = new InstanceService(deps);
    const services: Services = {
      accounts,
      instances,
      acls: new AclService(deps, instances),
      redis: new RedisService(deps, instances),
      mongodbUsers: new MongoUserService(deps, instances),
      loginGuard: new LoginGuard(config.loginFailureLimit, now),
      rateLimiter: new RateLimiter(config.rateLimit, now),
    };
    if (config.bootstrapLogin && config.bootstrapPassword) {
      if (await accounts.ensureAccount(config.bootstrapLogin, config.bootstrapPassword)) {
        log.info({ login: config.bootstrapLogin }, 'bootstrap account created');
        const account = await accounts.accountByLogin(config.bootstrapLogin);
        await appendAuditEvent(db, {
          accountId: account.id, login: account.login, action: 'account.create', target: `account:${account.login}`,
          sourceIp: null, outcome: 'success', statusCode: null, requestId: null, createdAt: now(),
        });
      }
    }
    const openedStore = store;
    const readiness = {
      async check() {
        const problems: string[] = [];
        // the runtime as it is when the request is taken, before the store is asked
        const h = runtime.health();
        try {
          await sql`select 1`.execute(db);
        } catch {
          problems.push(`store unreachable: ${openedStore.location}`);
        }
        return { problems: [...problems, ...h.problems], degraded: [...h.degraded] };
      },
    };
    const app = await buildApp({ config, services, db, readiness, now, metrics }, log, options.http ? { http: options.http } : {});
    await reconciler.start();
    await app.listen({ port: config.port, host: config.host });
    const scheme = config.tlsCert ? 'https' : 'http';
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    log.info({ url, runtime: runtime.kind, store: store.location }, 'hangar is serving');
    let closing: Promise<void> | undefined;
    return {
      config,
      app,
      store,
      runtime,
      reconciler,
      log,
      metrics,
      url,
      close: () =>
        (closing ??= (async () => {
          // Requests in flight finish; the connection of each is closed as soon as it is idle,
          // rather than kept until the client's keep-alive time runs out (which would hold the stop).
          const idle = setInterval(() => app.server.closeIdleConnections(), IDLE_CHECK_MS);
          try {
            await app.close();
          } finally {
            clearInterval(idle);
          }
          await reconciler.stop();
          await openedStore.close();
          unlock();
        })()),
    };
  } catch (err) {
    await store?.close().catch(() => {});
    unlock();
    throw err;
  }
}
