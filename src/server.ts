import { chmodSync, mkdirSync, statSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { type HttpLimits, buildApp } from './app.js';
import type { Config } from './config.js';
import type { Services } from './http/context.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { sleep } from './lib/time.js';
import { Metrics } from './lib/metrics.js';
import { Reconciler, stepContext } from './reconciler/reconciler.js';
import { buildZones, type ZoneDirectory } from './zones/zone-directory.js';
import { loadZonesFile } from './zones/zones-file.js';
import { AccountService } from './service/accounts.js';
import { AclService } from './service/acls.js';
import { AuditService } from './service/audit.js';
import { BackupRunner } from './service/backup-runner.js';
import { OperationFlow } from './service/backup-operations.js';
import { RestoreRunner } from './service/restore-runner.js';
import { BackupScheduler } from './service/backup-scheduler.js';
import { BackupService } from './service/backups.js';
import { openBackupStorage } from './storage/index.js';
import { lastSuccessfulBackups } from './store/backup-repository.js';
import { IdempotencyService } from './service/idempotency.js';
import type { ServiceDeps } from './service/deps.js';
import { ZoneService } from './service/zones.js';
import { INSTANCE_STATES } from './domain/model.js';
import { serviceOffering } from './engines/registry.js';
import { InstanceService } from './service/instances.js';
import { LoginGuard, RateLimiter } from './service/limits.js';
import { MongoUserService } from './service/mongodb-users.js';
import { PasswordService } from './service/passwords.js';
import { RedisService } from './service/redis.js';
import { ElasticsearchService } from './service/elasticsearch.js';
import { RedisUserService } from './service/redis-users.js';
import { openStore, type Store } from './store/database.js';
import { countInstancesByServiceAndState } from './store/instance-repository.js';
import { assertKeysOpenStore, openKeyring } from './store/keyring.js';
import { pingStore } from './store/database.js';
import { OperationLog } from './store/operation-log.js';
import { pruneDeliveries } from './store/webhook-repository.js';
import { OperationSupervisor } from './reconciler/operation-supervisor.js';
import { WebhookDispatcher } from './reconciler/webhook-dispatcher.js';
import { EventStream } from './service/event-stream.js';
import { OperationService } from './service/operations.js';
import { WebhookService } from './service/webhooks.js';
import { TlsAuthority } from './service/tls-authority.js';
import { TlsService } from './service/tls.js';
import { Openssl } from './lib/x509.js';
import { currentServerCertificateEnds } from './store/tls-repository.js';
import { eventRecord } from './http/serializers.js';
import type { TargetPolicy } from './lib/ssrf-guard.js';

export interface Hangar {
  readonly config: Config;
  /** Backups: the runner (snapshots, retention) and the scheduler (tests tick it with their clock). */
  readonly backups: { readonly runner: BackupRunner; readonly scheduler: BackupScheduler; readonly service: BackupService };
  readonly app: FastifyInstance;
  readonly store: Store;
  /** The zones served, each with its runtime and engines. */
  readonly zones: ZoneDirectory;
  readonly reconciler: Reconciler;
  /** Every asynchronous action, recorded: what services and workers start, step, finish. */
  readonly operations: OperationLog;
  readonly log: Logger;
  /** The Prometheus registry of this hangar, served at /metrics. */
  readonly metrics: Metrics;
  /** Certificates of instance connections: the deployment's CA, server certificates, client certificates and CRLs. */
  readonly tls: TlsService;
  /** Base URL of the API, e.g. http://127.0.0.1:8080 (empty when started without listening). */
  readonly url: string;
  /**
   * Stops: drains (HANGAR_DRAIN_PERIOD: /readyz 503, answers close their connections), stops
   * serving (in-flight requests finish), stops the reconciler between steps, closes the store.
   * Engines keep running.
   */
  close(): Promise<void>;
}

/** While stopping, how often connections that went idle are closed. */
const IDLE_CHECK_MS = 50;

/** Fields that never reach a log line. */
export const REDACT = [
  'password',
  '*.password',
  'pass_key',
  '*.pass_key',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'private_key',
  '*.private_key',
  'headers.authorization',
  'headers["x-auth-token"]',
  'req.headers.authorization',
  'req.headers["x-auth-token"]',
  'body.password',
  'body.token',
  'req.body',
];

/** JSON lines on stdout (or `destination`), credentials redacted. */
export function createLogger(config: Config, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' }, base: { replica: config.replicaId } };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The data dir holds the key file, the SQLite store and engine data: readable by its owner only.
 * A dir made by someone else with wider permissions is narrowed (and said so), and the process
 * creates files and directories with mode 0600/0700 from then on (umask 077). The one bit left
 * alone is the group's search bit: the local runtime sets it, with the engine user's group, for
 * engines that run as that user to pass through to `instances/` (`ensureEngineDirs`).
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
  if ((mode & 0o067) !== 0) {
    chmodSync(dataDir, 0o700);
    log.warn({ dataDir, was: mode.toString(8) }, 'data dir was readable by others; now 0700');
  }
}

export interface StartOptions {
  /** Overrides of the HTTP limits (tests shorten the timeouts). */
  readonly http?: Partial<HttpLimits>;
  /** Whether to listen on the configured address (default); without it the app only answers `app.inject` (tests). */
  readonly listen?: boolean;
  /** The clock backup schedules are read with (tests move it); Date.now by default. */
  readonly backupClock?: () => number;
  /** When a pass first writes to its operations, in ms (tests); a quarter second by default. */
  readonly operationFirstFlushMs?: number;
}

/** The composition root: store, keyring, runtime, reconciler, services, HTTP. */
export async function startHangar(config: Config, logger?: Logger, options: StartOptions = {}): Promise<Hangar> {
  const log = logger ?? createLogger(config);
  ensurePrivateDataDir(config.dataDir, log);
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  let store: Store | undefined;
  try {
    store = await openStore(config);
    const openedStore = store;
    const db = store.db;
    const keyring = await openKeyring(config, db);
    await assertKeysOpenStore(db, keyring);
    // openssl works in the data dir: the CA's key is on disk there only while it runs
    const openssl = new Openssl({ workDir: config.dataDir });
    const authority = await TlsAuthority.open({ config, db, keyring, openssl, now: Date.now, log: log.child({ component: 'tls' }) });
    const zones = await buildZones(config, log, config.zonesFile ? loadZonesFile(config.zonesFile) : undefined);
    const now = Date.now;
    const metrics = new Metrics({ defaultMetrics: true });
    const operations = new OperationLog(db, { now, deadlines: config.operationDeadlines });
    let streams: EventStream | undefined;
    const supervisor = new OperationSupervisor({
      db,
      log: log.child({ component: 'operations' }),
      now,
      config,
      operations,
      prune: [(at) => pruneDeliveries(db, at - config.operationRetentionSeconds * 1000, 2000)],
      ...(options.operationFirstFlushMs !== undefined ? { firstFlushMs: options.operationFirstFlushMs } : {}),
    });
    const storage = await openBackupStorage(config);
    // Each backup and restore is followed by an operation of the same id.
    const backupFlow = new OperationFlow(operations);
    let backupService: BackupService | undefined;
    const runner: BackupRunner = new BackupRunner({
      db,
      keyring,
      zones,
      storage,
      config,
      log: log.child({ component: 'backups' }),
      now,
      steps: (signal) => stepContext(signal, config.dieAt),
      isOwner: (): boolean => reconciler.isOwner,
      ownerIsDead: (owner: string): boolean => reconciler.ownerIsDead(owner),
      remove: (b) => backupService!.remove(b),
      work: { enqueue: (id) => reconciler.enqueue(id), settle: (id, ms) => reconciler.settle(id, ms) },
      events: backupFlow,
      metrics,
    });
    const restores = new RestoreRunner({
      db,
      keyring,
      storage,
      log: log.child({ component: 'backups' }),
      now,
      events: backupFlow,
      metrics,
    });
    // restores whose pass was cut short between their end and the instance serving again
    runner.onSweep(() => restores.settleRestores());
    const reconciler: Reconciler = new Reconciler({
      restores,
      db,
      keyring,
      zones,
      config,
      log: log.child({ component: 'reconciler' }),
      now,
      steps: (signal) => stepContext(signal, config.dieAt),
      metrics,
      observer: supervisor,
    });
    const zoneService = new ZoneService(db, zones);
    metrics.watch({
      queueDepth: () => reconciler.queueDepth,
      isOwner: (): boolean => reconciler.isOwner,
      instanceCounts: () => countInstancesByServiceAndState(db),
      states: INSTANCE_STATES,
      runtimeStats: async () => {
        const all = await Promise.all(zones.targets().map((t) => t.runtime.stats()));
        return {
          processesUp: all.reduce((n, x) => n + x.processesUp, 0),
          processesExpected: all.reduce((n, x) => n + x.processesExpected, 0),
          edge: all.flatMap((x) => x.edge),
        };
      },
      zones: async () => {
        const summaries = await zoneService.list();
        return summaries.map((z) => ({ zone: z.name, capacityMb: z.capacityMb, allocatedMb: z.allocatedMb }));
      },
      eventStreams: () => streams?.size ?? 0,
      storeStatements: () => openedStore.statements(),
      onError: (what, err) => log.warn({ err, metric: what }, 'metric not collected'),
    });
    const deps: ServiceDeps = { db, keyring, zones, config, work: reconciler, operations, now };
    // The API's port is known once it listens (0 picks one).
    let apiPort = config.port;
    const policy: TargetPolicy = {
      allowPrivate: config.webhookAllowPrivate,
      isOwnPort: (port) =>
        port === apiPort ||
        (port >= config.portRange.first && port <= config.portRange.last) ||
        zones.list().some((z) => port >= z.ports.first && port <= z.ports.last),
    };
    const events = new EventStream(db, log.child({ component: 'events' }));
    streams = events;
    const dispatcher = new WebhookDispatcher({
      db,
      keyring,
      log: log.child({ component: 'webhooks' }),
      now,
      config,
      render: (e) => JSON.stringify(eventRecord(e)),
      policy,
      owner: config.replicaId,
    });
    const accounts = new AccountService(db, { tokenTtlSeconds: config.tokenTtlSeconds, now });
    backupService = new BackupService(deps, storage, runner);
    const scheduler = new BackupScheduler({
      db,
      keyring,
      log: log.child({ component: 'backups' }),
      now: options.backupClock ?? now,
      backups: backupService,
      runner,
    });
    metrics.watchBackups(
      () => lastSuccessfulBackups(db),
      now,
      (what, err) => log.warn({ err, metric: what }, 'metric not collected'),
    );
    metrics.watchTlsCertificates(
      () => currentServerCertificateEnds(db),
      now,
      (what, err) => log.warn({ err, metric: what }, 'metric not collected'),
    );
    const instances = new InstanceService(deps, zoneService, backupService);
    const audit = new AuditService(db);
    const tls = new TlsService(deps, instances, authority, openssl);
    const services: Services = {
      accounts,
      instances,
      acls: new AclService(deps, instances),
      redis: new RedisService(deps, instances, zoneService),
      elasticsearch: new ElasticsearchService(deps, instances, zoneService),
      redisUsers: new RedisUserService(deps, instances),
      passwords: new PasswordService(deps, instances),
      zones: zoneService,
      mongodbUsers: new MongoUserService(deps, instances),
      backups: backupService,
      audit,
      idempotency: new IdempotencyService(db, now),
      loginGuard: new LoginGuard({ perLoginAndSource: config.loginFailureLimit, perSource: config.loginSourceFailureLimit }, now),
      rateLimiter: new RateLimiter(config.rateLimit, now),
      operations: new OperationService(deps),
      events,
      webhooks: new WebhookService(deps, policy),
      tls,
    };
    if (config.bootstrapLogin && config.bootstrapPassword) {
      if (await accounts.ensureAccount(config.bootstrapLogin, config.bootstrapPassword)) {
        log.info({ login: config.bootstrapLogin }, 'bootstrap account created');
        const account = await accounts.accountByLogin(config.bootstrapLogin);
        await audit.record({
          accountId: account.id,
          login: account.login,
          action: 'account.create',
          target: `account:${account.login}`,
          sourceIp: null,
          outcome: 'success',
          statusCode: null,
          requestId: null,
          createdAt: now(),
        });
      }
    }
    let stopping = false;
    const readiness = {
      async check() {
        // first of all: a stopping hangar is taken out of rotation while it still serves
        if (stopping) return { problems: ['hangar is stopping'], degraded: [] };
        const problems: string[] = [];
        // the runtimes as they are when the request is taken, before the store is asked
        const health = zones.targets().map((t) => t.runtime.health());
        // redis is the default service: a zone offering it where no engine can run it makes this hangar unready
        const redis = new Set(
          zones.list().flatMap((z) => {
            const o = serviceOffering(z.engines.offerings(), 'redis');
            return z.services.includes('redis') && !o.default ? [o.unavailableReason ?? 'redis cannot run here'] : [];
          }),
        );
        try {
          await pingStore(db);
        } catch {
          problems.push(`store unreachable: ${openedStore.location}`);
        }
        return { problems: [...problems, ...redis, ...health.flatMap((h) => h.problems)], degraded: health.flatMap((h) => h.degraded) };
      },
    };
    const app = await buildApp(
      { config, services, readiness, now, metrics, stopping: () => stopping },
      log,
      options.http ? { http: options.http } : {},
    );
    await reconciler.start();
    supervisor.start();
    dispatcher.start();
    runner.start();
    scheduler.start();
    let url = '';
    if (options.listen !== false) {
      await app.listen({ port: config.port, host: config.host });
      const scheme = config.tlsCert ? 'https' : 'http';
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      apiPort = port;
      url = `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    } else {
      await app.ready();
    }
    log.info({ url, runtimes: zones.targets().map((t) => t.runtime.kind), store: store.location }, 'hangar is serving');
    let closing: Promise<void> | undefined;
    return {
      config,
      backups: { runner, scheduler, service: backupService },
      app,
      store,
      zones,
      reconciler,
      operations,
      log,
      metrics,
      tls,
      url,
      close: () =>
        (closing ??= (async () => {
          // Draining: /readyz answers 503 and every answer closes its connection, while requests
          // are still served, so that load balancers move clients elsewhere before the listener
          // closes (HANGAR_DRAIN_PERIOD).
          stopping = true;
          if (url !== '' && config.drainSeconds > 0) {
            log.info({ seconds: config.drainSeconds }, 'draining');
            await sleep(config.drainSeconds * 1000);
          }
          // Then the listener closes; requests in flight finish; the connection of each is closed
          // as soon as it is idle, rather than kept until the client's keep-alive time runs out
          // (which would hold the stop).
          const idle = setInterval(() => app.server.closeIdleConnections(), IDLE_CHECK_MS);
          events.close();
          try {
            await app.close();
          } finally {
            clearInterval(idle);
          }
          await scheduler.stop();
          await runner.stop();
          await dispatcher.stop();
          await supervisor.stop();
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
