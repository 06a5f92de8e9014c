/**
 * Every failure a client can see is built here: a stable machine-readable code, the HTTP status
 * and a message meant for people. Services throw these; one error handler renders them.
 */
export class HangarError extends Error {
  override name = 'HangarError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A failure a reconcile pass must not retry: the instance turns FAILED with this message. */
export class TerminalError extends Error {
  override name = 'TerminalError';
}

const list = (values: readonly (string | number)[]): string => values.join(', ');

export const errors = {
  invalidValue: (field: string, message: string, allowed?: readonly (string | number)[]) =>
    new HangarError(400, 'INVALID_VALUE', allowed ? `${message}; allowed values: ${list(allowed)}` : message, {
      field,
      ...(allowed ? { allowed } : {}),
    }),
  invalidBody: (message: string, field?: string) =>
    new HangarError(400, 'INVALID_BODY', message, field ? { field } : {}),
  unauthorized: (message = 'missing or invalid credentials: log in at GET /v2/tokens/ with HTTP Basic and send the token in X-Auth-Token') =>
    new HangarError(401, 'UNAUTHORIZED', message),
  tooManyLogins: (retryAfterSeconds: number) =>
    new HangarError(429, 'TOO_MANY_LOGIN_FAILURES', `too many failed logins; try again in ${retryAfterSeconds} s`, { retryAfterSeconds }),
  rateLimited: (retryAfterSeconds: number) =>
    new HangarError(429, 'RATE_LIMITED', `request limit of this account reached; try again in ${retryAfterSeconds} s`, { retryAfterSeconds }),
  instanceNotFound: (name: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `instance "${name}" not found`),
  notARedisInstance: (name: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `redis instance "${name}" not found`),
  notAMongodbInstance: (id: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `mongodb instance "${id}" not found`),
  aclNotFound: (id: string, instance: string) => new HangarError(404, 'ACL_NOT_FOUND', `ACL "${id}" not found on instance "${instance}"`),
  apiKeyNotFound: (id: string) => new HangarError(404, 'API_KEY_NOT_FOUND', `API key "${id}" not found`),
  userNotFound: (user: string, db: string) => new HangarError(404, 'USER_NOT_FOUND', `user "${user}" not found in database "${db}"`),
  routeNotFound: (method: string, url: string) => new HangarError(404, 'ROUTE_NOT_FOUND', `no such endpoint: ${method} ${url}`),
  nameTaken: (name: string) => new HangarError(409, 'NAME_TAKEN', `an instance named "${name}" already exists in this account`),
  userExists: (user: string, db: string) => new HangarError(409, 'USER_EXISTS', `user "${user}" already exists in database "${db}"`),
  aclExists: (cidr: string, instance: string) => new HangarError(409, 'ACL_EXISTS', `an ACL for ${cidr} already exists on instance "${instance}"`),
  operationInProgress: (name: string, state: string) =>
    new HangarError(409, 'OPERATION_IN_PROGRESS', `instance "${name}" is ${state}; wait until it is ACTIVE and try again`, { state }),
  instanceDeleting: (name: string) => new HangarError(409, 'INSTANCE_DELETING', `instance "${name}" is being deleted`),
  instanceNotReady: (name: string, state: string) =>
    new HangarError(409, 'INSTANCE_NOT_READY', `instance "${name}" is ${state}, not ACTIVE`, { state }),
  quotaExceeded: (what: string, limit: number) =>
    new HangarError(409, 'QUOTA_EXCEEDED', `quota reached: at most ${limit} ${what}`, { limit }),
  idempotencyConflict: () =>
    new HangarError(409, 'IDEMPOTENCY_KEY_CONFLICT', 'this Idempotency-Key was already used for another request; use a new key for a new request'),
  idempotencyInUse: () =>
    new HangarError(409, 'IDEMPOTENCY_KEY_IN_USE', 'the request first sent with this Idempotency-Key is still running; repeat it in a moment to get its answer'),
  serviceUnavailableHere: (service: string, message: string) =>
    new HangarError(422, 'SERVICE_UNAVAILABLE_HERE', message, { service }),
  engineUnreachable: (name: string, detail: string) =>
    new HangarError(503, 'ENGINE_UNREACHABLE', `the engine of instance "${name}" does not answer: ${detail}`),
  storeUnavailable: () => new HangarError(503, 'STORE_UNAVAILABLE', 'the store is unavailable; try again shortly'),
  capacityExhausted: (what: string) => new HangarError(503, 'CAPACITY_EXHAUSTED', `no capacity left on this host: ${what}`),
  shuttingDown: () => new HangarError(503, 'SHUTTING_DOWN', 'hangar is shutting down; try again shortly'),
} as const;
