import { HangarApiError } from './errors.js';
import { readSse } from './sse.js';
import {
  FINISHED_OPERATION_STATES,
  READY_STATES,
  type AccountInfo,
  type Acl,
  type AclCheck,
  type AclDetail,
  type ApiProblem,
  type ApiKey,
  type AuditEvent,
  type Backup,
  type BackupPolicy,
  type BackupPolicyRequest,
  type ClientCertificate,
  type CreateClientCertificateRequest,
  type CreatedClientCertificate,
  type CreatedApiKey,
  type Whoami,
  type Zone,
  type EngineProduct,
  type InstanceShell,
  type CreateAclRequest,
  type CreateInstanceRequest,
  type CreateMongoUserRequest,
  type CreateRedisUserRequest,
  type CreatedInstance,
  type CreatedWebhook,
  type CreateWebhookRequest,
  type DeniedConnection,
  type EffectiveAccess,
  type HangarEvent,
  type Instance,
  type InstanceTls,
  type MongoUser,
  type Operation,
  type PasswordRotation,
  type RedisConfig,
  type RedisConfigChange,
  type RedisSlowlogEntry,
  type RedisStats,
  type RedisUser,
  type RedisUserCreated,
  type Restore,
  type SpaceUsage,
  type UpdateMongoUserRequest,
  type UpdateRedisUserRequest,
  type Webhook,
  type WebhookDelivery,
} from './types.js';

export interface HangarClientOptions {
  /** Where hangar answers, e.g. `http://127.0.0.1:8080` (a trailing `/v2` is accepted). */
  readonly url: string;
  /** Log in with a login and a password... */
  readonly login?: string;
  readonly password?: string;
  /** ...or with an API key pair. */
  readonly userKey?: string;
  readonly passKey?: string;
  /** A token from an earlier login; with credentials too, an expired one is replaced. */
  readonly token?: string;
  /** Milliseconds a request may take (default 30 s). */
  readonly timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  readonly fetch?: typeof fetch;
  /**
   * Called with each warning of a successful answer (its `Warning` headers), e.g. `10.1.2.3/8 was
   * stored as 10.0.0.0/8`: what hangar did otherwise than asked, or what the change risks.
   */
  readonly onWarning?: (warning: string, request: { readonly method: string; readonly path: string }) => void;
}

export interface WaitOptions {
  /** Give up after this long (default 10 minutes): HangarApiError WAIT_TIMEOUT. */
  readonly timeoutMs?: number;
  /** First pause between polls (default 250 ms); it grows by half each poll up to `maxIntervalMs`. */
  readonly intervalMs?: number;
  readonly maxIntervalMs?: number;
  /** Called with each record polled (undefined once it is gone), e.g. to show progress. */
  readonly onPoll?: (instance: Instance | undefined, elapsedMs: number) => void;
  readonly signal?: AbortSignal;
}

/** Options of a request that starts an operation. */
export interface CallOptions {
  /** Called with the id of the operation the request started (its X-Operation-Id), before the call resolves. */
  readonly onOperation?: (operationId: string) => void;
  /** Called with each warning of the answer, before the call resolves (as the client's own onWarning is). */
  readonly onWarning?: (warning: string) => void;
}

export interface EventsOptions {
  /** Resume after this event id: every later event is sent first (within the server's retention). */
  readonly lastEventId?: number;
  /** Only these kinds: kinds, families (`operation`, `instance`) or `*`. */
  readonly kinds?: readonly string[];
  /** Only events of this instance (name or id). */
  readonly instance?: string;
  /** Reconnect (resuming after the last event seen) when the connection drops; default true. */
  readonly reconnect?: boolean;
  /** Called when the server says events after the id resumed from were pruned: read the state again. */
  readonly onGap?: (message: string) => void;
  /** Called once the stream is established (its headers arrived): later events will be seen. */
  readonly onOpen?: () => void;
  readonly signal?: AbortSignal;
}

export interface OperationWaitOptions {
  /** Give up after this long (default 10 minutes): HangarApiError WAIT_TIMEOUT. */
  readonly timeoutMs?: number;
  /** Called with each event of the operation's instance (state changes) and of the operation. */
  readonly onEvent?: (event: HangarEvent) => void;
  readonly signal?: AbortSignal;
}

/** A quiet stream is reconnected after this (the server sends a comment every 15 s). */
const STREAM_IDLE_MS = 45_000;
/** Pause before reconnecting a dropped stream. */
const STREAM_RETRY_MS = 1000;

type Auth = 'token' | 'basic' | 'none';

/** How one request is sent and its answer read. */
interface RequestOptions {
  readonly body?: unknown;
  readonly auth?: Auth;
  readonly retry?: boolean;
  /** Where the result is: `data` (default), `message`, or the whole body. */
  readonly envelope?: 'data' | 'message' | 'body';
  /** Called with the X-Operation-Id of the answer. */
  readonly onOperation?: (operationId: string) => void;
  /** Called with each warning of the answer. */
  readonly onWarning?: (warning: string) => void;
  /** Extra request headers (If-Match). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A backup's snapshot as a download gives it. */
export interface BackupDownload {
  /** The snapshot's bytes (an RDB file for redis); the connection closes early when the backup is corrupt. */
  readonly body: ReadableStream<Uint8Array>;
  /** Its size (Content-Length): a body that ends before it was cut short. */
  readonly sizeBytes: number;
  /** Its SHA-256 as recorded when it was taken: compare it with what was received. */
  readonly sha256: string;
  /** The file name hangar suggests (`<instance>-<backup id>.<format>`). */
  readonly fileName: string;
}

const enc = encodeURIComponent;

/**
 * A client of the hangar API, typed from the schemas the server validates with. It logs in
 * with a login and password (or an API key pair) when it has no token, keeps the token, and on
 * a 401 logs in again once and repeats the request, as the ObjectRocket python client does.
 * Every failure is a HangarApiError. Uses the global fetch; no dependency.
 *
 * ```ts
 * const hangar = new HangarClient({ url: 'http://127.0.0.1:8080', login: 'me@example.com', password: '...' });
 * await hangar.createInstance({ name: 'cache', service: 'redis', type: 'redis_ha_instance', plan: 500, version: '7.0.15', zone: 'US-Dallas' });
 * const cache = await hangar.waitUntilReady('cache');
 * ```
 */
export class HangarClient {
  readonly baseUrl: string;
  private currentToken: string | undefined;
  private loggingIn: Promise<string> | undefined;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly opts: HangarClientOptions) {
    this.baseUrl = opts.url.replace(/\/+$/, '').replace(/\/v2$/, '');
    this.currentToken = opts.token;
    // Bound: a browser's fetch called as a method of another object throws "Illegal invocation".
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The token in use, if any (keep it to skip the login next time). */
  get token(): string | undefined {
    return this.currentToken;
  }

  private get credentials(): [string, string] | undefined {
    if (this.opts.login !== undefined && this.opts.password !== undefined) return [this.opts.login, this.opts.password];
    if (this.opts.userKey !== undefined && this.opts.passKey !== undefined) return [this.opts.userKey, this.opts.passKey];
    return undefined;
  }

  // --- tokens -------------------------------------------------------------------------------

  /** Logs in (HTTP Basic at `GET /v2/tokens/`), keeps the token and returns it. */
  login(): Promise<string> {
    this.loggingIn ??= (async () => {
      try {
        const { token } = await this.call<{ token: string }>('GET', '/v2/tokens/', { auth: 'basic' });
        this.currentToken = token;
        return token;
      } finally {
        this.loggingIn = undefined;
      }
    })();
    return this.loggingIn;
  }

  /** Whose a token is and when it expires (the client's own token by default). */
  async verifyToken(token?: string): Promise<AccountInfo> {
    const t = token ?? this.currentToken ?? (await this.login());
    return this.call('POST', '/v2/tokens/verify/', { auth: 'none', body: { token: t } });
  }

  /** Revokes the token in use and forgets it. */
  async logout(): Promise<void> {
    if (this.currentToken === undefined) return;
    await this.call('DELETE', '/v2/tokens/', { retry: false });
    this.currentToken = undefined;
  }

  /** The caller's account, token expiry and source address as hangar sees it. */
  whoami(): Promise<Whoami> {
    return this.call('GET', '/v2/whoami/');
  }

  // --- instances ----------------------------------------------------------------------------

  listInstances(): Promise<Instance[]> {
    return this.call('GET', '/v2/instances/');
  }

  /** Asks for an instance; it is REQUESTED at first: see waitUntilReady. */
  createInstance(body: CreateInstanceRequest, opts: CallOptions = {}): Promise<CreatedInstance> {
    return this.call('POST', '/v2/instances/', { body, ...opts });
  }

  getInstance(name: string): Promise<Instance> {
    return this.call('GET', `/v2/instances/${enc(name)}/`);
  }

  /** Starts the deletion; the instance is DELETING until it is gone: see waitUntilGone. */
  deleteInstance(name: string, opts: CallOptions = {}): Promise<string> {
    return this.call('DELETE', `/v2/instances/${enc(name)}/`, opts);
  }

  renameInstance(name: string, newName: string, opts: CallOptions = {}): Promise<string> {
    return this.call('POST', `/v2/instances/${enc(name)}/rename/`, { body: { name: newName }, ...opts });
  }

  // --- ACLs ---------------------------------------------------------------------------------

  listAcls(instance: string): Promise<Acl[]> {
    return this.call('GET', `/v2/instances/${enc(instance)}/acls/`);
  }

  /** Admits an address or range; resolves to the new ACL's id. */
  createAcl(instance: string, body: CreateAclRequest, opts: CallOptions = {}): Promise<string> {
    return this.call('POST', `/v2/instances/${enc(instance)}/acls/`, { body, ...opts });
  }

  getAcl(instance: string, aclId: string): Promise<AclDetail> {
    return this.call('GET', `/v2/instances/${enc(instance)}/acls/${enc(aclId)}/`);
  }

  async deleteAcl(instance: string, aclId: string, opts: CallOptions = {}): Promise<void> {
    await this.call('DELETE', `/v2/instances/${enc(instance)}/acls/${enc(aclId)}/`, opts);
  }

  /** The ACLs and the list's ETag, for a replace guarded by If-Match. */
  async listAclsWithEtag(instance: string): Promise<{ acls: Acl[]; etag: string }> {
    const { data, headers } = await this.callWithHeaders<Acl[]>('GET', `/v2/instances/${enc(instance)}/acls/`);
    return { acls: data, etag: headers.get('etag') ?? '' };
  }

  /**
   * Replaces the whole list at once: kept ACLs stay admitted throughout. With `ifMatch` (an
   * ETag of listAclsWithEtag), a list that changed since is a 412 PRECONDITION_FAILED.
   */
  async replaceAcls(
    instance: string,
    acls: readonly CreateAclRequest[],
    opts: { ifMatch?: string } = {},
  ): Promise<{ acls: Acl[]; etag: string }> {
    const { data, headers } = await this.callWithHeaders<Acl[]>('PUT', `/v2/instances/${enc(instance)}/acls/`, {
      body: acls,
      ...(opts.ifMatch !== undefined ? { headers: { 'if-match': opts.ifMatch } } : {}),
    });
    return { acls: data, etag: headers.get('etag') ?? '' };
  }

  /** Whether the edge would admit `ip`, and which ACL admits it. */
  checkAcl(instance: string, ip: string): Promise<AclCheck> {
    return this.call('POST', `/v2/instances/${enc(instance)}/acls/check`, { body: { ip } });
  }

  /** What the edge enforces right now, against the store (drift shows). */
  effectiveAcls(instance: string): Promise<EffectiveAccess> {
    return this.call('GET', `/v2/instances/${enc(instance)}/acls/effective`);
  }

  /** The last connections the edge refused, newest first. */
  deniedConnections(instance: string, opts: { limit?: number } = {}): Promise<DeniedConnection[]> {
    return this.call('GET', `/v2/instances/${enc(instance)}/acls/denied${opts.limit !== undefined ? `?limit=${opts.limit}` : ''}`);
  }

  // --- passwords ----------------------------------------------------------------------------

  /** A new instance password; the old one works until `previous_valid_until` (or finishInstancePasswordRotation). */
  rotateInstancePassword(instance: string): Promise<PasswordRotation> {
    return this.call('POST', `/v2/instances/${enc(instance)}/rotate-password`);
  }

  /** Retires the old instance password now; resolves to whether there was one. */
  async finishInstancePasswordRotation(instance: string): Promise<boolean> {
    return (await this.call<{ retired: boolean }>('POST', `/v2/instances/${enc(instance)}/rotate-password/finish`)).retired;
  }

  // --- redis --------------------------------------------------------------------------------

  connectedSlaves(instance: string): Promise<number> {
    return this.call('GET', `/v2/redis/${enc(instance)}/connectedSlaves/`);
  }

  /** Connections the primary has (clients, the replica, hangar's probes): an addition to the spec. */
  connectedClients(instance: string): Promise<number> {
    return this.call('GET', `/v2/redis/${enc(instance)}/connectedClients/`);
  }

  spaceUsage(instance: string): Promise<SpaceUsage> {
    return this.call('GET', `/v2/redis/${enc(instance)}/spaceUsage/`);
  }

  maxMemoryPolicy(instance: string): Promise<string> {
    return this.call('GET', `/v2/redis/${enc(instance)}/maxMemoryPolicy/`);
  }

  /** A number, as the API gives it: a string. */
  maxClients(instance: string): Promise<string> {
    return this.call('GET', `/v2/redis/${enc(instance)}/maxClients/`);
  }

  /** The settings of the allow-list, as the primary runs them. */
  redisConfig(instance: string): Promise<RedisConfig> {
    return this.call('GET', `/v2/redis/${enc(instance)}/config/`);
  }

  /** Changes settings of the allow-list, live on primary and replica; resolves to every setting hangar holds for the instance. */
  setRedisConfig(instance: string, change: RedisConfigChange): Promise<RedisConfig> {
    return this.call('PATCH', `/v2/redis/${enc(instance)}/config/`, { body: change });
  }

  redisSlowlog(instance: string, opts: { limit?: number } = {}): Promise<RedisSlowlogEntry[]> {
    return this.call('GET', `/v2/redis/${enc(instance)}/slowlog/${opts.limit !== undefined ? `?limit=${opts.limit}` : ''}`);
  }

  redisStats(instance: string): Promise<RedisStats> {
    return this.call('GET', `/v2/redis/${enc(instance)}/stats/`);
  }

  // --- redis users --------------------------------------------------------------------------

  listRedisUsers(instance: string): Promise<RedisUser[]> {
    return this.call('GET', `/v2/redis/${enc(instance)}/users/`);
  }

  getRedisUser(instance: string, username: string): Promise<RedisUser> {
    return this.call('GET', `/v2/redis/${enc(instance)}/users/${enc(username)}/`);
  }

  /** Creates a user; the answer holds its password (made by hangar when none is given), shown this once. */
  createRedisUser(instance: string, body: CreateRedisUserRequest): Promise<RedisUserCreated> {
    return this.call('POST', `/v2/redis/${enc(instance)}/users/`, { body });
  }

  updateRedisUser(instance: string, username: string, change: UpdateRedisUserRequest): Promise<RedisUser> {
    return this.call('PATCH', `/v2/redis/${enc(instance)}/users/${enc(username)}/`, { body: change });
  }

  async deleteRedisUser(instance: string, username: string): Promise<void> {
    await this.call('DELETE', `/v2/redis/${enc(instance)}/users/${enc(username)}/`);
  }

  rotateRedisUserPassword(instance: string, username: string): Promise<PasswordRotation> {
    return this.call('POST', `/v2/redis/${enc(instance)}/users/${enc(username)}/rotate-password`);
  }

  async finishRedisUserPasswordRotation(instance: string, username: string): Promise<boolean> {
    return (await this.call<{ retired: boolean }>('POST', `/v2/redis/${enc(instance)}/users/${enc(username)}/rotate-password/finish`))
      .retired;
  }

  /** Starts growing a redis instance to `newPlan` MB; it is RESIZING until ACTIVE again: see waitUntilReady. */
  resizeRedis(instance: string, newPlan: number, opts: CallOptions = {}): Promise<string> {
    return this.call('POST', `/v2/redis/${enc(instance)}/resize/`, { body: { new_plan: newPlan }, ...opts });
  }

  // --- backups ------------------------------------------------------------------------------

  /** The instance's backups, newest first (also those of a deleted instance, by the name it had). */
  listBackups(instance: string): Promise<Backup[]> {
    return this.call('GET', `/v2/instances/${enc(instance)}/backups/`);
  }

  getBackup(instance: string, backupId: string): Promise<Backup> {
    return this.call('GET', `/v2/instances/${enc(instance)}/backups/${enc(backupId)}/`);
  }

  /**
   * Starts a backup; it is PENDING at first: see waitForBackup, or waitForOperation with the
   * `backup` operation of the same id (cancelOperation stops it).
   */
  createBackup(instance: string, opts: CallOptions = {}): Promise<Backup> {
    return this.call('POST', `/v2/instances/${enc(instance)}/backups/`, { body: {}, ...opts });
  }

  deleteBackup(instance: string, backupId: string): Promise<string> {
    return this.call('DELETE', `/v2/instances/${enc(instance)}/backups/${enc(backupId)}/`);
  }

  /** A completed backup's snapshot, streamed (decrypted). */
  async downloadBackup(instance: string, backupId: string): Promise<BackupDownload> {
    const path = `/v2/instances/${enc(instance)}/backups/${enc(backupId)}/download`;
    if (this.currentToken === undefined && this.credentials) await this.login();
    let res = await this.send('GET', path, undefined, 'token', { accept: 'application/octet-stream' }, 0);
    if (res.status === 401 && this.credentials) {
      await this.login();
      res = await this.send('GET', path, undefined, 'token', { accept: 'application/octet-stream' }, 0);
    }
    if (!res.ok || !res.body) {
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw errorOf(res, parsed, text);
    }
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `${instance}-${backupId}`;
    return {
      body: res.body,
      sizeBytes: Number(res.headers.get('content-length')),
      sha256: res.headers.get('x-backup-sha256') ?? '',
      fileName: name,
    };
  }

  /**
   * Starts restoring a backup into the instance; it is RESTORING until ACTIVE again: see
   * waitForRestore, or waitForOperation with the `restore` operation of the same id.
   */
  restoreInstance(instance: string, backupId: string, opts: CallOptions = {}): Promise<Restore> {
    return this.call('POST', `/v2/instances/${enc(instance)}/restore/`, { body: { backup_id: backupId }, ...opts });
  }

  /** The instance's restores, newest first. */
  listRestores(instance: string): Promise<Restore[]> {
    return this.call('GET', `/v2/instances/${enc(instance)}/restores/`);
  }

  getBackupPolicy(instance: string): Promise<BackupPolicy> {
    return this.call('GET', `/v2/instances/${enc(instance)}/backup-policy/`);
  }

  setBackupPolicy(instance: string, policy: BackupPolicyRequest): Promise<BackupPolicy> {
    return this.call('PUT', `/v2/instances/${enc(instance)}/backup-policy/`, { body: policy });
  }

  /**
   * Polls a backup until it is COMPLETED and returns it; HangarApiError BACKUP_FAILED (with the
   * reason) when it FAILED, WAIT_TIMEOUT after `timeoutMs`.
   */
  waitForBackup(
    instance: string,
    backupId: string,
    opts: Omit<WaitOptions, 'onPoll'> & { onPoll?: (b: Backup, elapsedMs: number) => void } = {},
  ): Promise<Backup> {
    return this.pollFor(
      () => this.getBackup(instance, backupId),
      opts,
      (b) => {
        if (b.state === 'FAILED')
          throw new HangarApiError(
            0,
            'BACKUP_FAILED',
            `backup "${backupId}" of "${instance}" FAILED: ${b.state_reason ?? 'no reason given'}`,
          );
        return b.state === 'COMPLETED';
      },
      `backup "${backupId}"`,
    );
  }

  /** Polls a restore until it is COMPLETED and returns it; HangarApiError RESTORE_FAILED (with the reason) when it FAILED. */
  waitForRestore(
    instance: string,
    restoreId: string,
    opts: Omit<WaitOptions, 'onPoll'> & { onPoll?: (r: Restore, elapsedMs: number) => void } = {},
  ): Promise<Restore> {
    const read = async () => {
      const r = (await this.listRestores(instance)).find((x) => x.id === restoreId);
      if (!r) throw new HangarApiError(404, 'RESTORE_NOT_FOUND', `restore "${restoreId}" of "${instance}" not found`);
      return r;
    };
    return this.pollFor(
      read,
      opts,
      (r) => {
        if (r.state === 'FAILED')
          throw new HangarApiError(0, 'RESTORE_FAILED', `the restore of "${instance}" FAILED: ${r.state_reason ?? 'no reason given'}`);
        return r.state === 'COMPLETED';
      },
      `the restore of "${instance}"`,
    );
  }

  private async pollFor<T extends { state: string }>(
    read: () => Promise<T>,
    opts: Omit<WaitOptions, 'onPoll'> & { onPoll?: (x: T, elapsedMs: number) => void },
    done: (x: T) => boolean,
    what: string,
  ): Promise<T> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? 600_000;
    let interval = opts.intervalMs ?? 250;
    for (;;) {
      const x = await read();
      opts.onPoll?.(x, Date.now() - started);
      if (done(x)) return x;
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) throw new HangarApiError(0, 'WAIT_TIMEOUT', `${what} is still ${x.state} after ${Math.round(timeoutMs / 1000)} s`);
      await sleep(Math.min(interval, left), opts.signal);
      interval = Math.min(opts.maxIntervalMs ?? 2_000, Math.round(interval * 1.5));
    }
  }

  // --- MongoDB users ------------------------------------------------------------------------

  private usersPath(instance: string, database: string): string {
    return `/v2/mongodb/${enc(instance)}/databases/${enc(database)}/users`;
  }

  /** `instance` is the instance id (a name works too). */
  listMongoUsers(instance: string, database: string): Promise<MongoUser[]> {
    return this.call('GET', this.usersPath(instance, database));
  }

  createMongoUser(instance: string, database: string, body: CreateMongoUserRequest, opts: CallOptions = {}): Promise<string> {
    return this.call('POST', this.usersPath(instance, database), { body, ...opts });
  }

  /** Changes the password and/or the roles (a sent role list replaces the old one). */
  updateMongoUser(
    instance: string,
    database: string,
    username: string,
    change: UpdateMongoUserRequest,
    opts: CallOptions = {},
  ): Promise<string> {
    return this.call('PATCH', `${this.usersPath(instance, database)}/${enc(username)}`, { body: change, envelope: 'message', ...opts });
  }

  deleteMongoUser(instance: string, database: string, username: string, opts: CallOptions = {}): Promise<string> {
    return this.call('DELETE', `${this.usersPath(instance, database)}/${enc(username)}`, opts);
  }

  // --- API keys -----------------------------------------------------------------------------

  /** The account's API key pairs (without secrets). */
  listApiKeys(): Promise<ApiKey[]> {
    return this.call('GET', '/v2/keys/');
  }

  /** A new API key pair; its `pass_key` is in this answer only. */
  createApiKey(): Promise<CreatedApiKey> {
    return this.call('POST', '/v2/keys/', { body: {} });
  }

  async deleteApiKey(id: string): Promise<void> {
    await this.call('DELETE', `/v2/keys/${enc(id)}/`);
  }

  // --- TLS --------------------------------------------------------------------------------

  /** The deployment's CA certificate (PEM), for clients' trust stores; needs no credentials. */
  async tlsCaCertificate(): Promise<string> {
    const res = await this.send('GET', '/v2/tls/ca', undefined, 'none', { accept: 'application/x-pem-file' });
    const text = await res.text();
    if (!res.ok) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw errorOf(res, parsed, text);
    }
    return text;
  }

  /** The instance's TLS: its mode and current server certificate (made on the first read). */
  instanceTls(instance: string): Promise<InstanceTls> {
    return this.call('GET', `/v2/instances/${enc(instance)}/tls/`);
  }

  /** The instance's client certificates for mutual TLS, revoked ones included (no keys). */
  listClientCertificates(instance: string): Promise<ClientCertificate[]> {
    return this.call('GET', `/v2/instances/${enc(instance)}/tls/client-certs`);
  }

  /** A new client certificate; its `private_key` is in this answer only. */
  createClientCertificate(instance: string, body: CreateClientCertificateRequest): Promise<CreatedClientCertificate> {
    return this.call('POST', `/v2/instances/${enc(instance)}/tls/client-certs`, { body });
  }

  /** Revokes a client certificate: the instance's CRL lists it from then on. */
  revokeClientCertificate(instance: string, serial: string): Promise<ClientCertificate> {
    return this.call('DELETE', `/v2/instances/${enc(instance)}/tls/client-certs/${enc(serial)}`);
  }

  // --- audit log ----------------------------------------------------------------------------

  /** The zones of this hangar: runtime, services and versions offered, capacity and what is free. */
  listZones(): Promise<Zone[]> {
    return this.call('GET', '/v2/zones/');
  }

  /** The engine products of this hangar: service, plan unit, done state, features, and the memory each plan promises. */
  listEngines(): Promise<EngineProduct[]> {
    return this.call('GET', '/v2/engines/');
  }

  /** The command that opens a shell on an instance (as `hangar connect` runs it); null for an engine without one. */
  instanceShell(instance: string, opts: { user?: string; database?: string; servicenet?: boolean } = {}): Promise<InstanceShell> {
    const q = new URLSearchParams();
    if (opts.user !== undefined) q.set('user', opts.user);
    if (opts.database !== undefined) q.set('database', opts.database);
    if (opts.servicenet) q.set('servicenet', 'true');
    const qs = q.toString();
    return this.call('GET', `/v2/instances/${enc(instance)}/shell${qs ? `?${qs}` : ''}`);
  }

  /** The account's audit log, newest first. */
  listEvents(opts: { limit?: number; before?: number } = {}): Promise<AuditEvent[]> {
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.before !== undefined) q.set('before', String(opts.before));
    const qs = q.toString();
    return this.call('GET', `/v2/events/${qs ? `?${qs}` : ''}`);
  }

  // --- operations, events, webhooks ---------------------------------------------------------

  /** One page of the account's operations, newest first; pass `nextCursor` back for the next page. */
  async listOperations(
    opts: { instance?: string; states?: readonly string[]; kinds?: readonly string[]; limit?: number; cursor?: string } = {},
  ): Promise<{ operations: Operation[]; nextCursor: string | null }> {
    const q = new URLSearchParams();
    if (opts.instance !== undefined) q.set('instance', opts.instance);
    if (opts.states?.length) q.set('state', opts.states.join(','));
    if (opts.kinds?.length) q.set('kind', opts.kinds.join(','));
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.cursor !== undefined) q.set('cursor', opts.cursor);
    const qs = q.toString();
    const body = await this.call<{ data: Operation[]; next_cursor: string | null }>('GET', `/v2/operations/${qs ? `?${qs}` : ''}`, {
      envelope: 'body',
    });
    return { operations: body.data, nextCursor: body.next_cursor };
  }

  getOperation(id: string): Promise<Operation> {
    return this.call('GET', `/v2/operations/${enc(id)}/`);
  }

  /** Cancels an operation where that is safe (a create not started yet, a backup); a 409 says why not. */
  cancelOperation(id: string): Promise<Operation> {
    return this.call('POST', `/v2/operations/${enc(id)}/cancel`);
  }

  /**
   * The account's events as they happen (`GET /v2/events/stream`), as an async iterator. It
   * reconnects by itself when the connection drops, resuming after the last event seen, so no
   * event is lost or repeated (within the server's retention; `onGap` says when some were). End
   * it with `break` or `signal`.
   *
   * ```ts
   * for await (const e of hangar.events({ kinds: ['operation'] })) console.log(e.id, e.kind, e.data.state);
   * ```
   */
  async *events(opts: EventsOptions = {}): AsyncGenerator<HangarEvent> {
    let last = opts.lastEventId;
    let retried401 = false;
    for (;;) {
      if (opts.signal?.aborted) return;
      const abort = new AbortController();
      const onAbort = () => abort.abort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      let idle: ReturnType<typeof setTimeout> | undefined;
      const kick = () => {
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(), STREAM_IDLE_MS);
      };
      try {
        let res: Response;
        try {
          res = await this.openStream(last, opts, abort.signal);
        } catch (err) {
          if (opts.signal?.aborted) return;
          if (opts.reconnect === false) throw err;
          await sleep(STREAM_RETRY_MS, opts.signal).catch(() => {});
          continue;
        }
        if (res.status === 401 && this.credentials && !retried401) {
          retried401 = true;
          await res.body?.cancel().catch(() => {});
          await this.login();
          continue;
        }
        if (!res.ok || !res.body) {
          const text = await res.text().catch(() => '');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          throw errorOf(res, parsed, text);
        }
        retried401 = false;
        opts.onOpen?.();
        kick();
        try {
          for await (const m of readSse(res.body, kick)) {
            if (m.event === 'gap') {
              opts.onGap?.((JSON.parse(m.data) as { message: string }).message);
              continue;
            }
            if (m.id !== undefined && /^\d+$/.test(m.id)) last = Number(m.id);
            if (m.data !== '') yield JSON.parse(m.data) as HangarEvent;
          }
        } catch (err) {
          if (opts.signal?.aborted) return;
          if (opts.reconnect === false) throw err;
        }
      } finally {
        clearTimeout(idle);
        opts.signal?.removeEventListener('abort', onAbort);
        abort.abort();
      }
      if (opts.reconnect === false || opts.signal?.aborted) return;
      await sleep(STREAM_RETRY_MS, opts.signal).catch(() => {});
    }
  }

  private async openStream(last: number | undefined, opts: EventsOptions, signal: AbortSignal): Promise<Response> {
    if (this.currentToken === undefined && this.credentials) await this.login();
    const q = new URLSearchParams();
    if (opts.kinds?.length) q.set('kinds', opts.kinds.join(','));
    if (opts.instance !== undefined) q.set('instance', opts.instance);
    const qs = q.toString();
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.currentToken !== undefined) headers['x-auth-token'] = this.currentToken;
    if (last !== undefined) headers['last-event-id'] = String(last);
    try {
      return await this.fetchFn(`${this.baseUrl}/v2/events/stream${qs ? `?${qs}` : ''}`, { headers, signal });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      throw new HangarApiError(
        0,
        'NETWORK_ERROR',
        `cannot reach hangar at ${this.baseUrl}: ${e.cause?.code ?? e.cause?.message ?? e.message}`,
        { cause: err },
      );
    }
  }

  /**
   * Follows an operation on the event stream until it is finished, and returns it (SUCCEEDED,
   * FAILED or CANCELLED: look at `state` and `error`). Against a hangar without the stream it
   * polls the operation instead. Throws WAIT_TIMEOUT after `timeoutMs`.
   */
  async waitForOperation(id: string, opts: OperationWaitOptions = {}): Promise<Operation> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const started = Date.now();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop.abort(), timeoutMs);
    let op = await this.getOperation(id);
    const finished = (o: Operation) => FINISHED_OPERATION_STATES.includes(o.state);
    const timedOut = () =>
      new HangarApiError(
        0,
        'WAIT_TIMEOUT',
        `operation ${id} (${op.kind} of "${op.instance_name ?? ''}") is still ${op.state} after ${Math.round(timeoutMs / 1000)} s`,
      );
    try {
      if (finished(op)) return op;
      try {
        for await (const e of this.events({
          ...(op.last_event_id !== null ? { lastEventId: op.last_event_id } : {}),
          ...(op.instance_id !== null ? { instance: op.instance_id } : { kinds: ['operation'] }),
          signal: stop.signal,
        })) {
          opts.onEvent?.(e);
          if (e.operation_id === id && e.kind.startsWith('operation.')) {
            op = e.data as unknown as Operation;
            if (finished(op)) return op;
          }
        }
      } catch (err) {
        // A hangar without the stream: poll the operation.
        if (!(err instanceof HangarApiError && err.status === 404 && err.code === 'ROUTE_NOT_FOUND')) throw err;
        for (let interval = 250; !stop.signal.aborted; interval = Math.min(2000, Math.round(interval * 1.5))) {
          op = await this.getOperation(id);
          if (finished(op)) return op;
          await sleep(Math.min(interval, Math.max(0, timeoutMs - (Date.now() - started))), stop.signal).catch(() => {});
        }
      }
      if (opts.signal?.aborted) throw opts.signal.reason ?? new HangarApiError(0, 'ABORTED', 'the wait was aborted');
      throw timedOut();
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  listWebhooks(): Promise<Webhook[]> {
    return this.call('GET', '/v2/webhooks/');
  }

  /** Registers a webhook; its `secret` is in this answer only. */
  createWebhook(body: CreateWebhookRequest): Promise<CreatedWebhook> {
    return this.call('POST', '/v2/webhooks/', { body });
  }

  getWebhook(id: string): Promise<Webhook> {
    return this.call('GET', `/v2/webhooks/${enc(id)}/`);
  }

  async deleteWebhook(id: string): Promise<void> {
    await this.call('DELETE', `/v2/webhooks/${enc(id)}/`);
  }

  /** A new secret (in this answer only); the old one also signs for 24 hours. */
  rotateWebhookSecret(id: string): Promise<CreatedWebhook> {
    return this.call('POST', `/v2/webhooks/${enc(id)}/rotate-secret`);
  }

  /** A webhook's deliveries, newest first. */
  listWebhookDeliveries(
    id: string,
    opts: { limit?: number; before?: number; states?: readonly string[] } = {},
  ): Promise<WebhookDelivery[]> {
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.before !== undefined) q.set('before', String(opts.before));
    if (opts.states?.length) q.set('state', opts.states.join(','));
    const qs = q.toString();
    return this.call('GET', `/v2/webhooks/${enc(id)}/deliveries${qs ? `?${qs}` : ''}`);
  }

  // --- waiting ------------------------------------------------------------------------------

  /**
   * Polls the instance, with backoff, until it serves (ACTIVE; COMPLETED for elasticsearch) and
   * returns its record. Throws HangarApiError INSTANCE_FAILED (with the reason) when it turns
   * FAILED, WAIT_TIMEOUT after `timeoutMs`, and the API's 404 when it does not exist.
   */
  async waitUntilReady(name: string, opts: WaitOptions = {}): Promise<Instance> {
    return this.poll(name, opts, (inst) => {
      if (!inst) throw new HangarApiError(404, 'INSTANCE_NOT_FOUND', `instance "${name}" not found`);
      if (inst.state === 'FAILED') {
        throw new HangarApiError(0, 'INSTANCE_FAILED', `instance "${name}" FAILED: ${inst.state_reason ?? 'no reason given'}`, {
          instance: inst,
        });
      }
      return READY_STATES.includes(inst.state) ? inst : undefined;
    });
  }

  /** Polls, with backoff, until the instance is gone (404). */
  async waitUntilGone(name: string, opts: WaitOptions = {}): Promise<void> {
    await this.poll(name, opts, (inst) => (inst ? undefined : true));
  }

  private async poll<T>(name: string, opts: WaitOptions, done: (inst: Instance | undefined) => T | undefined): Promise<T> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const maxInterval = opts.maxIntervalMs ?? 2_000;
    let interval = opts.intervalMs ?? 250;
    let last: Instance | undefined;
    for (;;) {
      let inst: Instance | undefined;
      try {
        inst = await this.getInstance(name);
      } catch (err) {
        if (!(err instanceof HangarApiError && err.status === 404)) throw err;
      }
      last = inst ?? last;
      opts.onPoll?.(inst, Date.now() - started);
      const result = done(inst);
      if (result !== undefined) return result;
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) {
        throw new HangarApiError(
          0,
          'WAIT_TIMEOUT',
          `instance "${name}" is still ${last?.state ?? 'there'} after ${Math.round(timeoutMs / 1000)} s`,
          {
            ...(last ? { instance: last } : {}),
          },
        );
      }
      await sleep(Math.min(interval, left), opts.signal);
      interval = Math.min(maxInterval, Math.round(interval * 1.5));
    }
  }

  // --- transport ----------------------------------------------------------------------------

  /**
   * One API call: sends the token (logging in first when there is none but credentials are
   * known), and on a 401 logs in again once and repeats the request. Returns `data` (or
   * `message`) of the answer.
   */
  private async call<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return (await this.callWithHeaders<T>(method, path, opts)).data;
  }

  /** A call whose answer's headers matter too (ETag). */
  private async callWithHeaders<T>(method: string, path: string, opts: RequestOptions = {}): Promise<{ data: T; headers: Headers }> {
    const auth = opts.auth ?? 'token';
    if (auth === 'token' && this.currentToken === undefined && this.credentials) await this.login();
    let res = await this.send(method, path, opts.body, auth, opts.headers);
    if (res.status === 401 && auth === 'token' && opts.retry !== false && this.credentials) {
      await this.login();
      res = await this.send(method, path, opts.body, auth, opts.headers);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw errorOf(res, parsed, text);
    const operation = res.headers.get('x-operation-id');
    if (operation) opts.onOperation?.(operation);
    for (const warning of warningsOf(res.headers.get('warning'))) {
      this.opts.onWarning?.(warning, { method, path });
      opts.onWarning?.(warning);
    }
    if (opts.envelope === 'body') return { data: parsed as T, headers: res.headers };
    const envelope = opts.envelope ?? 'data';
    if (typeof parsed !== 'object' || parsed === null || !(envelope in parsed)) {
      throw new HangarApiError(res.status, 'BAD_ANSWER', `${method} ${path}: the answer has no "${envelope}"`, {
        requestId: res.headers.get('x-request-id') ?? undefined,
      });
    }
    return { data: (parsed as Record<string, T>)[envelope]!, headers: res.headers };
  }

  /** One request; `timeout` 0: none (a download takes as long as it takes). */
  private async send(
    method: string,
    path: string,
    body: unknown,
    auth: Auth,
    extra: Readonly<Record<string, string>> = {},
    timeout?: number,
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...extra };
    if (auth === 'basic') {
      const creds = this.credentials;
      if (!creds)
        throw new HangarApiError(401, 'UNAUTHORIZED', 'no credentials to log in with: pass login and password, or userKey and passKey');
      headers.authorization = `Basic ${base64(`${creds[0]}:${creds[1]}`)}`;
    } else if (auth === 'token' && this.currentToken !== undefined) {
      headers['x-auth-token'] = this.currentToken;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeoutMs = timeout ?? this.opts.timeoutMs ?? 30_000;
    const signal = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    const attempt = () =>
      this.fetchFn(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    try {
      // A read whose connection failed before any answer is sent again (RFC 9112, 9.3.1.1): that
      // is how a kept-alive connection ends when the server closes it, idle, just as it is reused,
      // which a busy machine makes likely; each such failure takes one stale connection out of the
      // pool. A change is never sent twice.
      for (let retries = method === 'GET' || method === 'HEAD' ? READ_RETRIES : 0; ; retries--) {
        try {
          return await attempt();
        } catch (err) {
          if (retries === 0 || (err as Error).name === 'TimeoutError' || signal?.aborted) throw err;
        }
      }
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError')
        throw new HangarApiError(0, 'TIMEOUT', `${method} ${path}: no answer from ${this.baseUrl} within ${timeoutMs} ms`, { cause: err });
      const why = e.cause?.code ?? e.cause?.message ?? e.message;
      throw new HangarApiError(0, 'NETWORK_ERROR', `cannot reach hangar at ${this.baseUrl}: ${why}`, { cause: err });
    }
  }
}

/**
 * The texts of an answer's Warning headers (`299 hangar "text"`; several arrive joined by
 * commas), unquoted.
 */
export function warningsOf(header: string | null): string[] {
  if (!header) return [];
  return [...header.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1'));
}

/** How often a read whose connection failed before any answer is sent again. */
const READ_RETRIES = 3;

function errorOf(res: Response, body: unknown, text: string): HangarApiError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    message?: unknown;
    code?: unknown;
    field?: unknown;
    allowed?: unknown;
    errors?: unknown;
  };
  const retry = Number(res.headers.get('retry-after'));
  return new HangarApiError(
    res.status,
    typeof b.code === 'string' ? b.code : `HTTP_${res.status}`,
    typeof b.message === 'string' ? b.message : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    {
      ...(typeof b.field === 'string' ? { field: b.field } : {}),
      ...(Array.isArray(b.allowed) ? { allowed: b.allowed as (string | number)[] } : {}),
      ...(Array.isArray(b.errors) ? { errors: b.errors as ApiProblem[] } : {}),
      ...(res.headers.get('x-request-id') ? { requestId: res.headers.get('x-request-id')! } : {}),
      ...(Number.isFinite(retry) && retry > 0 ? { retryAfterSeconds: retry } : {}),
    },
  );
}

/** UTF-8 base64 with what every JavaScript runtime has (no Buffer). */
function base64(s: string): string {
  return btoa(Array.from(new TextEncoder().encode(s), (b) => String.fromCharCode(b)).join(''));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
