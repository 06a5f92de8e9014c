import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Operation } from '../../domain/operations.js';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { OPERATION_HEADERS } from '../schemas/operations.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { FinishRecord, RedisUserParams, RotationRecord } from '../schemas/redis-users.js';

const ROTATION = { password: '9f8e7d6c5b4a39281706f5e4d3c2b1a0', previous_valid_until: '2026-11-21T10:00:00.000Z' };
const iso = (ms: number) => new Date(ms).toISOString();

/** A finish answers whether a password was retired; when one was, the operation that does it is in the headers. */
function finished(reply: FastifyReply, out: { retired: boolean; operation?: Operation }): { data: { retired: boolean } } {
  if (out.operation) answerStarted(reply, { result: undefined, operation: out.operation });
  return { data: { retired: out.retired } };
}

/** Password rotation without downtime: the instance password and each Redis user's (an addition to the ObjectRocket API). */
export function passwordRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { passwords } = deps.services;
  const rotateErrors = errorResponses([...WITH_PATH, ...IDEMPOTENT, 'INSTANCE_NOT_FOUND', 'ROTATION_IN_PROGRESS', 'INSTANCE_DELETING']);

  app.post(
    '/instances/:instance_name/rotate-password',
    {
      config: { audit: 'instance.password.rotate' },
      schema: {
        summary: 'Give a redis instance a new password, keeping the old one working for a grace period',
        description:
          'The record shows the new password at once; clients holding the old one keep connecting until `previous_valid_until` (HANGAR_PASSWORD_GRACE), or until rotate-password/finish. Redis instances only.',
        tags: ['instances'],
        params: NameParams,
        headers: IdempotencyHeaders,
        response: { 200: { ...Data(RotationRecord, ROTATION), headers: OPERATION_HEADERS }, ...rotateErrors },
      },
    },
    async (req, reply) => {
      const r = answerStarted(reply, await passwords.rotateInstance(callerOf(req), req.params.instance_name, originOf(req)));
      return { data: { password: r.password, previous_valid_until: iso(r.previousValidUntil) } };
    },
  );
  app.post(
    '/instances/:instance_name/rotate-password/finish',
    {
      config: { audit: 'instance.password.finish' },
      schema: {
        summary: "Retire a redis instance's old password now",
        tags: ['instances'],
        params: NameParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...Data(FinishRecord, { retired: true }), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, ...IDEMPOTENT, 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => finished(reply, await passwords.finishInstance(callerOf(req), req.params.instance_name, originOf(req))),
  );
  app.post(
    '/redis/:instance_name/users/:username/rotate-password',
    {
      config: { audit: 'redis_user.password.rotate' },
      schema: {
        summary: 'Give a user a new password, keeping the old one working for a grace period',
        tags: ['redis users'],
        params: RedisUserParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...Data(RotationRecord, ROTATION), headers: OPERATION_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...IDEMPOTENT,
            'INSTANCE_NOT_FOUND',
            'USER_NOT_FOUND',
            'ROTATION_IN_PROGRESS',
            'INSTANCE_DELETING',
          ]),
        },
      },
    },
    async (req, reply) => {
      const r = answerStarted(
        reply,
        await passwords.rotateUser(callerOf(req), req.params.instance_name, req.params.username, originOf(req)),
      );
      return { data: { password: r.password, previous_valid_until: iso(r.previousValidUntil) } };
    },
  );
  app.post(
    '/redis/:instance_name/users/:username/rotate-password/finish',
    {
      config: { audit: 'redis_user.password.finish' },
      schema: {
        summary: "Retire a user's old password now",
        tags: ['redis users'],
        params: RedisUserParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...Data(FinishRecord, { retired: true }), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, ...IDEMPOTENT, 'INSTANCE_NOT_FOUND', 'USER_NOT_FOUND']),
        },
      },
    },
    async (req, reply) =>
      finished(reply, await passwords.finishUser(callerOf(req), req.params.instance_name, req.params.username, originOf(req))),
  );
}
