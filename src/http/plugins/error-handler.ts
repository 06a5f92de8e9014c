import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HangarError, allProblems, errors, problemsOf, withArticle } from '../../domain/errors.js';
import { isStoreUnavailable } from '../../store/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The checks of the route's service that judge each value of a body on its own (those a
     * schema cannot say): run on a body the schema refused too, so that one answer names every
     * problem, not one per round trip. Fields the schema already faulted are not named twice.
     */
    bodyChecks?: (body: unknown) => readonly HangarError[];
  }
}

/** At most this many problems are listed in an error's `errors` (a body of 1,000 bad ACLs would list thousands). */
export const MAX_LISTED_PROBLEMS = 50;

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** (Ajv's `verbose`) the schema holding the failed keyword, and the value it judged. */
  parentSchema?: { examples?: unknown };
  data?: unknown;
}

/**
 * What a value of a schema pattern looks like, in words: a client is told the form, never the
 * regular expression. Every pattern of a request schema is in this list (a test checks it).
 */
export function describePattern(pattern: string): string | undefined {
  const digits = /^\^\[0-9\]\{1,(\d+)\}\$$/.exec(pattern);
  if (digits) return `a whole number of 1 to ${digits[1]} digits`;
  if (pattern === '^[0-9a-f]{24}$') return 'an id of 24 hexadecimal digits (0-9, a-f)';
  if (pattern === '^[^\\u0000-\\u001f]+$') return 'text without control characters (no newline, tab or NUL)';
  return undefined;
}

/** `/acls/0/cidr_mask` -> `acls[0].cidr_mask` */
function fieldName(path: string, extra?: unknown): string {
  const parts = path.split('/').filter(Boolean);
  if (typeof extra === 'string') parts.push(extra);
  return parts.reduce((out, p) => (/^\d+$/.test(p) ? `${out}[${p}]` : out ? `${out}.${p}` : p), '');
}

/** The framework's own 4xx answers, as catalogue errors. */
const FRAMEWORK_4XX: Record<number, () => HangarError> = {
  403: errors.forbiddenPath,
  404: errors.notFound,
  405: errors.methodNotAllowed,
  406: errors.notAcceptable,
  408: errors.requestTimeout,
  411: errors.lengthRequired,
  414: errors.uriTooLong,
  416: errors.rangeNotSatisfiable,
  431: errors.headersTooLarge,
};

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
      return errors.invalidValue(field, `"${field}" must be ${withArticle(type)}`);
    }
    case 'enum': {
      const field = fieldName(e.instancePath);
      return errors.invalidValue(
        field,
        `"${field}" has a value that is not allowed`,
        (e.params.allowedValues as (string | number)[]) ?? [],
      );
    }
    case 'pattern': {
      const field = fieldName(e.instancePath);
      const form = describePattern(String(e.params.pattern)) ?? 'in the form the API documents (see /v2/openapi.json)';
      const examples = e.parentSchema?.examples;
      const first: unknown = Array.isArray(examples) ? examples[0] : undefined;
      const example = first === undefined ? '' : `, e.g. ${typeof first === 'string' ? first : JSON.stringify(first)}`;
      const got = typeof e.data === 'string' ? `; got ${JSON.stringify(e.data.length > 40 ? `${e.data.slice(0, 40)}...` : e.data)}` : '';
      const subject = field ? `"${field}"` : where;
      return errors.invalidValue(field, `${subject} must be ${form}${example}${got}`);
    }
    case 'const': {
      const field = fieldName(e.instancePath);
      return errors.invalidValue(field, `"${field}" must be ${JSON.stringify(e.params.allowedValue)}`);
    }
    default: {
      const field = fieldName(e.instancePath);
      return field
        ? errors.invalidValue(field, `"${field}" ${e.message ?? 'is not valid'}`)
        : errors.invalidBody(`${where} ${e.message ?? 'is not valid'}`);
    }
  }
}

/** Each problem a schema validation found, in the validator's order, the same sentence once. */
function schemaProblems(found: readonly AjvError[], context: string | undefined): HangarError[] {
  const seen = new Set<string>();
  const out: HangarError[] = [];
  for (const e of found) {
    const problem = validationError(e, context);
    const key = `${problem.code} ${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(problem);
  }
  return out;
}

const fieldOf = (e: HangarError): string | undefined => (typeof e.extra.field === 'string' ? e.extra.field : undefined);

/**
 * What a request whose body the schema refused did wrong, all of it: the schema's problems,
 * the fields a missing body lacks, and what the route's own body checks find in the fields the
 * schema let through.
 */
function bodyProblems(problems: HangarError[], req: FastifyRequest): HangarError[] {
  const schema = req.routeOptions.schema?.body as { type?: unknown; required?: unknown } | undefined;
  if (req.body === undefined && schema?.type === 'object' && Array.isArray(schema.required)) {
    for (const field of schema.required as string[]) problems.push(errors.invalidBody(`"${field}" is required`, field));
  }
  const checks = req.routeOptions.config.bodyChecks;
  if (!checks) return problems;
  const faulted = new Set(problems.map(fieldOf));
  try {
    for (const p of checks(req.body)) if (!faulted.has(fieldOf(p))) problems.push(p);
  } catch (err) {
    // the schema's answer stands on its own; a check that fails on a refused body adds nothing
    req.log.debug({ err }, 'body checks failed on a refused body');
  }
  return problems;
}

/** The Content-Type a request declared, as a message may quote it: printable, bounded. */
function mediaTypeOf(req: FastifyRequest | undefined): string {
  const type = req?.headers['content-type'];
  if (typeof type !== 'string') return 'an unknown type';
  const printable = type.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 100 ? `${printable.slice(0, 100)}...` : printable;
}

/** Translates any failure into the API's error body. Never a stack trace, never HTML. */
export function toHangarError(err: FastifyError | Error, req?: FastifyRequest): HangarError | undefined {
  if (err instanceof HangarError) return err;
  const fe = err as FastifyError & { validation?: AjvError[]; validationContext?: string };
  if (fe.validation && fe.validation.length > 0) {
    const problems = schemaProblems(fe.validation, fe.validationContext);
    return allProblems(fe.validationContext === 'body' && req ? bodyProblems(problems, req) : problems);
  }
  if (isStoreUnavailable(err)) return errors.storeUnavailable();
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.bodyTooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(mediaTypeOf(req));
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.invalidBody('the Content-Length does not match the body');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidBody('the body is empty');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.uriTooLong();
    case 'FST_ERR_BAD_URL':
      return errors.invalidPath();
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return (FRAMEWORK_4XX[fe.statusCode] ?? errors.badRequest)();
  }
  return undefined;
}

/** One problem of a request, as `errors` lists it. */
export interface ProblemBody {
  message: string;
  code: string;
  field?: string;
  allowed?: (string | number)[];
}

function problemBody(e: HangarError): ProblemBody {
  const { field, allowed } = e.extra as { field?: unknown; allowed?: unknown };
  return {
    message: e.message,
    code: e.code,
    ...(typeof field === 'string' ? { field } : {}),
    ...(Array.isArray(allowed) ? { allowed: allowed as (string | number)[] } : {}),
  };
}

/**
 * The body of every error: `message` and `code`, plus `field` and `allowed` when a field is at
 * fault; a 400 lists in `errors` every problem found in the request (the first is the one of
 * `message`). Nothing else of an error reaches a client (no state, limit or internal detail).
 */
export function errorBody(e: HangarError): {
  message: string;
  code: string;
  field?: string;
  allowed?: (string | number)[];
  errors?: ProblemBody[];
} {
  const { field, allowed } = problemBody(e);
  return {
    message: e.message,
    code: e.code,
    ...(field !== undefined ? { field } : {}),
    ...(allowed !== undefined ? { allowed } : {}),
    ...(e.status === 400 ? { errors: problemsOf(e).slice(0, MAX_LISTED_PROBLEMS).map(problemBody) } : {}),
  };
}

/** After a 413, how long hangar goes on reading (and dropping) what the client still sends. */
const LINGER_MAX_MS = 10_000;
/** ...and how long it waits for more before it closes anyway. */
const LINGER_IDLE_MS = 2_000;

/**
 * Closes the connection once the answer is out, but gently: hangar stops sending (FIN) and reads
 * on, dropping what comes, until the client has finished and closes, or for a bounded time.
 * Closing at once, with the client's bytes still arriving, makes the kernel answer them with a
 * reset, which can reach the client before it has read the answer (a broken pipe, no 413).
 */
function lingerOnClose(socket: Duplex & { destroySoon?: () => void; setTimeout?: (ms: number, cb?: () => void) => unknown }): void {
  // node's server ends a `Connection: close` answer with socket.destroySoon(): end, then destroy
  socket.destroySoon = () => {
    const close = () => socket.destroy();
    socket.once('end', close);
    socket.setTimeout?.(LINGER_IDLE_MS, close);
    setTimeout(close, LINGER_MAX_MS).unref();
    socket.end();
    socket.resume();
  };
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const known = toHangarError(err, req);
  if (known?.code === 'BODY_TOO_LARGE' && !req.raw.complete) {
    // the client may still be sending: answer, then close the connection without a reset
    void reply.header('connection', 'close');
    lingerOnClose(req.raw.socket);
  }
  if (!known) {
    req.log.error({ err }, 'request failed');
    void reply.code(500).send(errorBody(errors.internal(req.id)));
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
  writeRaw(
    socket,
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errors.requestTimeout()
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : errors.malformedRequest(),
  );
}

/** CONNECT requests: no tunnels here. */
export function onConnectMethod(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => {});
  writeRaw(socket, errors.connectRefused());
}

/** The methods a path can be asked with, in the order the Allow header lists them. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * No route for this method and path: a 405 with an Allow header when the path has routes for
 * other methods (`POST /v2/tokens/`), the 404 of an unknown path otherwise (also when a route
 * of this very method passed the request on: a static file that is not there).
 */
export function notFoundHandler(req: FastifyRequest, reply: FastifyReply): void {
  const path = req.url.split('?')[0]!;
  const allowed = METHODS.filter((method) => req.server.findRoute({ method, url: path }) !== null);
  if (allowed.length > 0 && !allowed.includes(req.method as (typeof METHODS)[number])) {
    void reply
      .code(405)
      .header('allow', allowed.join(', '))
      .send(errorBody(errors.wrongMethod(req.method, path.slice(0, 200), allowed)));
    return;
  }
  void reply.code(404).send(errorBody(errors.routeNotFound(req.method, path.slice(0, 200))));
}
