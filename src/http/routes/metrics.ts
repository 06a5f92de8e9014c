import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../lib/metrics.js';

/**
 * Prometheus metrics at `/metrics`, outside /v2 and without authentication: like /healthz it
 * belongs on an internal network (expose the API port to clients through a proxy that does
 * not forward /metrics, or firewall it).
 */
export function metricsRoutes(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
}
