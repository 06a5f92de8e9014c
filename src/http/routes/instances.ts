import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { ACL_CHANGE_HEADERS, OPERATION_HEADERS } from '../schemas/operations.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { CREATED_REDIS_INSTANCE, ELASTICSEARCH_INSTANCE, MONGODB_INSTANCE, REDIS_INSTANCE } from '../schemas/examples.js';
import { CreateInstanceBody, CreationRecord, InstanceRecord, RenameBody } from '../schemas/instances.js';
import { RenderedRecords } from '../rendered-records.js';
import { creationRecord, instanceRecord } from '../serializers.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function instanceRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { instances } = deps.services;
  const host = deps.config.advertiseHost;
  const tags = ['instances'];
  // Lists and records are rendered once per change of the account's instances, not per request.
  const rendered = new RenderedRecords();

  app.get(
    '/instances/',
    {
      schema: {
        summary: "The account's instances",
        tags,
        response: {
          200: Data(Type.Array(InstanceRecord), [REDIS_INSTANCE, MONGODB_INSTANCE, ELASTICSEARCH_INSTANCE]),
          ...errorResponses([]),
        },
      },
    },
    async (req, reply) => {
      const caller = callerOf(req);
      const key = `${caller.accountId}/`;
      const version = await instances.recordsVersion(caller);
      let body = rendered.get(key, version);
      if (body === undefined) {
        const list = await instances.list(caller);
        body = JSON.stringify({ data: list.map((i) => instanceRecord(i, host)) });
        rendered.set(key, version, body);
      }
      // A string with a JSON content type is sent as it is (the serializer is for objects).
      return reply.type(JSON_TYPE).send(body as never);
    },
  );

  app.post(
    '/instances/',
    {
      config: { audit: 'instance.create', bodyChecks: (body) => instances.createProblems(body) },
      schema: {
        summary: 'Create an instance',
        description:
          'Answers at once with the creation record in state REQUESTED; the instance then goes BUILDING and ACTIVE (COMPLETED for elasticsearch), or FAILED with a `state_reason`. Follow it at `GET /v2/operations/{X-Operation-Id}/`, on `GET /v2/events/stream`, or by polling `GET /v2/instances/{instance_name}/`.',
        tags,
        headers: IdempotencyHeaders,
        body: CreateInstanceBody,
        response: {
          200: { ...Data(CreationRecord, CREATED_REDIS_INSTANCE), headers: ACL_CHANGE_HEADERS },
          ...errorResponses([
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'NAME_TAKEN',
            'QUOTA_EXCEEDED',
            'SERVICE_UNAVAILABLE_HERE',
            'CAPACITY_EXHAUSTED',
          ]),
        },
      },
    },
    async (req, reply) => {
      const inst = answerStarted(reply, await instances.create(callerOf(req), req.body, originOf(req)));
      return { data: creationRecord(inst, host) };
    },
  );

  app.get(
    '/instances/:instance_name/',
    {
      schema: {
        summary: 'One instance',
        tags,
        params: NameParams,
        response: { 200: Data(InstanceRecord, REDIS_INSTANCE), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req, reply) => {
      const caller = callerOf(req);
      const key = `${caller.accountId}/${req.params.instance_name}`;
      const version = await instances.recordsVersion(caller);
      let body = rendered.get(key, version);
      if (body === undefined) {
        const inst = await instances.get(caller, req.params.instance_name);
        body = JSON.stringify({ data: instanceRecord(inst, host) });
        rendered.set(key, version, body);
      }
      return reply.type(JSON_TYPE).send(body as never);
    },
  );

  app.delete(
    '/instances/:instance_name/',
    {
      config: { audit: 'instance.delete' },
      schema: {
        summary: 'Delete an instance: its engines, listeners, data, ACLs and users',
        description: 'The instance turns DELETING at once and disappears (404) once it is torn down.',
        tags,
        params: NameParams,
        response: {
          200: {
            ...Data(Type.String({ description: 'Confirmation naming the instance' }), 'Instance "cache" is being deleted'),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'INSTANCE_DELETING']),
        },
      },
    },
    async (req, reply) => ({ data: answerStarted(reply, await instances.delete(callerOf(req), req.params.instance_name, originOf(req))) }),
  );

  app.post(
    '/instances/:instance_name/rename/',
    {
      config: { audit: 'instance.rename' },
      schema: {
        summary: 'Rename an instance; ACLs and users stay with it',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: RenameBody,
        response: {
          200: {
            ...Data(Type.String({ description: 'Confirmation naming the old and the new name' }), 'Instance "cache" renamed to "sessions"'),
            headers: OPERATION_HEADERS,
          },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'NAME_TAKEN',
            'INSTANCE_DELETING',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await instances.rename(callerOf(req), req.params.instance_name, req.body.name, originOf(req))),
    }),
  );
}
