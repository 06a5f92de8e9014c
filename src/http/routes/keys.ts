import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { formatCreated } from '../../lib/time.js';
import type { ApiKeyInfo } from '../../service/accounts.js';
import { errors } from '../../domain/errors.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { IDEMPOTENT, WITH_BODY, WITH_PATH, errorResponses } from '../schemas/error-responses.js';
import { ApiKeyRecord, CREATED_KEY_EXAMPLE, CreatedApiKey, KEY_EXAMPLE, KeyParams } from '../schemas/keys.js';

function keyRecord(k: ApiKeyInfo) {
  return {
    _id: { $oid: k.id },
    id: k.id,
    user_key: k.userKey,
    created: formatCreated(k.createdAt),
    date_created: { $date: k.createdAt },
    last_used: k.lastUsedAt === null ? null : formatCreated(k.lastUsedAt),
  };
}

/**
 * `/v2/keys/`: the caller's own API key pairs (an addition to the spec; operators have
 * `hangar keys`). A pair logs in with HTTP Basic `user_key:pass_key`; its secret is shown once.
 */
export function keyRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { accounts } = deps.services;
  const tags = ['keys'];

  app.get(
    '/keys/',
    {
      schema: {
        summary: "The account's API key pairs, oldest first, without their secrets",
        tags,
        response: { 200: Data(Type.Array(ApiKeyRecord), [KEY_EXAMPLE]), ...errorResponses([]) },
      },
    },
    async (req) => ({ data: (await accounts.listOwnApiKeys(callerOf(req))).map(keyRecord) }),
  );

  app.post(
    '/keys/',
    {
      config: { audit: 'key.create' },
      schema: {
        summary: 'Create an API key pair; the answer is the only time its pass_key is shown',
        description: 'Takes no body (or `{}`). Log in with the pair as HTTP Basic `user_key:pass_key` at `GET /v2/tokens/`.',
        tags,
        response: { 200: Data(CreatedApiKey, CREATED_KEY_EXAMPLE), ...errorResponses([...WITH_BODY, ...IDEMPOTENT, 'QUOTA_EXCEEDED']) },
      },
    },
    async (req) => {
      const body = req.body as unknown;
      if (body !== undefined && body !== null && !(typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)) {
        throw errors.invalidBody('this request takes no body (or {})');
      }
      const key = await accounts.createOwnApiKey(callerOf(req));
      return { data: { ...keyRecord(key), pass_key: key.passKey } };
    },
  );

  app.delete(
    '/keys/:key_id/',
    {
      config: { audit: 'key.delete' },
      schema: {
        summary: 'Delete an API key pair: it no longer logs in (tokens it gave stay valid until they expire)',
        tags,
        params: KeyParams,
        response: { 200: Data(Type.Object({}, { description: 'Empty' }), {}), ...errorResponses([...WITH_PATH, 'API_KEY_NOT_FOUND']) },
      },
    },
    async (req) => {
      await accounts.deleteOwnApiKey(callerOf(req), req.params.key_id);
      return { data: {} };
    },
  );
}
