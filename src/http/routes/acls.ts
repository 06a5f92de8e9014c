import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, answerStarted, callerOf, originOf } from '../context.js';
import { ACL_CHANGE_HEADERS, OPERATION_HEADERS } from '../schemas/operations.js';
import { AclCreateBody, AclParams, AclRecord, AclRecordExtended, AclReplaceBody, IfMatchHeaders } from '../schemas/acls.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { ACL, ACL_EXTENDED } from '../schemas/examples.js';
import { aclRecord, aclRecordExtended } from '../serializers.js';

export function aclRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { acls } = deps.services;
  const tags = ['acls'];

  app.get(
    '/instances/:instance_name/acls/',
    {
      schema: {
        summary: "An instance's ACLs",
        tags,
        params: NameParams,
        response: { 200: Data(Type.Array(AclRecord), [ACL]), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req, reply) => {
      const { instance, acls: list, etag } = await acls.list(callerOf(req), req.params.instance_name);
      void reply.header('etag', etag);
      return { data: list.map((a) => aclRecord(a, instance)) };
    },
  );

  app.put(
    '/instances/:instance_name/acls/',
    {
      config: { audit: 'acl.replace' },
      schema: {
        summary: 'Replace the whole list of ACLs at once (an addition to the ObjectRocket API)',
        description:
          'ACLs of the list that exist already (same range and flags) stay, with the description and expiry of the list; the others are added; those left out are removed, and their open connections closed. One transaction, and the edge gets the difference: no moment admits less than both lists share. With If-Match (the ETag of GET .../acls/), a list changed since is a 412. Answers the new list and its ETag.',
        tags,
        params: NameParams,
        headers: IfMatchHeaders,
        body: AclReplaceBody,
        response: {
          200: { ...Data(Type.Array(AclRecord), [ACL]), headers: ACL_CHANGE_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'ACL_EXISTS',
            'QUOTA_EXCEEDED',
            'INSTANCE_DELETING',
            'PRECONDITION_FAILED',
          ]),
        },
      },
    },
    async (req, reply) => {
      const ifMatch = req.headers['if-match'];
      const {
        instance,
        acls: list,
        etag,
      } = answerStarted(
        reply,
        await acls.replace(
          callerOf(req),
          req.params.instance_name,
          req.body,
          typeof ifMatch === 'string' ? ifMatch : undefined,
          originOf(req),
        ),
      );
      void reply.header('etag', etag);
      return { data: list.map((a) => aclRecord(a, instance)) };
    },
  );

  app.post(
    '/instances/:instance_name/acls/',
    {
      config: { audit: 'acl.create', bodyChecks: (body) => acls.bodyProblems(body) },
      schema: {
        summary: 'Admit an address or range at the edge',
        description:
          'Answers once the edge enforces the ACL (or after a short wait; the ACL is recorded either way and applied soon after).',
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: AclCreateBody,
        response: {
          200: { ...Data(Type.String({ description: 'The id of the new ACL' }), ACL._id.$oid), headers: ACL_CHANGE_HEADERS },
          ...errorResponses([
            ...WITH_PATH,
            ...WITH_BODY,
            ...IDEMPOTENT,
            'INVALID_VALUE',
            'INSTANCE_NOT_FOUND',
            'ACL_EXISTS',
            'QUOTA_EXCEEDED',
            'INSTANCE_DELETING',
          ]),
        },
      },
    },
    async (req, reply) => ({
      data: answerStarted(reply, await acls.create(callerOf(req), req.params.instance_name, req.body, originOf(req))),
    }),
  );

  app.get(
    '/instances/:instance_name/acls/:acl_id/',
    {
      schema: {
        summary: 'One ACL, extended form',
        tags,
        params: AclParams,
        response: { 200: Data(AclRecordExtended, ACL_EXTENDED), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'ACL_NOT_FOUND']) },
      },
    },
    async (req) => {
      const { instance, acl } = await acls.get(callerOf(req), req.params.instance_name, req.params.acl_id);
      return { data: aclRecordExtended(acl, instance) };
    },
  );

  app.delete(
    '/instances/:instance_name/acls/:acl_id/',
    {
      config: { audit: 'acl.delete' },
      schema: {
        summary: "Stop admitting the ACL's sources, and close their open connections",
        tags,
        params: AclParams,
        response: {
          200: { ...Data(Type.Object({}, { description: 'Empty' }), {}), headers: OPERATION_HEADERS },
          ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND', 'ACL_NOT_FOUND']),
        },
      },
    },
    async (req, reply) => {
      answerStarted(reply, await acls.delete(callerOf(req), req.params.instance_name, req.params.acl_id, originOf(req)));
      return { data: {} };
    },
  );
}
