import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Metrics } from '../lib/metrics.js';
import type { AccountService, AuthenticatedCaller } from '../service/accounts.js';
import type { AclService } from '../service/acls.js';
import type { AuditService } from '../service/audit.js';
import type { BackupService } from '../service/backups.js';
import type { IdempotencyService } from '../service/idempotency.js';
import type { InstanceService, Started } from '../service/instances.js';
import type { Origin } from '../service/deps.js';
import type { EventStream } from '../service/event-stream.js';
import type { OperationService } from '../service/operations.js';
import type { TlsService } from '../service/tls.js';
import type { WebhookService } from '../service/webhooks.js';
import type { LoginGuard, RateLimiter } from '../service/limits.js';
import type { MongoUserService } from '../service/mongodb-users.js';
import type { PasswordService } from '../service/passwords.js';
import type { RedisService } from '../service/redis.js';
import type { ElasticsearchService } from '../service/elasticsearch.js';
import type { RedisUserService } from '../service/redis-users.js';
import type { ZoneService } from '../service/zones.js';
import { errors } from '../domain/errors.js';

/** The use cases the HTTP layer calls. */
export interface Services {
  readonly accounts: AccountService;
  readonly instances: InstanceService;
  readonly acls: AclService;
  readonly redis: RedisService;
  readonly elasticsearch: ElasticsearchService;
  readonly redisUsers: RedisUserService;
  readonly passwords: PasswordService;
  readonly mongodbUsers: MongoUserService;
  readonly backups: BackupService;
  readonly zones: ZoneService;
  readonly audit: AuditService;
  readonly idempotency: IdempotencyService;
  readonly loginGuard: LoginGuard;
  readonly rateLimiter: RateLimiter;
  readonly operations: OperationService;
  readonly events: EventStream;
  readonly webhooks: WebhookService;
  readonly tls: TlsService;
}

export interface Readiness {
  /**
   * `problems` keep this replica from serving (the store unreachable, the runtime broken): /readyz
   * answers 503. `degraded` are single instances that do not serve right now: /readyz stays 200
   * and lists them, so that a load balancer does not take the API away for one instance.
   */
  check(): Promise<{ problems: string[]; degraded: string[] }>;
}

export interface AppDeps {
  readonly config: Config;
  readonly services: Services;
  readonly readiness: Readiness;
  readonly now: () => number;
  /** Where request metrics go and /metrics reads from; a registry of its own when left out. */
  readonly metrics?: Metrics;
  /** Whether the server is stopping (draining): answers then close their connection. */
  readonly stopping?: () => boolean;
}

/** The authenticated caller of a /v2 route. */
export function callerOf(req: FastifyRequest): AuthenticatedCaller {
  if (!req.caller) throw errors.unauthorized();
  return req.caller;
}

/** Who asks and in which request: recorded with the operation a change starts. */
export function originOf(req: FastifyRequest): Origin {
  const c = req.caller;
  return {
    requestedBy: c ? { login: c.login, credential: c.credential ?? 'token', id: c.credentialId ?? null } : null,
    requestId: req.id,
  };
}

/**
 * The answer of a request that started an operation: `X-Operation-Id` and `Location` name it,
 * a `Warning` header says each thing the caller is told besides; the body is the request's own,
 * unchanged.
 */
export function answerStarted<T>(reply: FastifyReply, started: Started<T>): T {
  void reply.header('x-operation-id', started.operation.id).header('location', `/v2/operations/${started.operation.id}/`);
  if (started.warnings && started.warnings.length > 0) void reply.header('warning', started.warnings.map(warningValue));
  return started.result;
}

/**
 * One Warning header value as Kubernetes sends them (RFC 7234, code 299 "miscellaneous
 * persistent warning"): `299 hangar "10.1.2.3/8 was stored as 10.0.0.0/8"`. Quotes and
 * backslashes are escaped; anything outside printable ASCII becomes `?`.
 */
export function warningValue(text: string): string {
  return `299 hangar "${text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`)}"`;
}
