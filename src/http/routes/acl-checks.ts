import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type AppDeps, callerOf } from '../context.js';
import { AclCheckBody, AclCheckRecord, DeniedConnectionRecord, DeniedQuery, EffectiveAccessRecord } from '../schemas/acls.js';
import { Data, NameParams } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { IdempotencyHeaders } from '../plugins/idempotency.js';
import { ACL_CHECK, DENIED_CONNECTION, EFFECTIVE_ACCESS } from '../schemas/examples.js';
import { aclRecord, deniedRecord, effectiveRecord } from '../serializers.js';

/** Questions about an instance's ACLs: would an address get in, what the edge runs, who was refused. */
export function aclCheckRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { acls } = deps.services;
  const tags = ['acls'];

  app.post(
    '/instances/:instance_name/acls/check',
    {
      schema: {
        summary: 'Would this address be admitted, and by which ACL? (an addition to the ObjectRocket API)',
        description:
          "Answered from the ACLs in force (expired ones no longer count), as the edge judges a connection to the instance's client listeners. Changes nothing.",
        tags,
        params: NameParams,
        headers: IdempotencyHeaders,
        body: AclCheckBody,
        response: {
          200: Data(AclCheckRecord, ACL_CHECK, { ip: '192.0.2.1', admitted: false, acl: null }),
          ...errorResponses([...WITH_PATH, ...WITH_BODY, ...IDEMPOTENT, 'INVALID_VALUE', 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => {
      const check = await acls.check(callerOf(req), req.params.instance_name, req.body.ip);
      return { data: { ip: check.ip, admitted: check.admitted, acl: check.acl ? aclRecord(check.acl, check.instance) : null } };
    },
  );

  app.get(
    '/instances/:instance_name/acls/effective',
    {
      schema: {
        summary: 'The rules the edge enforces right now, against the store (an addition to the ObjectRocket API)',
        description:
          'Read from each enforcer itself (the local edge through its runtime API; on Kubernetes each edge pod and the NetworkPolicy), compared with the ACLs in force: `in_sync` false, with what is missing and extra, shows drift (the reconciler repairs it at its next pass).',
        tags,
        params: NameParams,
        response: { 200: Data(EffectiveAccessRecord, EFFECTIVE_ACCESS), ...errorResponses([...WITH_PATH, 'INSTANCE_NOT_FOUND']) },
      },
    },
    async (req) => ({ data: effectiveRecord(await acls.effective(callerOf(req), req.params.instance_name)) }),
  );

  app.get(
    '/instances/:instance_name/acls/denied',
    {
      schema: {
        summary: 'The last connections the edge refused, newest first (an addition to the ObjectRocket API)',
        description:
          'From the edge\'s log of refused connections, kept in memory (the last 100 per instance; gone when hangar or the edge restarts). /metrics counts them: hangar_edge_connections_total{outcome="refused"}.',
        tags,
        params: NameParams,
        querystring: DeniedQuery,
        response: {
          200: Data(Type.Array(DeniedConnectionRecord), [DENIED_CONNECTION]),
          ...errorResponses([...WITH_PATH, 'INVALID_VALUE', 'INVALID_BODY', 'INSTANCE_NOT_FOUND']),
        },
      },
    },
    async (req) => {
      const limit = Math.min(100, Math.max(1, Number(req.query.limit ?? 20)));
      return { data: (await acls.denied(callerOf(req), req.params.instance_name, limit)).map(deniedRecord) };
    },
  );
}
