import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HangarError, errors } from '../../domain/errors.js';
import { isStoreUnavailable } from '../../store/errors.js';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** `/acls/0/cidr_mask` -> `acls[0].cidr_mask` */
function fieldName(path: string, extra?: unknown): string {
  const parts = path.split('/').filter(Boolean);
  if (typeof extra === 'string') parts.push(extra);
  return parts.reduce((out, p) => (/^\d+$/.test(p) ? `${out}[${p}]` : out ? `${out}.${p}` : p), '');
}

export const BODY_TOO_LARGE = new HangarError(413, 'BODY_TOO_LARGE', 'the request body is larger than 64 KiB');
export const UNSUPPORTED_MEDIA_TYPE = new HangarError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as JSON (Content-Type: application/json, or none)');
export const URI_TOO_LONG = new HangarError(414, 'URI_TOO_LONG', 'a path segment is longer than 512 characters');
export const INVALID_PATH = new HangarError(400, 'INVALID_PATH', 'the path is not valid percent-encoding (or does not decode to UTF-8)');
export const REQUEST_TIMEOUT = new HangarError(408, 'REQUEST_TIMEOUT', 'the request did not arrive in time; the connection is closed');
export const HEADERS_TOO_LARGE = new HangarError(431, 'HEADERS_TOO_LARGE', 'the request line and headers are larger than 16 KiB');
export const MALFORMED_REQUEST = new HangarError(400, 'BAD_REQUEST', 'the request is not valid HTTP/1.1');
export const METHOD_NOT_ALLOWED = new HangarError(405, 'METHOD_NOT_ALLOWED', 'CONNECT is not a method of this API');

/** Codes of the 4xx answers of the framework and its plugins (the docs page's static files). */
const FRAMEWORK_4XX: Record<number, [code: string, message: string]> = {
  403: ['FORBIDDEN', 'that path is not served'],
  404: ['ROUTE_NOT_FOUND', 'not found'],
  405: ['METHOD_NOT_ALLOWED', 'that method is not allowed here'],
  406: ['NOT_ACCEPTABLE', 'no answer of an acceptable type'],
  408: [REQUEST_TIMEOUT.code, REQUEST_TIMEOUT.message],
  411: ['LENGTH_REQUIRED', 'send a Content-Length'],
  414: [URI_TOO_LONG.code, URI_TOO_LONG.message],
  416: ['RANGE_NOT_SATISFIABLE', 'the range asked for is outside the file'],
  431: [HEADERS_TOO_LARGE.code, HEADERS_TOO_LARGE.message],
};

/** Anything unexpected; the request id lets an operator find the cause in the log. */
export const internalError = (requestId: string) => new HangarError(500, 'INTERNAL', `internal error; request id ${requestId}`);
export const INTERNAL = internalError('0b7e4c1d-5a2f-4f0e-9c61-3d2b8a9e7f10');

const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

/** A schema failure as a sentence that names the field and, where known, the allowed values. */
export function validationError(e: AjvError, context: string | undefined): HangarError {
  const where = context === 'body' || context === undefined ? 'the request body' : `the ${context}`;
  switch (e.keyword) {
    case 'required': {
      const field = fieldName(e.instancePath, e.params.missingProperty);
      return errors.invalidBody(`"${field}" is required`, field);
    }
    case 'additionalProperties': {
      const field = fieldName(e.instancePath, e.params.additionalProperty);
      return errors.invalidBody(`unknown field "${field}"`, field);
    }
    case 'type': {
      const field = fieldName(e.instancePath);
      const type = String(e.params.type);
      if (!field) return errors.invalidBody(`${where} must be a JSON ${type === 'object' ? 'object' : type}`);
      return errors.invalidValue(field, `"${field}" must be ${article(type === 'integer' ? 'integer' : type)}`);
    }
    case 'enum': {
      const field = fieldName(e.instancePath);
      return errors.invalidValue(field, `"${field}" has a value that is not allowed`, (e.params.allowedValues as (string | number)[]) ?? []);
    }
    case 'const': {
      const field = fieldName(e.instancePath);
      return errors.invalidValue(field, `"${field}" must be ${JSON.stringify(e.params.allowedValue)}`);
    }
    default: {
      const field = fieldName(e.instancePath);
      return field ? errors.invalidValue(field, `"${field}" ${e.message ?? 'is not valid'}`) : errors.invalidBody(`${where} ${e.message ?? 'is not valid'}`);
    }
  }
}

/** Translates any failure into the API's error body. Never a stack trace, never HTML. */
export function toHangarError(err: FastifyError | Error): HangarError | undefined {
  if (err instanceof HangarError) return err;
  const fe = err as FastifyError & { validation?: AjvError[]; validationContext?: string };
  if (fe.validation && fe.validation.length > 0) return validationError(fe.validation[0]!, fe.validationContext);
  if (isStoreUnavailable(err)) return errors.storeUnavailable();
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return BODY_TOO_LARGE;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return UNSUPPORTED_MEDIA_TYPE;
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.invalidBody('the Content-Length does not match the body');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidBody('the body is empty');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return URI_TOO_LONG;
    case 'FST_ERR_BAD_URL':
      return INVALID_PATH;
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const [code, message] = FRAMEWORK_4XX[fe.statusCode] ?? ['BAD_REQUEST', 'the request is not valid'];
    return new HangarError(fe.statusCode, code, message);
  }
  return undefined;
}

/**
 * The body of every error: `message` and `code`, plus `field` and `allowed` when a field is at
 * fault. Nothing else of an error reaches a client (no state, limit or internal detail).
 */
export function errorBody(e: HangarError): { message: string; code: string; field?: string; allowed?: (string | number)[] } {
  const { field, allowed } = e.extra as { field?: unknown; allowed?: unknown };
  return {
    message: e.message,
    code: e.code,
    ...(typeof field === 'string' ? { field } : {}),
    ...(Array.isArray(allowed) ? { allowed: allowed as (string | number)[] } : {}),
  };
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const known = toHangarError(err);
  if (!known) {
    req.log.error({ err }, 'request failed');
    void reply.code(500).send(errorBody(internalError(req.id)));
    return;
  }
  if (known.status >= 500) req.log.warn({ err }, known.message);
  const retry = known.extra.retryAfterSeconds;
  if (typeof retry === 'number') void reply.header('retry-after', String(retry));
  void reply.code(known.status).send(errorBody(known));
}

/** An error written straight to a socket the HTTP parser gave up on; the connection then closes. */
function writeRaw(socket: Duplex, e: HangarError): void {
  const body = JSON.stringify(errorBody(e));
  const head = [
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'x-content-type-options: nosniff',
    `x-request-id: ${randomUUID()}`,
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  // A client that does not read its answer must not keep the socket either.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * Malformed HTTP, headers over the size limit, a request (or its headers) not arrived in time:
 * node's parser reports them here, outside any route. The answer is JSON like every other one.
 * The error itself is not logged whole: it carries the raw bytes received, credentials included.
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  this.log.debug({ code: err.code }, 'client error');
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  // Once an answer has started on this connection, nothing more can be said on it.
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  writeRaw(socket, err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? REQUEST_TIMEOUT : err.code === 'HPE_HEADER_OVERFLOW' ? HEADERS_TOO_LARGE : MALFORMED_REQUEST);
}

/** CONNECT requests: no tunnels here. */
export function onConnectMethod(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => {});
  writeRaw(socket, METHOD_NOT_ALLOWED);
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply): void {
  void reply.code(404).send(errorBody(errors.routeNotFound(req.method, req.url.split('?')[0]!.slice(0, 200))));
}
