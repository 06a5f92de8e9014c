import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import {
  FAILED_OPERATION_EXAMPLE,
  OPERATION_EXAMPLE,
  OperationList,
  OperationParams,
  OperationRecord,
  OperationsQuery,
} from '../schemas/operations.js';
import { operationRecord } from '../serializers.js';

const list = (v: string | undefined): string[] | undefined =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');

/**
 * `/v2/operations/`: every asynchronous action of the account (an addition to the spec): the
 * answer that starts one names it in `X-Operation-Id`.
 */
export function operationRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { operations } = deps.services;
  const tags = ['operations'];

  app.get(
    '/operations/',
    {
      schema: {
        summary: "The account's operations, newest first, a page at a time",
        description: 'Filter by `instance` (name or id), `state` and `kind` (comma-separated lists); `next_cursor` gives the next page.',
        tags,
        querystring: OperationsQuery,
        response: { 200: OperationList, ...errorResponses(['INVALID_VALUE']) },
      },
    },
    async (req) => {
      const q = req.query;
      const states = list(q.state);
      const kinds = list(q.kind);
      const page = await operations.list(callerOf(req), {
        ...(q.instance !== undefined ? { instance: q.instance } : {}),
        ...(states ? { states } : {}),
        ...(kinds ? { kinds } : {}),
        limit: Math.min(200, Math.max(1, Number(q.limit ?? 50))),
        ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
      });
      return { data: page.operations.map(operationRecord), next_cursor: page.nextCursor };
    },
  );

  app.get(
    '/operations/:operation_id/',
    {
      schema: {
        summary: 'One operation: its state, steps, progress and error',
        tags,
        params: OperationParams,
        response: {
          200: Data(OperationRecord, OPERATION_EXAMPLE, FAILED_OPERATION_EXAMPLE),
          ...errorResponses([...WITH_PATH, 'OPERATION_NOT_FOUND']),
        },
      },
    },
    async (req) => ({ data: operationRecord(await operations.get(callerOf(req), req.params.operation_id)) }),
  );

  app.post(
    '/operations/:operation_id/cancel',
    {
      config: { audit: 'operation.cancel' },
      schema: {
        summary: 'Cancel an operation where that is safe',
        description:
          'A create whose build has not started (the instance is removed) and a backup can be cancelled; anything else is a 409 saying why. Takes no body. Answers the operation, CANCELLED.',
        tags,
        params: OperationParams,
        response: {
          200: Data(OperationRecord, {
            ...OPERATION_EXAMPLE,
            state: 'CANCELLED',
            progress: null,
            steps: [
              OPERATION_EXAMPLE.steps[0]!,
              {
                name: 'cancelled',
                at: { $date: 1795251600100 },
                message: 'cancelled by ops@example.com before its build started; the instance is removed',
              },
            ],
          }),
          ...errorResponses([
            ...WITH_PATH,
            'OPERATION_NOT_FOUND',
            'OPERATION_NOT_CANCELLABLE',
            'IDEMPOTENCY_KEY_CONFLICT',
            'IDEMPOTENCY_KEY_IN_USE',
          ]),
        },
      },
    },
    async (req) => ({ data: operationRecord(await operations.cancel(callerOf(req), req.params.operation_id)) }),
  );
}
