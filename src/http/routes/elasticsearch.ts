import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { ElasticsearchResizeBody } from '../schemas/redis.js';

/** `/v2/elasticsearch/<name>/...`: hangar's additions for elasticsearch instances (the spec has none). */
export function elasticsearchRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { elasticsearch } = deps.services;
  app.post(
    '/elasticsearch/:instance_name/resize/',
    {
      config: { audit: 'elasticsearch.resize', instanceService: 'elasticsearch' },
      schema: {
        params: NameParams,
        tags: ['elasticsearch'],
        summary:
          'Grow to a larger plan: the node restarts with the heap of the new plan, its data kept (an addition to the ObjectRocket API)',
        description:
          'The instance turns RESIZING at once and COMPLETED again once its node serves with the new heap. The node is down while it restarts (seconds to tens of seconds).',
        headers: IdempotencyHeaders,
        body: ElasticsearchResizeBody,
        response: {
          200: {
            ...Data(
              Type.String({ description: 'Confirmation naming the instance, the old and the new plan' }),
              'Resizing of instance "search" from 4 GB to 8 GB has started',
            ),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'OPERATION_IN_PROGRESS',
            'INSTANCE_DELETING',
            'CAPACITY_EXCEEDED',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await elasticsearch.resize(callerOf(req), req.params.instance_name, req.body.new_plan, originOf(req))),
    }),
  );
}
