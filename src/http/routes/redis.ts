import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, callerOf } from '../context.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { ResizeBody, SpaceUsage } from '../schemas/redis.js';

export function redisRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { redis } = deps.services;
  const tags = ['redis'];
  const read = { params: NameParams, tags };
  // Read live from the engine: it must be serving, and answer in time.
  const errs = errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'INSTANCE_NOT_READY', 'ENGINE_UNREACHABLE']);

  app.get(
    '/redis/:instance_name/connectedSlaves/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'connected_slaves of INFO replication, read live',
        response: { 200: Data(Type.Integer({ description: 'Replicas connected to the primary' }), 1), ...errs },
      },
    },
    async (req) => ({ data: await redis.connectedSlaves(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/connectedClients/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'connected_clients of INFO clients, read live (an addition to the ObjectRocket API)',
        description: "Every connection the primary has: clients, the replica's link and hangar's own probes.",
        response: { 200: Data(Type.Integer({ description: 'Connections the primary has' }), 3), ...errs },
      },
    },
    async (req) => ({ data: await redis.connectedClients(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/spaceUsage/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'Memory used, from INFO memory',
        response: { 200: Data(SpaceUsage, { freeSpacePercentage: 99.83, usedMemoryHuman: '866.06K' }), ...errs },
      },
    },
    async (req) => ({ data: await redis.spaceUsage(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/maxMemoryPolicy/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'CONFIG GET maxmemory-policy',
        response: { 200: Data(Type.String({ description: 'The eviction policy' }), 'noeviction'), ...errs },
      },
    },
    async (req) => ({ data: await redis.maxMemoryPolicy(callerOf(req), req.params.instance_name) }),
  );
  app.get(
    '/redis/:instance_name/maxClients/',
    {
      config: { instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'CONFIG GET maxclients',
        response: { 200: Data(Type.String({ description: 'A number, as a string' }), '10000'), ...errs },
      },
    },
    async (req) => ({ data: await redis.maxClients(callerOf(req), req.params.instance_name) }),
  );
  app.post(
    '/redis/:instance_name/resize/',
    {
      config: { audit: 'redis.resize', instanceService: 'redis' },
      schema: {
        ...read,
        summary: 'Grow to a larger plan, live, without a restart',
        description: 'The instance turns RESIZING at once and ACTIVE again with the new plan once the engines run with it.',
        headers: IdempotencyHeaders,
        body: ResizeBody,
        response: {
          200: Data(
            Type.String({ description: 'Confirmation naming the instance, the old and the new plan' }),
            'Resizing of instance "cache" from 500 MB to 1000 MB has started',
          ),
          ...errorResponses([...WITH_PATH, ...WITH_BODY, ...IDEMPOTENT, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND', 'OPERATION_IN_PROGRESS', 'INSTANCE_DELETING']),
        },
      },
    },
    async (req) => ({ data: await redis.resize(callerOf(req), req.params.instance_name, req.body.new_plan) }),
  );
}
