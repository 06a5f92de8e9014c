import { allProblems, errors, type ErrorCode, type HangarError } from '../../domain/errors.js';
import { errorBody } from '../plugins/error-handler.js';
import { ErrorRef } from './common.js';

export type { ErrorCode };

/**
 * One example of each code of the catalogue, made by the catalogue itself, so that the document
 * shows the messages clients really get. Typed by ErrorCode: a code added to the catalogue
 * without an example here does not compile.
 */
const EXAMPLES: Record<ErrorCode, HangarError> = {
  INVALID_VALUE: errors.invalidValue(
    'plan',
    '"plan" of a redis instance 750 is not allowed',
    [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
  ),
  INVALID_BODY: allProblems([
    errors.invalidBody('"name" is required', 'name'),
    errors.invalidBody('"version" is required', 'version'),
    errors.invalidValue(
      'plan',
      '"plan" of a redis instance 750 is not allowed',
      [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
    ),
  ]),
  UNAUTHORIZED: errors.unauthorized(),
  TOO_MANY_LOGIN_FAILURES: errors.tooManyLogins(42),
  RATE_LIMITED: errors.rateLimited(17),
  INSTANCE_NOT_FOUND: errors.instanceNotFound('cache'),
  ACL_NOT_FOUND: errors.aclNotFound('6560a1f2c3d4e5f60718293a', 'cache'),
  USER_NOT_FOUND: errors.userNotFound('app', 'orders'),
  OPERATION_NOT_FOUND: errors.operationNotFound('6560a1f2c3d4e5f607182950'),
  WEBHOOK_NOT_FOUND: errors.webhookNotFound('6560a1f2c3d4e5f607182960'),
  OPERATION_NOT_CANCELLABLE: errors.operationNotCancellable(
    '6560a1f2c3d4e5f607182950',
    'a resize cannot be cancelled once recorded: the engines may already run on the larger plan; wait for it to finish',
  ),
  TARGET_NOT_ALLOWED: errors.targetNotAllowed(
    '"url": 10.0.0.7 is a private address; hangar refuses webhook targets on loopback, private and link-local addresses unless HANGAR_WEBHOOK_ALLOW_PRIVATE=true',
  ),
  CLIENT_CERTIFICATE_NOT_FOUND: errors.clientCertificateNotFound('5C1F0A9B2E7D4C38A6B0E1F2D3C4B5A6', 'cache'),
  ROUTE_NOT_FOUND: errors.routeNotFound('GET', '/v2/nothing/'),
  NAME_TAKEN: errors.nameTaken('cache'),
  USER_EXISTS: errors.userExists('app', 'orders'),
  ROTATION_IN_PROGRESS: errors.rotationInProgress('instance "cache"'),
  PRECONDITION_FAILED: errors.preconditionFailed('"5c1f0a9b2e7d4c38a6b0e1f2d3c4b5a6"'),
  ACL_EXISTS: errors.aclExists('203.0.113.7', 'cache'),
  OPERATION_IN_PROGRESS: errors.operationInProgress('cache', 'RESIZING'),
  INSTANCE_DELETING: errors.instanceDeleting('cache'),
  INSTANCE_NOT_READY: errors.instanceNotReady('cache', 'BUILDING'),
  QUOTA_EXCEEDED: errors.quotaExceeded('instances per account', 100),
  IDEMPOTENCY_KEY_CONFLICT: errors.idempotencyConflict(),
  IDEMPOTENCY_KEY_IN_USE: errors.idempotencyInUse(),
  BACKUP_NOT_FOUND: errors.backupNotFound('6560a1f2c3d4e5f607182950'),
  BACKUP_IN_PROGRESS: errors.backupInProgress('cache', '6560a1f2c3d4e5f607182950', 'RUNNING'),
  BACKUP_NOT_COMPLETED: errors.backupNotCompleted('6560a1f2c3d4e5f607182950', 'FAILED'),
  BACKUP_CORRUPT: errors.backupCorrupt(
    '6560a1f2c3d4e5f607182950',
    'its SHA-256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 (1048576 bytes), not the 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae (1048576 bytes) recorded when it was taken',
  ),
  BACKUP_UNAVAILABLE: errors.backupUnavailable(
    'mongodb',
    'backups of mongodb need mongodump and mongorestore (the MongoDB Database Tools), which are not installed on this host',
  ),
  BACKUP_STORAGE_UNAVAILABLE: errors.backupStorageUnavailable(
    'reading s3://backups/hangar/6560a1f2c3d4e5f607182930/6560a1f2c3d4e5f607182950.rdb.hgb: the object storage is unreachable (ECONNREFUSED)',
  ),
  SERVICE_UNAVAILABLE_HERE: errors.serviceUnavailableHere(
    'mongodb',
    'mongodb cannot run on this host: mongod was not found on PATH (set HANGAR_MONGOD_BIN)',
  ),
  ENGINE_UNREACHABLE: errors.engineUnreachable('cache', 'no answer within 3000 ms'),
  STORE_UNAVAILABLE: errors.storeUnavailable(),
  TLS_UNAVAILABLE: errors.tlsUnavailable('cannot run openssl: install openssl (Debian: apt-get install openssl)'),
  CAPACITY_EXCEEDED: errors.capacityExceeded(
    'zone "US-Dallas"',
    1200,
    22000,
    'a redis_ha_instance on plan 1000 needs 2000 MB (2 x 1000 MB: maxmemory of the primary and of the replica)',
  ),
  CAPACITY_EXHAUSTED: errors.capacityExhausted('no free port left in HANGAR_PORT_RANGE 20000-29999'),
  SHUTTING_DOWN: errors.shuttingDown(),
  LOGIN_TAKEN: errors.loginTaken('me@example.com'),
  ACCOUNT_NOT_FOUND: errors.accountNotFound('me@example.com'),
  API_KEY_NOT_FOUND: errors.apiKeyNotFound('me@example.com', '89fc7835b8e61687375c5495e90f2bf9'),
  BODY_TOO_LARGE: errors.bodyTooLarge(),
  UNSUPPORTED_MEDIA_TYPE: errors.unsupportedMediaType('text/plain'),
  URI_TOO_LONG: errors.uriTooLong(),
  INVALID_PATH: errors.invalidPath(),
  REQUEST_TIMEOUT: errors.requestTimeout(),
  HEADERS_TOO_LARGE: errors.headersTooLarge(),
  BAD_REQUEST: errors.malformedRequest(),
  METHOD_NOT_ALLOWED: errors.wrongMethod('POST', '/v2/tokens/', ['GET', 'HEAD', 'DELETE']),
  FORBIDDEN: errors.forbiddenPath(),
  NOT_ACCEPTABLE: errors.notAcceptable(),
  LENGTH_REQUIRED: errors.lengthRequired(),
  RANGE_NOT_SATISFIABLE: errors.rangeNotSatisfiable(),
  INTERNAL: errors.internal('0b7e4c1d-5a2f-4f0e-9c61-3d2b8a9e7f10'),
};

const byCode = new Map<string, HangarError>(Object.entries(EXAMPLES));

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is not valid: `field` names the field at fault and `allowed`, when present, the values it accepts; `errors` lists every problem found in the request, the first being that of `message`',
  401: 'No credentials, or wrong, expired or revoked ones',
  404: 'Not found; an instance of another account is not found either',
  408: 'The request (headers or body) did not arrive in time; the connection is closed',
  409: 'The request conflicts with the current state of the resource',
  412: 'The resource changed since it was read: its ETag no longer matches If-Match',
  413: 'The body is larger than 64 KiB',
  414: 'A path segment is longer than 512 characters',
  405: 'The path exists but does not take this method; the Allow header lists those it takes',
  415: 'The body is declared as something other than JSON',
  422: 'The service (or its backups) cannot run on this hangar: its engine or tools are not installed; or a backup is corrupt',
  429: 'Too many requests, or too many failed logins; the Retry-After header says when to try again',
  431: 'The request line and headers are larger than 16 KiB',
  500: 'An unexpected failure; the message carries the request id to quote',
  503: 'The store, the engine or the host cannot serve the request now (or hangar cannot make TLS certificates); try again shortly',
};

/** Codes every authenticated route can answer. */
const AUTHENTICATED: readonly ErrorCode[] = ['UNAUTHORIZED', 'TOO_MANY_LOGIN_FAILURES', 'RATE_LIMITED', 'STORE_UNAVAILABLE', 'INTERNAL'];
/** Codes of every route with path parameters (the router answers them). */
export const WITH_PATH: readonly ErrorCode[] = ['INVALID_PATH', 'URI_TOO_LONG'];
/** Codes of every authenticated POST and PATCH (the Idempotency-Key header). */
export const IDEMPOTENT: readonly ErrorCode[] = ['IDEMPOTENCY_KEY_CONFLICT', 'IDEMPOTENCY_KEY_IN_USE'];
/** Codes of every route that takes a JSON body. */
export const WITH_BODY: readonly ErrorCode[] = ['INVALID_BODY', 'BODY_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];

export interface ErrorResponse {
  readonly description: string;
  readonly content: {
    readonly 'application/json': {
      readonly schema: typeof ErrorRef;
      readonly examples: Record<string, { summary: string; value: unknown }>;
    };
  };
}

/** The example body of an error code. */
export function errorExample(code: ErrorCode): ReturnType<typeof errorBody> {
  const e = byCode.get(code);
  if (!e) throw new Error(`no example for error code ${code}`);
  return errorBody(e);
}

/**
 * Response schemas for the error codes a route can answer, grouped by HTTP status, with one
 * named example per code. `authenticated: false` leaves out the codes of the auth hook.
 */
export function errorResponses(codes: readonly ErrorCode[], opts: { authenticated?: boolean } = {}): Record<number, ErrorResponse> {
  const all = new Set<ErrorCode>([...(opts.authenticated === false ? ['INTERNAL' as const] : AUTHENTICATED), ...codes]);
  const out: Record<
    number,
    {
      description: string;
      content: { 'application/json': { schema: typeof ErrorRef; examples: Record<string, { summary: string; value: unknown }> } };
    }
  > = {};
  for (const code of all) {
    const e = byCode.get(code);
    if (!e) throw new Error(`no example for error code ${code}`);
    let slot = out[e.status];
    if (!slot) {
      slot = {
        description: STATUS_TEXT[e.status] ?? 'Error',
        content: { 'application/json': { schema: ErrorRef, examples: {} } },
      };
      out[e.status] = slot;
    }
    slot.content['application/json'].examples[code] = { summary: code, value: errorExample(code) };
  }
  return out;
}
