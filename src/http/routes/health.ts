import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/swagger';
import type { AppDeps } from '../context.js';

/** Liveness and readiness, outside /v2 and without authentication. */
export function healthRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const { problems, degraded } = await deps.readiness.check();
    if (problems.length > 0) return reply.code(503).send({ status: 'not ready', problems: [...problems, ...degraded] });
    if (degraded.length > 0) return { status: 'degraded', problems: degraded };
    return { status: 'ready' };
  });
}
