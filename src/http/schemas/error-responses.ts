import { HangarError, errors } from '../../domain/errors.js';
import {
  BODY_TOO_LARGE, HEADERS_TOO_LARGE, errorBody, INTERNAL, INVALID_PATH, MALFORMED_REQUEST, REQUEST_TIMEOUT, UNSUPPORTED_MEDIA_TYPE, URI_TOO_LONG,
} from '../plugins/error-handler.js';
import { ErrorRef } from './common.js';

/**
 * The error responses of each route, documented by the codes it can answer. Examples are made
 * by the error catalogue itself, so the document shows the messages clients really get.
 */
const CATALOGUE: readonly HangarError[] = [
  errors.invalidValue('plan', '"plan" of a redis instance 750 is not allowed', [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000]),
  errors.invalidBody('"name" is required', 'name'),
  errors.unauthorized(),
  errors.tooManyLogins(42),
  errors.rateLimited(17),
  errors.instanceNotFound('cache'),
  errors.aclNotFound('6560a1f2c3d4e5f60718293a', 'cache'),
  errors.userNotFound('app', 'orders'),
  errors.apiKeyNotFound('6560a1f2c3d4e5f607182940'),
  errors.nameTaken('cache'),
  errors.userExists('app', 'orders'),
  errors.aclExists('203.0.113.7', 'cache'),
  errors.operationInProgress('cache', 'RESIZING'),
  errors.instanceDeleting('cache'),
  errors.instanceNotReady('cache', 'BUILDING'),
  errors.quotaExceeded('instances per account', 100),
  errors.serviceUnavailableHere('mongodb', 'mongodb cannot run on this host: mongod was not found on PATH (set HANGAR_MONGOD_BIN)'),
  errors.engineUnreachable('cache', 'no answer within 3000 ms'),
  errors.idempotencyConflict(),
  errors.idempotencyInUse(),
  errors.storeUnavailable(),
  errors.capacityExhausted('no free port left in HANGAR_PORT_RANGE 20000-29999'),
  errors.shuttingDown(),
  BODY_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
  URI_TOO_LONG,
  INVALID_PATH,
  REQUEST_TIMEOUT,
  HEADERS_TOO_LARGE,
  MALFORMED_REQUEST,
  INTERNAL,
];

export type ErrorCode =
  | 'INVALID_VALUE' | 'INVALID_BODY' | 'UNAUTHORIZED' | 'TOO_MANY_LOGIN_FAILURES' | 'RATE_LIMITED'
  | 'INSTANCE_NOT_FOUND' | 'ACL_NOT_FOUND' | 'USER_NOT_FOUND' | 'NAME_TAKEN' | 'USER_EXISTS' | 'ACL_EXISTS'
  | 'OPERATION_IN_PROGRESS' | 'INSTANCE_DELETING' | 'INSTANCE_NOT_READY' | 'QUOTA_EXCEEDED'
  | 'SERVICE_UNAVAILABLE_HERE' | 'ENGINE_UNREACHABLE' | 'STORE_UNAVAILABLE' | 'CAPACITY_EXHAUSTED'
  | 'SHUTTING_DOWN' | 'BODY_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'URI_TOO_LONG' | 'INVALID_PATH'
  | 'REQUEST_TIMEOUT' | 'HEADERS_TOO_LARGE' | 'BAD_REQUEST' | 'INTERNAL'
  | 'IDEMPOTENCY_KEY_CONFLICT' | 'IDEMPOTENCY_KEY_IN_USE'
  | 'API_KEY_NOT_FOUND';

const byCode = new Map(CATALOGUE.map((e) => [e.code, e]));

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is not valid: `field` names the field at fault and `allowed`, when present, the values it accepts',
  401: 'No credentials, or wrong, expired or revoked ones',
  404: 'Not found; an instance of another account is not found either',
  408: 'The request (headers or body) did not arrive in time; the connection is closed',
  409: 'The request conflicts with the current state of the resource',
  413: 'The body is larger than 64 KiB',
  414: 'A path segment is longer than 512 characters',
  415: 'The body is declared as something other than JSON',
  422: 'The service cannot run on this hangar (its engine is not installed)',
  429: 'Too many requests, or too many failed logins; the Retry-After header says when to try again',
  431: 'The request line and headers are larger than 16 KiB',
  500: 'An unexpected failure; the message carries the request id to quote',
  503: 'The store, the engine or the host cannot serve the request now; try again shortly',
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
  readonly content: { readonly 'application/json': { readonly schema: typeof ErrorRef; readonly examples: Record<string, { summary: string; value: unknown }> } };
}

/** The example body of an error code. */
export function errorExample(code: ErrorCode): { message: string; code: string; field?: string; allowed?: (string | number)[] } {
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
  const out: Record<number, { description: string; content: { 'application/json': { schema: typeof ErrorRef; examples: Record<string, { summary: string; value: unknown }> } } }> = {};
  for (const code of all) {
    const e = byCode.get(code);
    if (!e) throw new Error(`no example for error code ${code}`);
    const slot = (out[e.status] ??= { description: STATUS_TEXT[e.status] ?? 'Error', content: { 'application/json': { schema: ErrorRef, examples: {} } } });
    slot.content['application/json'].examples[code] = { summary: code, value: errorExample(code) };
  }
  return out;
}
