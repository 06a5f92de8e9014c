import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { Data, Message } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { MONGODB_USER } from '../schemas/examples.js';
import { DatabaseParams, UserCreateBody, UserParams, UserPatchBody, UserRecord } from '../schemas/mongodb-users.js';

export function mongodbUserRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { mongodbUsers } = deps.services;
  const tags = ['mongodb users'];
  const base = '/mongodb/:instance_id/databases/:database_name/users';

  app.get(
    base,
    {
      config: { instanceService: 'mongodb' },
      schema: {
        summary: 'Users of a database',
        tags,
        params: DatabaseParams,
        response: {
          200: Data(Type.Array(UserRecord), [MONGODB_USER]),
          ...errorResponses([...WITH_PATH, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => ({ data: await mongodbUsers.list(callerOf(req), req.params.instance_id, req.params.database_name) }),
  );
  app.post(
    base,
    {
      config: { audit: 'mongodb_user.create', instanceService: 'mongodb' },
      schema: {
        summary: 'Add a user',
        tags,
        params: DatabaseParams,
        headers: IdempotencyHeaders,
        body: UserCreateBody,
        response: {
          200: {
            ...Data(Type.String({ description: 'Confirmation naming the user' }), 'User "app" added to database "orders"'),
            headers: OPERATION_HEADERS,
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
    async (req, reply) => ({
      data: answerStarted(
        reply,
        await mongodbUsers.create(callerOf(req), req.params.instance_id, req.params.database_name, req.body, originOf(req)),
      ),
    }),
  );
  app.patch(
    `${base}/:username`,
    {
      config: { audit: 'mongodb_user.update', instanceService: 'mongodb' },
      schema: {
        summary: 'Change the password and/or the roles (a sent role list replaces the old one)',
        tags,
        params: UserParams,
        headers: IdempotencyHeaders,
        body: UserPatchBody,
        response: {
          200: { ...Message, headers: OPERATION_HEADERS },
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
      message: answerStarted(
        reply,
        await mongodbUsers.update(
          callerOf(req),
          req.params.instance_id,
          req.params.database_name,
          req.params.username,
          req.body,
          originOf(req),
        ),
      ),
    }),
  );
  app.delete(
    `${base}/:username`,
    {
      config: { audit: 'mongodb_user.delete', instanceService: 'mongodb' },
      schema: {
        summary: 'Drop a user',
        tags,
        params: UserParams,
        response: {
          200: {
            ...Data(
              Type.String({ description: 'Confirmation naming the user and the database' }),
              'User "app" deleted from database "orders"',
            ),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([...WITH_PATH, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND', 'USER_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(
        reply,
        await mongodbUsers.delete(callerOf(req), req.params.instance_id, req.params.database_name, req.params.username, originOf(req)),
      ),
    }),
  );
}
