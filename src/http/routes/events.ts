import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { errorResponses } from '../schemas/error-responses.js';
import { AuditEventRecord, EventsQuery } from '../schemas/events.js';
import { AUDIT_EVENT } from '../schemas/examples.js';
import { auditEventRecord } from '../serializers.js';
import { streamRoute } from './event-stream.js';

/**
 * `/v2/events/`: what happened in the account, as an addition to the spec. `GET /v2/events/`
 * lists the audit log (who changed what, newest first); `GET /v2/events/stream` streams what
 * happens as it happens (instance state changes, operation progress), with ids to resume from.
 */
export function eventRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  streamRoute(fastify, deps);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/events/',
    {
      schema: {
        summary: "The account's audit log, newest first (an addition to the ObjectRocket API)",
        tags: ['events'],
        querystring: EventsQuery,
        response: { 200: Data(Type.Array(AuditEventRecord), [AUDIT_EVENT]), ...errorResponses(['INVALID_VALUE', 'INVALID_BODY']) },
      },
    },
    async (req) => {
      const limit = Math.min(1000, Math.max(1, Number(req.query.limit ?? 100)));
      const events = await deps.services.audit.list(callerOf(req), {
        limit,
        ...(req.query.before !== undefined ? { before: Number(req.query.before) } : {}),
      });
      return { data: events.map(auditEventRecord) };
    },
  );
}
