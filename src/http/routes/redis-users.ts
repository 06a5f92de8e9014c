import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { OPERATION_HEADERS, REDIS_USER_CHANGE_HEADERS } from '../schemas/operations.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { REDIS_USER } from '../schemas/examples.js';
import { RedisUserCreateBody, RedisUserCreated, RedisUserParams, RedisUserPatchBody, RedisUserRecord } from '../schemas/redis-users.js';
import { redisUserRecord } from '../serializers.js';

/** Application users of Redis instances, through Redis ACLs (an addition to the ObjectRocket API). */
export function redisUserRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { redisUsers } = deps.services;
  const tags = ['redis users'];
  const base = '/redis/:instance_name/users/';

  app.get(
    base,
    {
      schema: {
        summary: "A redis instance's application users",
        tags,
        params: NameParams,
        response: { 200: Data(Type.Array(RedisUserRecord), [REDIS_USER]), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: (await redisUsers.list(callerOf(req), req.params.instance_name)).map(redisUserRecord) }),
  );
  app.post(
    base,
    {
      config: { audit: 'redis_user.create' },
      schema: {
        summary: 'Add a user, with its keys, channels and commands',
        description:
          'Applied on the primary and the replica (and written into their configuration files) before the answer, or within seconds after it.',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: RedisUserCreateBody,
        response: {
          200: {
            ...Data(RedisUserCreated, { user: REDIS_USER, password: '8c1d0e9f2a3b4c5d6e7f8091a2b3c4d5' }),
            headers: REDIS_USER_CHANGE_HEADERS,
          },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'USER_EXISTS',
            'INSTANCE_DELETING',
          ]),
        },
      },
    },
    async (req, reply) => {
      const { user, password } = answerStarted(
        reply,
        await redisUsers.create(callerOf(req), req.params.instance_name, req.body, originOf(req)),
      );
      return { data: { user: redisUserRecord(user), password } };
    },
  );
  app.get(
    `${base}:username/`,
    {
      schema: {
        summary: 'One user',
        tags,
        params: RedisUserParams,
        response: { 200: Data(RedisUserRecord, REDIS_USER), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'USER_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: redisUserRecord(await redisUsers.get(callerOf(req), req.params.instance_name, req.params.username)) }),
  );
  app.patch(
    `${base}:username/`,
    {
      config: { audit: 'redis_user.update' },
      schema: {
        summary: "Change a user's password, keys, channels or commands (a sent list replaces the old one)",
        tags,
        params: RedisUserParams,
        headers: IdempotencyHeaders,
        body: RedisUserPatchBody,
        response: {
          200: { ...Data(RedisUserRecord, REDIS_USER), headers: REDIS_USER_CHANGE_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'USER_NOT_FOUND',
            'INSTANCE_DELETING',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: redisUserRecord(
        answerStarted(
          reply,
          await redisUsers.update(callerOf(req), req.params.instance_name, req.params.username, req.body, originOf(req)),
        ),
      ),
    }),
  );
  app.delete(
    `${base}:username/`,
    {
      config: { audit: 'redis_user.delete' },
      schema: {
        summary: 'Delete a user: its open connections are closed',
        tags,
        params: RedisUserParams,
        response: {
          200: { ...Data(Type.Object({}, { description: 'Empty' }), {}), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'USER_NOT_FOUND', 'INSTANCE_DELETING']),
        },
      },
    },
    async (req, reply) => {
      answerStarted(reply, await redisUsers.delete(callerOf(req), req.params.instance_name, req.params.username, originOf(req)));
      return { data: {} };
    },
  );
}
