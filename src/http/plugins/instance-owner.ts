import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Service } from '../../domain/catalog.js';
import type { InstanceService } from '../../service/instances.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The service the instance in the route's path must be of (`/v2/redis/...`, `/v2/mongodb/...`); any when left out. */
    instanceService?: Service;
  }
}

/**
 * The owner check of every route about one instance that takes a body or a query string, or is
 * sent a body (a path with `:instance_name`, or `:instance_id` which takes a name too), before
 * the body is read, parsed or validated: a request about another account's instance gets the
 * 404 of a missing one whatever its body (an unknown field, a wrong type, a role that does not exist),
 * so that no answer tells the two apart. Runs after authentication (onRequest); the service
 * checks the instance again.
 */
export function registerInstanceOwner(app: FastifyInstance, deps: { services: { instances: InstanceService } }): void {
  const { instances } = deps.services;
  // A callback hook: requests with nothing to check go on without a promise of their own.
  app.addHook('preParsing', (req, _reply, payload, done) => {
    // A route that takes no body and no query string has nothing to answer before its handler,
    // whose own lookup gives the same 404: the store is asked once, not twice (reads stay fast).
    // A body sent to a route that takes none (or only `{}`: taking a backup) is judged by it, so
    // the owner check comes first there too.
    const schema = req.routeOptions.schema;
    const params = req.params as Record<string, string | undefined>;
    const byName = params.instance_name;
    const given = byName ?? params.instance_id;
    if ((!schema?.body && !schema?.querystring && !carriesBody(req)) || given === undefined || !req.caller) {
      done(null, payload);
      return;
    }
    const service = req.routeOptions.config.instanceService;
    instances.assertOwned(req.caller, given, { byId: byName === undefined, ...(service ? { service } : {}) }).then(
      () => done(null, payload),
      (err: unknown) => done(err as Error, payload),
    );
  });
}

/** Whether the request comes with a body (a length above 0, or chunks). */
function carriesBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}
