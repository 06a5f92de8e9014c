import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import Fastify, { LogController, type FastifyInstance, type RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import { RequestLogger } from './http/request-logger.js';
import type { AppDeps } from './http/context.js';
import { Metrics } from './lib/metrics.js';
import { registerAudit } from './http/plugins/audit.js';
import { registerAuth } from './http/plugins/auth.js';
import { registerIdempotency } from './http/plugins/idempotency.js';
import { registerInstanceOwner } from './http/plugins/instance-owner.js';
import { registerJsonBodies } from './http/plugins/content.js';
import { registerNoStore } from './http/plugins/no-store.js';
import { clientErrorHandler, errorHandler, notFoundHandler, onConnectMethod } from './http/plugins/error-handler.js';
import { registerOpenApi } from './http/plugins/openapi.js';
import { ErrorBody } from './http/schemas/common.js';
import { EventRecord } from './http/schemas/operations.js';
import { aclCheckRoutes } from './http/routes/acl-checks.js';
import { aclRoutes } from './http/routes/acls.js';
import { backupRoutes } from './http/routes/backups.js';
import { consoleRoutes } from './http/routes/console.js';
import { eventRoutes } from './http/routes/events.js';
import { healthRoutes } from './http/routes/health.js';
import { instanceRoutes } from './http/routes/instances.js';
import { keyRoutes } from './http/routes/keys.js';
import { metricsRoutes } from './http/routes/metrics.js';
import { mongodbUserRoutes } from './http/routes/mongodb-users.js';
import { operationRoutes } from './http/routes/operations.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { passwordRoutes } from './http/routes/passwords.js';
import { redisRoutes } from './http/routes/redis.js';
import { rootRoutes } from './http/routes/root.js';
import { elasticsearchRoutes } from './http/routes/elasticsearch.js';
import { redisUserRoutes } from './http/routes/redis-users.js';
import { tlsRoutes } from './http/routes/tls.js';
import { tokenRoutes } from './http/routes/tokens.js';
import { whoamiRoutes } from './http/routes/whoami.js';
import { engineRoutes } from './http/routes/engines.js';
import { zoneRoutes } from './http/routes/zones.js';

/** The logger of the one line per request: the same destination, level and bindings, no redaction paths. */
function requestLogger(logger: Logger): Logger {
  return logger.child({}, { redact: [] });
}

/**
 * Fastify's serializer compiler, each response serializer compiled when its first answer is
 * sent rather than when hangar starts: some 400 serializers (every route, status and content
 * type), most of which a given hangar never uses, would otherwise be compiled and held from the
 * start. The compiled serializer is the same, so answers are too.
 */
function lazySerializers(): (externalSchemas: unknown, options: unknown) => (route: { schema: unknown }) => (data: unknown) => string {
  const selector = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = selector(externalSchemas as never, options as never) as (route: unknown) => (data: unknown) => string;
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => {
        serialize ??= compile(route);
        return serialize(data);
      };
    };
  };
}

/**
 * Fastify's validator compiler, each request validator compiled when its first request comes
 * rather than when hangar starts (with the serializers, about a third of a start's CPU). The
 * compiled validator is the same; its `errors` are read through the wrapper, as Fastify does.
 */
function lazyValidators(): (externalSchemas: unknown, options: unknown) => (route: unknown) => (data: unknown) => unknown {
  const selector = AjvCompiler();
  return (externalSchemas, options) => {
    const compile = selector(externalSchemas as never, options as never) as unknown as (
      route: unknown,
    ) => ((data: unknown) => unknown) & { errors?: unknown };
    return (route) => {
      let validate: (((data: unknown) => unknown) & { errors?: unknown }) | undefined;
      const lazy = (data: unknown) => {
        validate ??= compile(route);
        return validate(data);
      };
      Object.defineProperty(lazy, 'errors', { get: () => validate?.errors });
      return lazy;
    };
  };
}

/** Request bodies above this are refused with 413. */
export const BODY_LIMIT = 64 * 1024;

/** Path parameters longer than this are refused with 414. */
export const MAX_PARAM_LENGTH = 512;

/** A request id taken from X-Request-Id must look like one (no log injection, bounded size). */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * How long and how large a request may be, so that slow or oversized clients (headers sent byte
 * by byte, bodies trickled, connections opened and left silent) cannot hold the server's
 * connections: each limit ends such a connection with a JSON error and closes it.
 */
export interface HttpLimits {
  /** The request line and headers must have arrived within this (408 otherwise). */
  readonly headersTimeoutMs: number;
  /** The whole request, body included, must have arrived within this (408 otherwise). */
  readonly requestTimeoutMs: number;
  /** A connection on which nothing at all moves for this long is closed. */
  readonly idleTimeoutMs: number;
  /** An idle keep-alive connection is closed after this, between requests. */
  readonly keepAliveTimeoutMs: number;
  /** How often node looks for requests past the two timeouts above (its default is 30 s). */
  readonly timeoutCheckMs: number;
  /** Request line plus headers, in bytes (431 above). */
  readonly maxHeaderBytes: number;
}

export const HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  timeoutCheckMs: 1_000,
  maxHeaderBytes: 16 * 1024,
};

export interface AppOptions {
  /** Called for every route as it is registered (tests list the routes with it). */
  readonly onRoute?: (route: RouteOptions) => void;
  /** Overrides of HTTP_LIMITS (tests shorten the timeouts). */
  readonly http?: Partial<HttpLimits>;
}

/**
 * Builds the HTTP application: every route, its schemas, authentication, errors, the OpenAPI
 * document, /metrics. Never listens; the server (or a test) does.
 */
export async function buildApp(deps: AppDeps, logger?: Logger, options: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = deps;
  const metrics = deps.metrics ?? new Metrics();
  const limits: HttpLimits = { ...HTTP_LIMITS, ...options.http };
  // Options of node's HTTP server itself (https.createServer takes them too).
  const serverOptions = {
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.timeoutCheckMs,
    // hangar does not route by host name; a request without Host gets the API's own answer
    // (node would send an empty, non-JSON 400).
    requireHostHeader: false,
  };
  const tls = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined;
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    ...(tls ? { https: { ...tls, ...serverOptions } } : { http: serverOptions }),
    bodyLimit: BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    childLoggerFactory: (parent, bindings, options) => new RequestLogger(parent, bindings, options),
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // While stopping, requests that still arrive on open connections are served (each answer
    // closing its connection), never answered with the framework's own 503 body.
    return503OnClosing: false,
    connectionTimeout: limits.idleTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Failures found by the router (a path parameter too long, a path that is not valid
    // percent-encoding) are rendered like every other error.
    frameworkErrors: (err, req, reply) => {
      void reply.header('x-request-id', req.id).header('x-content-type-options', 'nosniff');
      errorHandler(err, req, reply);
    },
    // Malformed HTTP, oversized headers, timeouts: a JSON error, then the connection is closed.
    clientErrorHandler,
    // allErrors: a refused body is answered with every problem the schema finds, not the first only;
    // verbose: each problem carries the value and its schema, so that a message can show them.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: true, verbose: true } },
    schemaController: { compilersFactory: { buildValidator: lazyValidators() as never, buildSerializer: lazySerializers() as never } },
  }) as unknown as FastifyInstance;

  app.server.headersTimeout = limits.headersTimeoutMs;
  // CONNECT is no method of the API; without a listener node would close the socket silently.
  app.server.on('connect', onConnectMethod);
  registerNoStore(app);
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  registerJsonBodies(app);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  // Hooks that never wait are written with callbacks: an async hook costs a promise and a
  // microtask turn on every request.
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-request-id', req.id).header('x-content-type-options', 'nosniff');
    if (tls) void reply.header('strict-transport-security', 'max-age=31536000');
    done();
  });
  // Draining before a stop: clients are told to take their next request elsewhere.
  if (deps.stopping) {
    const stopping = deps.stopping;
    app.addHook('onSend', (req, reply, payload, done) => {
      if (stopping() && req.raw.httpVersionMajor === 1) void reply.header('connection', 'close');
      done(null, payload);
    });
  }
  // One line per request. Its fields are fixed and none can hold a credential (the path without
  // its query string, the route, the login, the address), so it is written by a child logger
  // without the redaction paths, which would otherwise be walked on every request; every other
  // line, including those of req.log, keeps them.
  const requestLog = logger ? requestLogger(logger) : undefined;
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url;
    metrics.observeRequest(req.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    if (requestLog?.isLevelEnabled('info')) {
      const q = req.url.indexOf('?');
      requestLog.info(
        {
          request_id: req.id,
          method: req.method,
          url: (q < 0 ? req.url : req.url.slice(0, q)).slice(0, 200),
          route: route ?? null,
          status: reply.statusCode,
          account: req.caller?.login ?? null,
          ip: req.ip,
          duration_ms: Math.round(reply.elapsedTime * 100) / 100,
        },
        'request',
      );
    }
    done();
  });

  await registerOpenApi(app);
  app.addSchema(ErrorBody);
  // Documented for the event stream and webhook deliveries, which are not JSON answers of a route.
  app.addSchema(EventRecord);
  healthRoutes(app, deps);
  metricsRoutes(app, metrics);
  await app.register(
    async (v2) => {
      registerAuth(v2, deps.services);
      registerAudit(v2, deps);
      registerIdempotency(v2, deps);
      registerInstanceOwner(v2, deps);
      rootRoutes(v2);
      tokenRoutes(v2, deps);
      instanceRoutes(v2, deps);
      aclRoutes(v2, deps);
      aclCheckRoutes(v2, deps);
      redisRoutes(v2, deps);
      elasticsearchRoutes(v2, deps);
      redisUserRoutes(v2, deps);
      passwordRoutes(v2, deps);
      mongodbUserRoutes(v2, deps);
      backupRoutes(v2, deps);
      eventRoutes(v2, deps);
      operationRoutes(v2, deps);
      webhookRoutes(v2, deps);
      zoneRoutes(v2, deps);
      engineRoutes(v2, deps);
      keyRoutes(v2, deps);
      tlsRoutes(v2, deps);
      whoamiRoutes(v2, deps);
    },
    { prefix: '/v2' },
  );
  await consoleRoutes(app);
  return app;
}
