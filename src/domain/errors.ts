/**
 * Every failure a client can see is built here: a stable machine-readable code, the HTTP status
 * and a message meant for people. Services throw these; one error handler renders them.
 */
export class HangarError<C extends string = string> extends Error {
  override name = 'HangarError';
  constructor(
    readonly status: number,
    readonly code: C,
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

/** `a redis`, `an elasticsearch`: the article a word takes (by its first letter, which serves hangar's words). */
export const withArticle = (word: string): string => `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`;

/** A time as hangar's messages tell it: `2026-12-01 18:00:00 UTC`. */
const utc = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/**
 * The catalogue: every error a client can see, by the function that builds it. The HTTP layer's
 * own refusals (a body too large, a media type, a timeout) are entries too, so that one list
 * feeds the error handler, the OpenAPI document and the README's table.
 */
export const errors = {
  invalidValue: (field: string, message: string, allowed?: readonly (string | number)[]) =>
    new HangarError(400, 'INVALID_VALUE', allowed ? `${message}; allowed values: ${list(allowed)}` : message, {
      field,
      ...(allowed ? { allowed } : {}),
    }),
  targetNotAllowed: (message: string) => new HangarError(400, 'TARGET_NOT_ALLOWED', message, { field: 'url' }),
  invalidBody: (message: string, field?: string) => new HangarError(400, 'INVALID_BODY', message, field ? { field } : {}),
  unauthorized: (
    message = 'missing or invalid credentials: log in at GET /v2/tokens/ with HTTP Basic and send the token in X-Auth-Token',
  ) => new HangarError(401, 'UNAUTHORIZED', message),
  tooManyLogins: (retryAfterSeconds: number, what = '', resetAt?: number) =>
    new HangarError(
      429,
      'TOO_MANY_LOGIN_FAILURES',
      `too many failed logins${what ? ` ${what}` : ''}; try again in ${retryAfterSeconds} s${resetAt === undefined ? '' : ` (at ${new Date(resetAt).toISOString().slice(11, 19)} UTC)`}`,
      { retryAfterSeconds },
    ),
  tokenExpired: (expiredAt: number) =>
    new HangarError(401, 'UNAUTHORIZED', `the token expired at ${utc(expiredAt)}: log in again at GET /v2/tokens/`),
  tokenRevoked: (revokedAt: number) =>
    new HangarError(401, 'UNAUTHORIZED', `the token was revoked at ${utc(revokedAt)}: log in again at GET /v2/tokens/`),
  tokenUnknown: () => new HangarError(401, 'UNAUTHORIZED', 'the token is unknown, expired or revoked: log in again at GET /v2/tokens/'),
  rateLimited: (retryAfterSeconds: number) =>
    new HangarError(429, 'RATE_LIMITED', `request limit of this account reached; try again in ${retryAfterSeconds} s`, {
      retryAfterSeconds,
    }),
  instanceNotFound: (name: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `instance "${name}" not found`),
  notARedisInstance: (name: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `redis instance "${name}" not found`),
  notAMongodbInstance: (id: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `mongodb instance "${id}" not found`),
  notAnElasticsearchInstance: (name: string) => new HangarError(404, 'INSTANCE_NOT_FOUND', `elasticsearch instance "${name}" not found`),
  /** The caller's own instance, asked for where only another service's instances fit (a resize of MongoDB, users of Redis). */
  wrongService: (name: string, service: string, wanted: string) =>
    new HangarError(
      404,
      'INSTANCE_NOT_FOUND',
      `instance "${name}" is ${withArticle(service)} instance, not ${withArticle(wanted)} instance`,
    ),
  aclNotFound: (id: string, instance: string) => new HangarError(404, 'ACL_NOT_FOUND', `ACL "${id}" not found on instance "${instance}"`),
  userNotFound: (user: string, db: string) => new HangarError(404, 'USER_NOT_FOUND', `user "${user}" not found in database "${db}"`),
  operationNotFound: (id: string) => new HangarError(404, 'OPERATION_NOT_FOUND', `operation "${id}" not found`),
  webhookNotFound: (id: string) => new HangarError(404, 'WEBHOOK_NOT_FOUND', `webhook "${id}" not found`),
  redisUserNotFound: (user: string, instance: string) =>
    new HangarError(404, 'USER_NOT_FOUND', `user "${user}" not found on instance "${instance}"`),
  clientCertificateNotFound: (serial: string, instance: string) =>
    new HangarError(404, 'CLIENT_CERTIFICATE_NOT_FOUND', `client certificate "${serial}" not found on instance "${instance}"`),
  routeNotFound: (method: string, url: string) => new HangarError(404, 'ROUTE_NOT_FOUND', `no such endpoint: ${method} ${url}`),
  /** `holder`: the name of the instance that has it, as stored (names are unique regardless of case). */
  nameTaken: (name: string, holder: string = name) =>
    new HangarError(
      409,
      'NAME_TAKEN',
      holder === name
        ? `an instance named "${name}" already exists in this account`
        : `an instance named "${holder}" already exists in this account, and names are unique regardless of case: "${name}" cannot be used`,
    ),
  userExists: (user: string, db: string) => new HangarError(409, 'USER_EXISTS', `user "${user}" already exists in database "${db}"`),
  redisUserExists: (user: string, instance: string) =>
    new HangarError(409, 'USER_EXISTS', `user "${user}" already exists on instance "${instance}"`),
  rotationInProgress: (what: string) =>
    new HangarError(
      409,
      'ROTATION_IN_PROGRESS',
      `a password rotation of ${what} is in progress: finish it (POST .../rotate-password/finish) or wait for its grace period to end`,
    ),
  preconditionFailed: (current: string) =>
    new HangarError(
      412,
      'PRECONDITION_FAILED',
      `the ACLs changed since they were read (If-Match does not match the current ETag ${current}): read them again and retry`,
    ),
  aclExists: (cidr: string, instance: string) =>
    new HangarError(409, 'ACL_EXISTS', `an ACL for ${cidr} already exists on instance "${instance}"`),
  operationInProgress: (name: string, state: string) =>
    new HangarError(409, 'OPERATION_IN_PROGRESS', `instance "${name}" is ${state}; wait until it is ACTIVE and try again`, { state }),
  operationNotCancellable: (id: string, reason: string) =>
    new HangarError(409, 'OPERATION_NOT_CANCELLABLE', `operation "${id}" cannot be cancelled: ${reason}`),
  instanceDeleting: (name: string) => new HangarError(409, 'INSTANCE_DELETING', `instance "${name}" is being deleted`),
  instanceNotReady: (name: string, state: string) =>
    new HangarError(409, 'INSTANCE_NOT_READY', `instance "${name}" is ${state}, not ACTIVE`, { state }),
  quotaExceeded: (what: string, limit: number) =>
    new HangarError(409, 'QUOTA_EXCEEDED', `quota reached: at most ${limit} ${what}`, { limit }),
  idempotencyConflict: () =>
    new HangarError(
      409,
      'IDEMPOTENCY_KEY_CONFLICT',
      'this Idempotency-Key was already used for another request; use a new key for a new request',
    ),
  idempotencyInUse: () =>
    new HangarError(
      409,
      'IDEMPOTENCY_KEY_IN_USE',
      'the request first sent with this Idempotency-Key is still running; repeat it in a moment to get its answer',
    ),
  backupNotFound: (id: string) => new HangarError(404, 'BACKUP_NOT_FOUND', `backup "${id}" not found`),
  backupInProgress: (instance: string, backupId: string, state: string) =>
    new HangarError(
      409,
      'BACKUP_IN_PROGRESS',
      `a backup of instance "${instance}" is ${state} already: ${backupId}; wait until it is done`,
      { backup_id: backupId },
    ),
  backupNotCompleted: (id: string, state: string) =>
    new HangarError(
      409,
      'BACKUP_NOT_COMPLETED',
      `backup "${id}" is ${state}, not COMPLETED: only a completed backup can be restored or downloaded`,
      { state },
    ),
  backupCorrupt: (id: string, detail: string) =>
    new HangarError(422, 'BACKUP_CORRUPT', `backup "${id}" is corrupt and was not restored (the instance is untouched): ${detail}`),
  backupUnavailable: (service: string, message: string) => new HangarError(422, 'BACKUP_UNAVAILABLE', message, { service }),
  backupStorageUnavailable: (detail: string) =>
    new HangarError(503, 'BACKUP_STORAGE_UNAVAILABLE', `the backup storage does not answer: ${detail}`),
  serviceUnavailableHere: (service: string, message: string) => new HangarError(422, 'SERVICE_UNAVAILABLE_HERE', message, { service }),
  /** A version the engine knows of but cannot serve here: why, and the versions it serves. */
  versionUnavailableHere: (service: string, engine: string, version: string, reason: string, served: readonly string[]) =>
    new HangarError(
      422,
      'SERVICE_UNAVAILABLE_HERE',
      `${engine} ${version} cannot be served here: ${reason}; ${served.length > 0 ? `versions served here: ${list(served)}` : `no version of ${engine} is served here`}`,
      { service, field: 'version', allowed: [...served] },
    ),
  engineUnreachable: (name: string, detail: string) =>
    new HangarError(503, 'ENGINE_UNREACHABLE', `the engine of instance "${name}" does not answer: ${detail}`),
  tlsUnavailable: (detail: string) => new HangarError(503, 'TLS_UNAVAILABLE', `hangar cannot make TLS certificates now: ${detail}`),
  storeUnavailable: () => new HangarError(503, 'STORE_UNAVAILABLE', 'the store is unavailable; try again shortly'),
  capacityExceeded: (what: string, freeMb: number, capacityMb: number, need: string) =>
    new HangarError(409, 'CAPACITY_EXCEEDED', `not enough memory left in ${what}: ${freeMb} MB free of ${capacityMb} MB; ${need}`, {
      freeMb,
      capacityMb,
    }),
  capacityExhausted: (what: string) => new HangarError(503, 'CAPACITY_EXHAUSTED', `no capacity left on this host: ${what}`),
  shuttingDown: () => new HangarError(503, 'SHUTTING_DOWN', 'hangar is shutting down; try again shortly'),
  loginTaken: (login: string) => new HangarError(409, 'LOGIN_TAKEN', `an account with login "${login}" already exists`),
  accountNotFound: (login: string) => new HangarError(404, 'ACCOUNT_NOT_FOUND', `no account with login "${login}"`),
  apiKeyNotFound: (login: string, userKey: string) => new HangarError(404, 'API_KEY_NOT_FOUND', `account "${login}" has no key ${userKey}`),
  // Refusals of the HTTP layer itself.
  bodyTooLarge: () => new HangarError(413, 'BODY_TOO_LARGE', 'the request body is larger than 64 KiB'),
  unsupportedMediaType: (received: string) =>
    new HangarError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      `the body was sent as ${JSON.stringify(received)}; send it as JSON (Content-Type: application/json, or none)`,
    ),
  uriTooLong: () => new HangarError(414, 'URI_TOO_LONG', 'a path segment is longer than 512 characters'),
  invalidPath: () => new HangarError(400, 'INVALID_PATH', 'the path is not valid percent-encoding (or does not decode to UTF-8)'),
  requestTimeout: () => new HangarError(408, 'REQUEST_TIMEOUT', 'the request did not arrive in time; the connection is closed'),
  headersTooLarge: () => new HangarError(431, 'HEADERS_TOO_LARGE', 'the request line and headers are larger than 16 KiB'),
  malformedRequest: () => new HangarError(400, 'BAD_REQUEST', 'the request is not valid HTTP/1.1'),
  badRequest: () => new HangarError(400, 'BAD_REQUEST', 'the request is not valid'),
  connectRefused: () => new HangarError(405, 'METHOD_NOT_ALLOWED', 'CONNECT is not a method of this API'),
  // 4xx answers of the framework and its plugins (the docs page's static files).
  forbiddenPath: () => new HangarError(403, 'FORBIDDEN', 'that path is not served'),
  notFound: () => new HangarError(404, 'ROUTE_NOT_FOUND', 'not found'),
  methodNotAllowed: () => new HangarError(405, 'METHOD_NOT_ALLOWED', 'that method is not allowed here'),
  /** A path that exists, asked with a method it does not take; `allowed` goes in the Allow header too. */
  wrongMethod: (method: string, url: string, allowed: readonly string[]) =>
    new HangarError(405, 'METHOD_NOT_ALLOWED', `${url} does not take ${method}; it takes ${list(allowed)}`, { allow: allowed }),
  notAcceptable: () => new HangarError(406, 'NOT_ACCEPTABLE', 'no answer of an acceptable type'),
  lengthRequired: () => new HangarError(411, 'LENGTH_REQUIRED', 'send a Content-Length'),
  rangeNotSatisfiable: () => new HangarError(416, 'RANGE_NOT_SATISFIABLE', 'the range asked for is outside the file'),
  /** Anything unexpected; the request id lets an operator find the cause in the log. */
  internal: (requestId: string) => new HangarError(500, 'INTERNAL', `internal error; request id ${requestId}`),
} as const;

type Catalogue = typeof errors;
/** Every code a client can see: derived from the catalogue, never kept by hand. */
export type ErrorCode = ReturnType<Catalogue[keyof Catalogue]>['code'];

/**
 * Several problems of one request, found by checks that do not depend on each other, answered
 * at once: as the first of them (its status, code, message and field), with every one listed
 * (the body's `errors`). One problem is answered as itself.
 */
export function allProblems(problems: readonly HangarError[]): HangarError {
  const first = problems[0];
  if (!first) throw new Error('allProblems: no problem given');
  if (problems.length === 1) return first;
  return new HangarError(first.status, first.code, first.message, { ...first.extra, problems }, { cause: first.cause });
}

/** The problems an error stands for: those it lists, or itself. */
export function problemsOf(e: HangarError): readonly HangarError[] {
  const listed = e.extra.problems;
  return Array.isArray(listed) && listed.every((p) => p instanceof HangarError) ? (listed as HangarError[]) : [e];
}
