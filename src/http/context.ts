import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Metrics } from '../lib/metrics.js';
import type { AccountService, AuthenticatedCaller } from '../service/accounts.js';
import type { AclService } from '../service/acls.js';
import type { AuditService } from '../service/audit.js';
import type { BackupService } from '../service/backups.js';
import type { IdempotencyService } from '../service/idempotency.js';
import type { InstanceService } from '../service/instances.js';
import type { LoginGuard, RateLimiter } from '../service/limits.js';
import type { MongoUserService } from '../service/mongodb-users.js';
import type { RedisService } from '../service/redis.js';
import type { ZoneService } from '../service/zones.js';
import { errors } from '../domain/errors.js';

/** The use cases the HTTP layer calls. */
export interface Services {
  readonly accounts: AccountService;
  readonly instances: InstanceService;
  readonly acls: AclService;
  readonly redis: RedisService;
  readonly mongodbUsers: MongoUserService;
  readonly backups: BackupService;
  readonly zones: ZoneService;
  readonly audit: AuditService;
  readonly idempotency: IdempotencyService;
  readonly loginGuard: LoginGuard;
  readonly rateLimiter: RateLimiter;
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
}

/** The authenticated caller of a /v2 route. */
export function callerOf(req: FastifyRequest): AuthenticatedCaller {
  if (!req.caller) throw errors.unauthorized();
  return req.caller;
}
