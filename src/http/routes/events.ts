import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { formatCreated } from '../../lib/time.js';
import { listAuditEvents } from '../../store/audit-repository.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { errorResponses } from '../schemas/error-responses.js';
import { AuditEventRecord, EventsQuery } from '../schemas/events.js';
import { AUDIT_EVENT } from '../schemas/examples.js';

/** `GET /v2/events/`: the account's own audit log, newest first (an addition to the spec). */
export function eventRoutes(fastify: FastifyInstance, deps: AppDeps): void {
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
      const rows = await listAuditEvents(deps.db, {
        accountId: callerOf(req).accountId,
        limit,
        ...(req.query.before !== undefined ? { beforeId: Number(req.query.before) } : {}),
      });
      return {
        data: rows.map((r) => ({
          id: r.id,
          action: r.action,
          target: r.target,
          source_ip: r.source_ip,
          outcome: r.outcome,
          status: r.status_code,
          request_id: r.request_id,
          created: formatCreated(r.created_at),
          date_created: { $date: r.created_at },
        })),
      };
    },
  );
}
