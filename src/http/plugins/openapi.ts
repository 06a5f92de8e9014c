import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { hangarVersion } from '../../lib/version.js';

/** Where the document and the docs page are served. */
export const OPENAPI_PATH = '/v2/openapi.json';
export const DOCS_PATH = '/docs';

const DESCRIPTION = `
hangar serves the ObjectRocket API v2 for Redis, MongoDB and Elasticsearch instances.

**Logging in.** \`GET /v2/tokens/\` with HTTP Basic (your login and password, or an API key pair
as \`user_key:pass_key\`) answers \`{"data": {"token": "..."}}\`. Send the token in \`X-Auth-Token\`
on every other request. Every route also accepts HTTP Basic directly. A token expires (a day by
default); on a 401, log in again and repeat the request.

**Answers.** A success is \`{"data": ...}\` (the MongoDB user update answers \`{"message": ...}\`).
A failure is \`{"message", "code"}\` with a stable \`code\`, plus \`field\` and \`allowed\` when a
field is at fault. Every answer carries \`X-Request-Id\` (yours, when you send one); quote it when
reporting a problem. Authenticated answers carry \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`
and \`X-RateLimit-Reset\`; a 429 carries \`Retry-After\`.

**Lifecycle.** Creating, resizing and deleting take a while: the answer comes at once and the
instance's \`state\` tells the progress: REQUESTED, BUILDING, then ACTIVE (COMPLETED for
elasticsearch); RESIZING during a resize; RESTORING while a backup replaces its data; DELETING until it is gone (then 404); DEGRADED when it
served and stopped (hangar repairs it); FAILED, with \`state_reason\`, when it could not be built.

**Operations.** The answer to every request that starts asynchronous work (create, resize, rename,
delete, ACL and MongoDB user changes, backups and restores) carries \`X-Operation-Id\` and \`Location:
/v2/operations/{id}/\`, its body unchanged. An operation is PENDING, RUNNING, then SUCCEEDED,
FAILED (with an \`error\`) or CANCELLED, with the steps it went through. \`GET /v2/events/stream\`
streams operation progress and instance state changes (Server-Sent Events, resumable with
\`Last-Event-ID\`); \`/v2/webhooks/\` sends them, signed, to URLs of your own.
`.trim();

const TAGS = [
  { name: 'tokens', description: 'Logging in and out' },
  { name: 'instances', description: 'Instances: list, create, inspect, rename, delete' },
  { name: 'acls', description: 'The addresses admitted to an instance' },
  { name: 'redis', description: 'Redis inspection, settings and resizing' },
  { name: 'elasticsearch', description: 'Elasticsearch resizing (the heap of the node follows the plan)' },
  { name: 'redis users', description: 'Application users of Redis instances (Redis ACLs) and their passwords' },
  { name: 'mongodb users', description: 'MongoDB database users and their roles' },
  { name: 'backups', description: 'Backups, restores and backup policies of an instance' },
  { name: 'events', description: 'The audit log of the account, and its events as they happen (Server-Sent Events)' },
  {
    name: 'operations',
    description:
      'Every asynchronous action (create, resize, rename, delete, ACL and user changes, backups and restores): state, steps, outcome',
  },
  { name: 'webhooks', description: "URLs sent the account's events, signed" },
  { name: 'keys', description: 'The API key pairs of the account' },
  {
    name: 'tls',
    description: "TLS of instance connections: the deployment's CA, instance certificates, client certificates of mutual TLS",
  },
  { name: 'docs', description: 'This document' },
];

const OpenApiDocument = Type.Object(
  {
    openapi: Type.String({ description: 'OpenAPI version, 3.1.x' }),
    info: Type.Object({ title: Type.String(), version: Type.String() }, { additionalProperties: true }),
    paths: Type.Object({}, { additionalProperties: true }),
    components: Type.Object({}, { additionalProperties: true }),
  },
  {
    additionalProperties: true,
    description: 'This document',
    examples: [{ openapi: '3.1.0', info: { title: 'hangar API', version: '0.1.0' }, paths: {}, components: {} }],
  },
);

/**
 * The OpenAPI 3.1 document, generated from the route schemas the server validates with, at
 * `/v2/openapi.json`, and a docs page rendering it at `/docs` (assets served by hangar).
 * Register before the routes: the document collects them as they are added.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'hangar API', version: hangarVersion(), description: DESCRIPTION },
      tags: TAGS,
      components: {
        securitySchemes: {
          token: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Auth-Token',
            description: 'A token from GET /v2/tokens/',
          },
          basic: {
            type: 'http',
            scheme: 'basic',
            description: 'Your login and password, or an API key pair as user_key:pass_key',
          },
        },
      },
      security: [{ token: [] }, { basic: [] }],
    },
    // Components are named after the schemas' $id (Instance, Acl, Error...), not def-N.
    refResolver: {
      buildLocalReference: (json: Record<string, unknown>, _base: unknown, _fragment: unknown, i: number) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    // The security of a route follows its `config.auth`, the same setting the auth hook obeys.
    transform: ({ schema, url, route }) => {
      const auth = (route.config as { auth?: string } | undefined)?.auth;
      if (auth === undefined || !schema) return { schema, url };
      const security: Record<string, string[]>[] =
        auth === 'basic' ? [{ basic: [] }] : auth === 'none' ? [] : [{ token: [] }, { basic: [] }];
      return { schema: { ...schema, security }, url };
    },
  });

  let document: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        summary: 'This OpenAPI 3.1 document (no authentication)',
        tags: ['docs'],
        security: [],
        response: { 200: OpenApiDocument },
      },
    },
    async (_req, reply) => {
      document ??= JSON.stringify(app.swagger());
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );

  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    theme: { title: 'hangar API' },
    uiConfig: { docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0 },
    // Assets come from hangar itself; the page works on plain http (no upgrade-insecure-requests).
    staticCSP: true,
    transformStaticCSP: (header: string) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
  });
}
