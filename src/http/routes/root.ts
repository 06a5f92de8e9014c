import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { hangarVersion } from '../../lib/version.js';
import { Data } from '../schemas/common.js';
import { errorResponses } from '../schemas/error-responses.js';
import { DOCS_PATH, OPENAPI_PATH } from '../plugins/openapi.js';

/** Where the web console's page is served, when the console is built. */
export const CONSOLE_PATH = '/';

const ApiRoot = Type.Object(
  {
    name: Type.Literal('hangar'),
    version: Type.String({ description: "hangar's version" }),
    api: Type.String({ description: 'The API served under /v2' }),
    links: Type.Object({
      docs: Type.String({ description: 'The API reference, rendered (no authentication)' }),
      openapi: Type.String({ description: 'The OpenAPI 3.1 document (no authentication)' }),
      console: Type.Union([Type.String(), Type.Null()], { description: 'The web console; null when this hangar was built without it' }),
    }),
  },
  { description: 'What answers here, and where to read about it' },
);

/** Whether the app serves the web console (it is registered only when built). */
export function servesConsole(app: FastifyInstance): boolean {
  return app.findRoute({ method: 'GET', url: CONSOLE_PATH }) !== null;
}

/**
 * `GET /v2/`: the API's front door, without authentication: hangar's version and links to the
 * docs page, the OpenAPI document and the console (paths on this host), so that a person or a
 * client who finds the URL finds the rest.
 */
export function rootRoutes(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/',
    {
      // `/v2/`, as every other path of the API is written (the router takes `/v2` too)
      prefixTrailingSlash: 'slash',
      config: { auth: 'none' },
      schema: {
        summary: "hangar's version, and links to the docs, the OpenAPI document and the console (no authentication)",
        tags: ['docs'],
        security: [],
        response: {
          200: Data(ApiRoot, {
            name: 'hangar',
            version: '0.1.0',
            api: 'ObjectRocket API v2',
            links: { docs: DOCS_PATH, openapi: OPENAPI_PATH, console: CONSOLE_PATH },
          }),
          ...errorResponses(['RATE_LIMITED'], { authenticated: false }),
        },
      },
    },
    async (req) => ({
      data: {
        name: 'hangar' as const,
        version: hangarVersion(),
        api: 'ObjectRocket API v2',
        links: { docs: DOCS_PATH, openapi: OPENAPI_PATH, console: servesConsole(req.server) ? CONSOLE_PATH : null },
      },
    }),
  );
}
