import { homedir, hostname } from 'node:os';
import { isIPv4 } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import { DEADLINE_FAMILIES, OPERATION_KINDS, type OperationDeadlines } from './domain/operations.js';
import { parsePolicy, type BackupPolicy } from './domain/backups.js';

/**
 * Every setting of hangar, in one table: its flag, its environment variable, its default and
 * what it does. `loadConfig` reads them once (flag > env > default); the README's configuration
 * table and `hangar serve --help` are printed from the same table.
 */
export interface Config {
  /** TCP port of the API. */
  readonly port: number;
  /** Address the API listens on. */
  readonly host: string;
  /** Directory for the SQLite file, the secret key file and engine data (as root, engine data may be outside it: `resolveEngineDir`). */
  readonly dataDir: string;
  /** `postgres://...` selects PostgreSQL; empty means SQLite in the data dir. */
  readonly databaseUrl: string | undefined;
  /** Where engines run: `local` (real processes) or `emulated` (in-process models). */
  readonly runtime: RuntimeKind;
  /** Account created at start when it does not exist. */
  readonly bootstrapLogin: string | undefined;
  readonly bootstrapPassword: string | undefined;
  /** Lifetime of an API token, in seconds. */
  readonly tokenTtlSeconds: number;
  /** IPv4 address written into connection strings. */
  readonly advertiseHost: string;
  /** Address the edge listeners bind to; defaults to the advertised host. */
  readonly edgeBind: string;
  /** Ports hangar allocates for edge listeners and engines, inclusive. */
  readonly portRange: { readonly first: number; readonly last: number };
  readonly logLevel: string;
  /** Comma-separated base64 AES-256 keys, the first encrypts; empty means the key file in the data dir. */
  readonly secretKey: string | undefined;
  readonly tlsCert: string | undefined;
  readonly tlsKey: string | undefined;
  /**
   * PEM files of the CA that signs the instances' certificates (and client certificates of
   * mutual TLS); unset: a CA hangar generates at its first start and keeps in the store.
   */
  readonly tlsCaCert: string | undefined;
  readonly tlsCaKey: string | undefined;
  /** API requests per minute per account. */
  readonly rateLimit: number;
  /** Failed logins per minute of one login from one source address before that login is refused from there (429). */
  readonly loginFailureLimit: number;
  /** Failed logins per minute from one source address, whatever the logins, before every login from there is refused (429). */
  readonly loginSourceFailureLimit: number;
  readonly maxInstancesPerAccount: number;
  readonly maxAclsPerInstance: number;
  /** Default `maxmemory-policy` of new Redis instances. */
  readonly redisMaxmemoryPolicy: string;
  readonly redisServerBin: string;
  readonly valkeyServerBin: string | undefined;
  readonly haproxyBin: string;
  readonly mongodBin: string | undefined;
  readonly mongosBin: string | undefined;
  readonly elasticsearchBin: string | undefined;
  readonly opensearchBin: string | undefined;
  readonly kibanaBin: string | undefined;
  /** ferretdb binary; unset: the versions in the engine cache, else `ferretdb` on PATH. */
  readonly ferretdbBin: string | undefined;
  /**
   * The user the local runtime's engines run as when hangar runs as root (made at start when
   * missing); `root` keeps them root. Not used when hangar runs as another user: engines run as it.
   */
  readonly engineUser: string;
  /**
   * Where `hangar engines install` keeps engines fetched from their publishers
   * (`<cache>/<product>/<version>/`); default `/var/cache/hangar/engines` for root, else
   * `$XDG_CACHE_HOME/hangar/engines` (`~/.cache/hangar/engines`).
   */
  readonly engineCache: string;
  /** Identity of this hangar process in leases. */
  readonly replicaId: string;
  /** Identity of the machine whose engines this process may own. */
  readonly hostId: string;
  /** Reconcile passes running at once. */
  readonly workers: number;
  /** Seconds between full sweeps of every instance. */
  readonly resyncSeconds: number;
  /** Seconds a lease lasts without renewal. */
  readonly leaseSeconds: number;
  /** The zones file: each zone's placement target; undefined: every zone of the spec on `runtime`. */
  readonly zonesFile: string | undefined;
  /** Memory of this host kept out of what local zones may promise, in MB. */
  readonly memoryReserveMb: number;
  /** Seconds an instance may stay REQUESTED/BUILDING before it is FAILED. */
  readonly buildTimeoutSeconds: number;
  /** Seconds an operation of each kind may run before it is FAILED (`default` for kinds not named). */
  readonly operationDeadlines: OperationDeadlines;
  /** Seconds finished operations and webhook delivery records are kept. */
  readonly operationRetentionSeconds: number;
  /** Seconds events are kept for the stream to resume from (Last-Event-ID). */
  readonly eventRetentionSeconds: number;
  /** Whether webhooks may use plain http:// URLs. */
  readonly webhookAllowHttp: boolean;
  /** Whether webhooks may target loopback, private and link-local addresses. */
  readonly webhookAllowPrivate: boolean;
  /** Seconds a webhook delivery is retried before it is given up. */
  readonly webhookRetryWindowSeconds: number;
  /** Seconds a replaced password stays accepted after a rotation, unless the rotation is finished earlier. */
  readonly passwordGraceSeconds: number;
  /**
   * Seconds a stopping hangar keeps serving after SIGTERM (or SIGINT), with /readyz answering 503
   * and every answer closing its connection, so that load balancers take it out of rotation
   * before its listener closes; 0: none.
   */
  readonly drainSeconds: number;
  /** Directory of backup objects (when no S3 bucket is set); unset: `<data dir>/backups`. */
  readonly backupDir: string | undefined;
  /** S3 bucket of backup objects; set: backups go to S3-compatible object storage. */
  readonly backupS3Bucket: string | undefined;
  /** Key prefix of backup objects in the bucket. */
  readonly backupS3Prefix: string;
  /** S3-compatible endpoint URL; unset: AWS. */
  readonly backupS3Endpoint: string | undefined;
  readonly backupS3Region: string;
  readonly backupS3AccessKeyId: string | undefined;
  readonly backupS3SecretAccessKey: string | undefined;
  /** Backup policy of new instances (`off`, `every=6h`, `daily=03:00`, `keep=7`, `days=30`). */
  readonly backupPolicy: BackupPolicy;
  /** Test-only: name of a step at which the process kills itself (fault-injection tests). */
  readonly dieAt: string | undefined;
}

/** The runtime of every zone when no zones file says otherwise. */
export type RuntimeKind = 'local' | 'emulated';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Kind =
  | 'string'
  | 'int'
  | 'seconds'
  | 'path'
  | 'runtime'
  | 'range'
  | 'ipv4'
  | 'policy'
  | 'bool'
  | 'deadlines'
  | 'backup-policy'
  | 'url'
  | 'user';

export interface SettingDoc {
  readonly key: keyof Config;
  readonly flag: string;
  readonly env: string;
  readonly kind: Kind;
  /** Default as shown to people; undefined means unset. */
  readonly default: string | undefined;
  readonly description: string;
}

/** Deadlines of operations, in seconds, by kind family. */
const DEFAULT_DEADLINES =
  'create=300,resize=600,rename=120,delete=600,acl=120,user=120,password=120,config=120,backup=3600,restore=3600,default=3600';

const REDIS_POLICIES = [
  'noeviction',
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-random',
  'volatile-ttl',
] as const;

export const SETTINGS: readonly SettingDoc[] = [
  { key: 'port', flag: 'port', env: 'HANGAR_PORT', kind: 'int', default: '8080', description: 'TCP port of the API' },
  { key: 'host', flag: 'host', env: 'HANGAR_HOST', kind: 'string', default: '127.0.0.1', description: 'address the API listens on' },
  {
    key: 'dataDir',
    flag: 'data-dir',
    env: 'HANGAR_DATA_DIR',
    kind: 'path',
    default: './.hangar',
    description:
      'SQLite file, secret key file, engine data and edge configuration; when hangar runs as root and the engine user cannot pass through the directories above it, engine data goes to /var/lib/hangar-engines/<16 hex digits of the SHA-256 of its real path>/ instead',
  },
  {
    key: 'databaseUrl',
    flag: 'database-url',
    env: 'HANGAR_DATABASE_URL',
    kind: 'string',
    default: undefined,
    description: '`postgres://...` stores state in PostgreSQL (required for several replicas); unset: SQLite in the data dir',
  },
  {
    key: 'runtime',
    flag: 'runtime',
    env: 'HANGAR_RUNTIME',
    kind: 'runtime',
    default: 'local',
    description:
      '`local` runs real engines on this machine (redis-server behind an HAProxy edge); `emulated` models them in-process (for developing API clients)',
  },
  {
    key: 'bootstrapLogin',
    flag: 'bootstrap-login',
    env: 'HANGAR_BOOTSTRAP_LOGIN',
    kind: 'string',
    default: undefined,
    description: 'account created at start if it does not exist (with the password below)',
  },
  {
    key: 'bootstrapPassword',
    flag: 'bootstrap-password',
    env: 'HANGAR_BOOTSTRAP_PASSWORD',
    kind: 'string',
    default: undefined,
    description: 'password of the bootstrap account',
  },
  {
    key: 'tokenTtlSeconds',
    flag: 'token-ttl',
    env: 'HANGAR_TOKEN_TTL',
    kind: 'int',
    default: '86400',
    description: 'seconds an API token stays valid',
  },
  {
    key: 'advertiseHost',
    flag: 'advertise-host',
    env: 'HANGAR_ADVERTISE_HOST',
    kind: 'ipv4',
    default: '127.0.0.1',
    description: 'IPv4 address put in connection strings',
  },
  {
    key: 'edgeBind',
    flag: 'edge-bind',
    env: 'HANGAR_EDGE_BIND',
    kind: 'string',
    default: undefined,
    description: 'address the edge listeners bind to (default: the advertised host; `0.0.0.0` for every interface)',
  },
  {
    key: 'portRange',
    flag: 'port-range',
    env: 'HANGAR_PORT_RANGE',
    kind: 'range',
    default: '20000-29999',
    description: 'ports hangar allocates to edge listeners and engines',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'HANGAR_LOG_LEVEL',
    kind: 'string',
    default: 'info',
    description: 'pino log level (fatal, error, warn, info, debug, trace, silent)',
  },
  {
    key: 'secretKey',
    flag: 'secret-key',
    env: 'HANGAR_SECRET_KEY',
    kind: 'string',
    default: undefined,
    description:
      'base64 AES-256 keys, comma-separated, the first one encrypts; unset: `secret.key` in the data dir, created with mode 0600',
  },
  {
    key: 'tlsCert',
    flag: 'tls-cert',
    env: 'HANGAR_TLS_CERT',
    kind: 'path',
    default: undefined,
    description: 'PEM certificate: serve the API over HTTPS',
  },
  {
    key: 'tlsKey',
    flag: 'tls-key',
    env: 'HANGAR_TLS_KEY',
    kind: 'path',
    default: undefined,
    description: 'PEM private key of that certificate',
  },
  {
    key: 'tlsCaCert',
    flag: 'tls-ca-cert',
    env: 'HANGAR_TLS_CA_CERT',
    kind: 'path',
    default: undefined,
    description:
      "PEM certificate of the CA that signs the instances' certificates (basicConstraints CA:TRUE); unset: a CA hangar makes at its first start and keeps in the store",
  },
  {
    key: 'tlsCaKey',
    flag: 'tls-ca-key',
    env: 'HANGAR_TLS_CA_KEY',
    kind: 'path',
    default: undefined,
    description: 'PEM private key of that CA (unencrypted); checked at start against the certificate',
  },
  {
    key: 'rateLimit',
    flag: 'rate-limit',
    env: 'HANGAR_RATE_LIMIT',
    kind: 'int',
    default: '6000',
    description: 'API requests per minute per account (429 above)',
  },
  {
    key: 'loginFailureLimit',
    flag: 'login-failure-limit',
    env: 'HANGAR_LOGIN_FAILURE_LIMIT',
    kind: 'int',
    default: '5',
    description:
      'failed logins per minute of one login from one source address (an IPv6 /64) before that login is refused from there (429)',
  },
  {
    key: 'loginSourceFailureLimit',
    flag: 'login-source-failure-limit',
    env: 'HANGAR_LOGIN_SOURCE_FAILURE_LIMIT',
    kind: 'int',
    default: '50',
    description: 'failed logins per minute from one source address, whatever the logins, before every login from there is refused (429)',
  },
  {
    key: 'maxInstancesPerAccount',
    flag: 'max-instances',
    env: 'HANGAR_MAX_INSTANCES',
    kind: 'int',
    default: '100',
    description: 'instances an account may have',
  },
  {
    key: 'maxAclsPerInstance',
    flag: 'max-acls',
    env: 'HANGAR_MAX_ACLS',
    kind: 'int',
    default: '100',
    description: 'ACLs an instance may have',
  },
  {
    key: 'redisMaxmemoryPolicy',
    flag: 'redis-maxmemory-policy',
    env: 'HANGAR_REDIS_MAXMEMORY_POLICY',
    kind: 'policy',
    default: 'noeviction',
    description: '`maxmemory-policy` of new Redis instances',
  },
  {
    key: 'redisServerBin',
    flag: 'redis-server-bin',
    env: 'HANGAR_REDIS_SERVER_BIN',
    kind: 'string',
    default: 'redis-server',
    description: 'redis-server binary',
  },
  {
    key: 'valkeyServerBin',
    flag: 'valkey-server-bin',
    env: 'HANGAR_VALKEY_SERVER_BIN',
    kind: 'string',
    default: undefined,
    description: 'valkey-server binary (default: `valkey-server` on PATH)',
  },
  {
    key: 'haproxyBin',
    flag: 'haproxy-bin',
    env: 'HANGAR_HAPROXY_BIN',
    kind: 'string',
    default: 'haproxy',
    description: 'HAProxy binary of the edge',
  },
  {
    key: 'mongodBin',
    flag: 'mongod-bin',
    env: 'HANGAR_MONGOD_BIN',
    kind: 'string',
    default: undefined,
    description: 'mongod binary (default: `mongod` on PATH)',
  },
  {
    key: 'mongosBin',
    flag: 'mongos-bin',
    env: 'HANGAR_MONGOS_BIN',
    kind: 'string',
    default: undefined,
    description: 'mongos binary (default: `mongos` on PATH)',
  },
  {
    key: 'elasticsearchBin',
    flag: 'elasticsearch-bin',
    env: 'HANGAR_ELASTICSEARCH_BIN',
    kind: 'string',
    default: undefined,
    description:
      "elasticsearch binary, for a version the engine cache does not hold (default: `elasticsearch` on PATH; the cache's installs need none)",
  },
  {
    key: 'opensearchBin',
    flag: 'opensearch-bin',
    env: 'HANGAR_OPENSEARCH_BIN',
    kind: 'string',
    default: undefined,
    description:
      "opensearch binary, for a version the engine cache does not hold (default: `opensearch` on PATH; the cache's installs need none)",
  },
  {
    key: 'kibanaBin',
    flag: 'kibana-bin',
    env: 'HANGAR_KIBANA_BIN',
    kind: 'string',
    default: undefined,
    description:
      'kibana or opensearch-dashboards binary, run beside nodes of its release series (default: either on PATH; without one, the Kibana listeners answer 503 saying why)',
  },
  {
    key: 'ferretdbBin',
    flag: 'ferretdb-bin',
    env: 'HANGAR_FERRETDB_BIN',
    kind: 'string',
    default: undefined,
    description:
      'ferretdb binary, the one version offered (default: every version in the engine cache, `hangar engines install ferretdb@1.24.2`; else `ferretdb` on PATH)',
  },
  {
    key: 'engineUser',
    flag: 'engine-user',
    env: 'HANGAR_ENGINE_USER',
    kind: 'user',
    default: 'hangar-engine',
    description:
      'user the engines of the local runtime run as when hangar runs as root: a system user without home or shell, made at start when missing (`useradd`, or `adduser`); `root` runs them as root (Elasticsearch and OpenSearch then cannot run); not used when hangar runs as another user (engines run as that user)',
  },
  {
    key: 'engineCache',
    flag: 'engine-cache',
    env: 'HANGAR_ENGINE_CACHE',
    kind: 'path',
    default: undefined,
    description:
      'directory of the engines `hangar engines install` fetches (default: `/var/cache/hangar/engines` as root, else `$XDG_CACHE_HOME/hangar/engines`, `~/.cache/hangar/engines` when that is unset)',
  },
  {
    key: 'replicaId',
    flag: 'replica-id',
    env: 'HANGAR_REPLICA_ID',
    kind: 'string',
    default: undefined,
    description: 'name of this process in leases (default: host name and process id)',
  },
  {
    key: 'hostId',
    flag: 'host-id',
    env: 'HANGAR_HOST_ID',
    kind: 'string',
    default: undefined,
    description: 'name of this machine in leases (default: the host name)',
  },
  { key: 'workers', flag: 'workers', env: 'HANGAR_WORKERS', kind: 'int', default: '16', description: 'reconcile passes running at once' },
  {
    key: 'resyncSeconds',
    flag: 'resync-interval',
    env: 'HANGAR_RESYNC_INTERVAL',
    kind: 'int',
    default: '30',
    description: 'seconds between full sweeps of every instance',
  },
  {
    key: 'leaseSeconds',
    flag: 'lease-ttl',
    env: 'HANGAR_LEASE_TTL',
    kind: 'int',
    default: '6',
    description: 'seconds a work or host lease lasts without renewal',
  },
  {
    key: 'zonesFile',
    flag: 'zones',
    env: 'HANGAR_ZONES',
    kind: 'path',
    default: undefined,
    description:
      'JSON or YAML file mapping each zone to its placement target (`local`, `emulated`, `kubernetes`) and capacity (see [zones](#zones-and-capacity)); unset: every zone of the spec on `--runtime`',
  },
  {
    key: 'memoryReserveMb',
    flag: 'memory-reserve',
    env: 'HANGAR_MEMORY_RESERVE_MB',
    kind: 'int',
    default: '1024',
    description: "MB of this host's memory that local zones may not promise (left to hangar, the edge and the system)",
  },
  {
    key: 'buildTimeoutSeconds',
    flag: 'build-timeout',
    env: 'HANGAR_BUILD_TIMEOUT',
    kind: 'int',
    default: '120',
    description: 'seconds an instance may take to become ready before it is FAILED',
  },
  {
    key: 'operationDeadlines',
    flag: 'operation-deadlines',
    env: 'HANGAR_OPERATION_DEADLINES',
    kind: 'deadlines',
    default: DEFAULT_DEADLINES,
    description:
      'seconds an operation may run before it is FAILED, per kind (`acl`, `user`, `password` and `config` cover their kinds; `default` the kinds not named); a value names only the kinds it changes, e.g. `create=600`',
  },
  {
    key: 'operationRetentionSeconds',
    flag: 'operation-retention',
    env: 'HANGAR_OPERATION_RETENTION',
    kind: 'int',
    default: '2592000',
    description: 'seconds finished operations and webhook delivery records are kept',
  },
  {
    key: 'eventRetentionSeconds',
    flag: 'event-retention',
    env: 'HANGAR_EVENT_RETENTION',
    kind: 'int',
    default: '86400',
    description: 'seconds events are kept for `GET /v2/events/stream` to resume from (`Last-Event-ID`)',
  },
  {
    key: 'webhookAllowHttp',
    flag: 'webhook-allow-http',
    env: 'HANGAR_WEBHOOK_ALLOW_HTTP',
    kind: 'bool',
    default: 'false',
    description: '`true`: webhooks may use plain `http://` URLs (otherwise https only)',
  },
  {
    key: 'webhookAllowPrivate',
    flag: 'webhook-allow-private',
    env: 'HANGAR_WEBHOOK_ALLOW_PRIVATE',
    kind: 'bool',
    default: 'false',
    description:
      "`true`: webhooks may target loopback, private and link-local addresses (never cloud metadata addresses or hangar's own listeners)",
  },
  {
    key: 'webhookRetryWindowSeconds',
    flag: 'webhook-retry-window',
    env: 'HANGAR_WEBHOOK_RETRY_WINDOW',
    kind: 'int',
    default: '86400',
    description: 'seconds a webhook delivery is retried, with exponential backoff, before it is given up',
  },
  {
    key: 'passwordGraceSeconds',
    flag: 'password-grace',
    env: 'HANGAR_PASSWORD_GRACE',
    kind: 'int',
    default: '3600',
    description:
      'seconds the old password keeps working after a password rotation (instance or Redis user), unless `.../rotate-password/finish` ends it earlier',
  },
  {
    key: 'drainSeconds',
    flag: 'drain-period',
    env: 'HANGAR_DRAIN_PERIOD',
    kind: 'seconds',
    default: '3',
    description:
      'seconds a stopping hangar (SIGTERM, SIGINT) keeps serving, /readyz answering 503 and every answer closing its connection, before its listener closes; 0: none',
  },
  {
    key: 'backupDir',
    flag: 'backup-dir',
    env: 'HANGAR_BACKUP_DIR',
    kind: 'path',
    default: undefined,
    description: 'directory of backup objects (default: `backups` in the data dir); not used when a bucket is set',
  },
  {
    key: 'backupS3Bucket',
    flag: 'backup-s3-bucket',
    env: 'HANGAR_BACKUP_S3_BUCKET',
    kind: 'string',
    default: undefined,
    description: 'S3 bucket: backups go to S3-compatible object storage instead of the directory',
  },
  {
    key: 'backupS3Prefix',
    flag: 'backup-s3-prefix',
    env: 'HANGAR_BACKUP_S3_PREFIX',
    kind: 'string',
    default: 'hangar/',
    description: 'key prefix of backup objects in the bucket',
  },
  {
    key: 'backupS3Endpoint',
    flag: 'backup-s3-endpoint',
    env: 'HANGAR_BACKUP_S3_ENDPOINT',
    kind: 'url',
    default: undefined,
    description: 'URL of an S3-compatible endpoint (MinIO, Ceph...; path-style addressing); unset: AWS',
  },
  {
    key: 'backupS3Region',
    flag: 'backup-s3-region',
    env: 'HANGAR_BACKUP_S3_REGION',
    kind: 'string',
    default: 'us-east-1',
    description: 'region of the bucket',
  },
  {
    key: 'backupS3AccessKeyId',
    flag: 'backup-s3-access-key-id',
    env: 'HANGAR_BACKUP_S3_ACCESS_KEY_ID',
    kind: 'string',
    default: undefined,
    description: 'access key of the object storage; unset: the AWS SDK default chain (environment, profile, instance role)',
  },
  {
    key: 'backupS3SecretAccessKey',
    flag: 'backup-s3-secret-access-key',
    env: 'HANGAR_BACKUP_S3_SECRET_ACCESS_KEY',
    kind: 'string',
    default: undefined,
    description: 'secret of that access key',
  },
  {
    key: 'backupPolicy',
    flag: 'backup-policy',
    env: 'HANGAR_BACKUP_POLICY',
    kind: 'backup-policy',
    default: 'off',
    description:
      'backup policy of new instances: `off`, `every=Nh` or `daily=HH:MM` (UTC), then `keep=K` and/or `days=D` (e.g. `daily=03:00,keep=7`)',
  },
  {
    key: 'dieAt',
    flag: 'die-at',
    env: 'HANGAR_TEST_DIE_AT',
    kind: 'string',
    default: undefined,
    description: 'test only: a step name (e.g. `create:primary-started`) at which hangar kills itself with SIGKILL',
  },
];

export type ArgValues = Readonly<Record<string, string | boolean | undefined>>;

/** The engine cache when none is set: the system's for root, else the user's cache directory (XDG). */
export function defaultEngineCache(env: NodeJS.ProcessEnv, uid: number): string {
  if (uid === 0) return '/var/cache/hangar/engines';
  const xdg = env.XDG_CACHE_HOME;
  // the XDG spec: a relative XDG_CACHE_HOME is invalid and ignored
  if (xdg && isAbsolute(xdg)) return join(xdg, 'hangar', 'engines');
  return join(env.HOME || homedir(), '.cache', 'hangar', 'engines');
}

/** Reads the settings from parsed flags and the environment, flag first. */
export function loadConfig(flags: ArgValues, env: NodeJS.ProcessEnv): Config {
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const fromFlag = flags[s.flag];
    const fromEnv = env[s.env];
    const raw = typeof fromFlag === 'string' ? fromFlag : fromEnv !== undefined && fromEnv !== '' ? fromEnv : s.default;
    const source = typeof fromFlag === 'string' ? `--${s.flag}` : fromEnv ? s.env : `default of ${s.env}`;
    out[s.key] = raw === undefined ? undefined : parse(s, raw, source);
  }
  const host = hostname();
  out.replicaId ??= `${host}:${process.pid}`;
  out.hostId ??= host;
  out.edgeBind ??= out.advertiseHost;
  out.engineCache ??= defaultEngineCache(env, process.getuid?.() ?? -1);
  const config = out as unknown as Config;
  if ((config.bootstrapLogin === undefined) !== (config.bootstrapPassword === undefined)) {
    throw new ConfigError('HANGAR_BOOTSTRAP_LOGIN and HANGAR_BOOTSTRAP_PASSWORD go together: set both or neither');
  }
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    throw new ConfigError('HANGAR_TLS_CERT and HANGAR_TLS_KEY go together: set both or neither');
  }
  if ((config.tlsCaCert === undefined) !== (config.tlsCaKey === undefined)) {
    throw new ConfigError('HANGAR_TLS_CA_CERT and HANGAR_TLS_CA_KEY go together: set both or neither');
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new ConfigError('HANGAR_DATABASE_URL must start with postgres:// or postgresql://');
  }
  if (config.leaseSeconds < 2) throw new ConfigError('HANGAR_LEASE_TTL must be at least 2 seconds');
  if ((config.backupS3AccessKeyId === undefined) !== (config.backupS3SecretAccessKey === undefined)) {
    throw new ConfigError('HANGAR_BACKUP_S3_ACCESS_KEY_ID and HANGAR_BACKUP_S3_SECRET_ACCESS_KEY go together: set both or neither');
  }
  return Object.freeze(config);
}

function parse(s: SettingDoc, raw: string, source: string): unknown {
  switch (s.kind) {
    case 'string':
      return raw;
    case 'path':
      return resolve(raw);
    case 'int': {
      if (s.key === 'port') {
        if (!/^\d+$/.test(raw) || Number(raw) > 65535)
          throw new ConfigError(`${source} must be a TCP port (0-65535; 0 picks a free one), got "${raw}"`);
        return Number(raw);
      }
      if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
        throw new ConfigError(`${source} must be a positive integer, got "${raw}"`);
      }
      return Number(raw);
    }
    case 'seconds':
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
        throw new ConfigError(`${source} must be a number of seconds (0 or more), got "${raw}"`);
      return Number(raw);
    case 'runtime':
      if (raw !== 'local' && raw !== 'emulated') {
        throw new ConfigError(`${source} must be "local" or "emulated", got "${raw}"`);
      }
      return raw;
    case 'ipv4':
      if (!isIPv4(raw)) throw new ConfigError(`${source} must be an IPv4 address (clients parse it as one), got "${raw}"`);
      return raw;
    case 'policy':
      if (!(REDIS_POLICIES as readonly string[]).includes(raw)) {
        throw new ConfigError(`${source} must be one of ${REDIS_POLICIES.join(', ')}; got "${raw}"`);
      }
      return raw;
    case 'bool':
      if (!/^(true|false|1|0|yes|no)$/i.test(raw)) throw new ConfigError(`${source} must be true or false, got "${raw}"`);
      return /^(true|1|yes)$/i.test(raw);
    case 'deadlines':
      return parseDeadlines(raw, source);
    case 'backup-policy':
      try {
        return parsePolicy(raw);
      } catch (err) {
        throw new ConfigError(`${source}: ${(err as Error).message}`);
      }
    case 'user':
      // what useradd accepts (and no option or path in disguise)
      if (!/^[a-z_][a-z0-9_-]{0,30}\$?$/i.test(raw)) {
        throw new ConfigError(`${source} must be a user name (letters, digits, _ and -, at most 32 characters), got "${raw}"`);
      }
      return raw;
    case 'url':
      if (!/^https?:\/\/[^/\s]+/.test(raw)) throw new ConfigError(`${source} must be an http:// or https:// URL, got "${raw}"`);
      return raw;
    case 'range': {
      const m = /^(\d+)-(\d+)$/.exec(raw);
      const first = Number(m?.[1]);
      const last = Number(m?.[2]);
      if (!m || first < 1024 || last > 65535 || last - first < 16) {
        throw new ConfigError(`${source} must be FIRST-LAST within 1024-65535 with at least 16 ports, got "${raw}"`);
      }
      return Object.freeze({ first, last });
    }
  }
}

/** `create=600,acl=60`: seconds by kind or kind family, over the defaults. */
function parseDeadlines(raw: string, source: string): OperationDeadlines {
  const out: Record<string, number> = {};
  const known = new Set<string>([...DEADLINE_FAMILIES, ...OPERATION_KINDS]);
  for (const part of [DEFAULT_DEADLINES, raw].join(',').split(',')) {
    if (part.trim() === '') continue;
    const m = /^\s*([a-z]+(?:\.[a-z]+)?)=(\d+)\s*$/.exec(part);
    if (!m || !known.has(m[1]!) || Number(m[2]) < 1) {
      throw new ConfigError(`${source} must be KIND=SECONDS pairs separated by commas (kinds: ${[...known].join(', ')}), got "${raw}"`);
    }
    out[m[1]!] = Number(m[2]);
  }
  return Object.freeze(out);
}

/** The `--flag` definitions for node:util parseArgs, shared by `serve` and the operator commands. */
export function settingOptions(): Record<string, { type: 'string' }> {
  return Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: 'string' as const }]));
}
