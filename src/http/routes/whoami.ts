import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { formatCreated } from '../../lib/time.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { errorResponses } from '../schemas/error-responses.js';
import { WHOAMI_EXAMPLE, WhoamiRecord } from '../schemas/keys.js';

/**
 * `GET /v2/whoami/`: the caller's account and the source address hangar sees (an addition to
 * the spec): the console's "add my address" ACL button uses it.
 */
export function whoamiRoutes(fastify: FastifyInstance, _deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/whoami/',
    {
      schema: {
        summary: 'Who is asking: the account, the token expiry, and the source address as hangar sees it',
        tags: ['tokens'],
        response: { 200: Data(WhoamiRecord, WHOAMI_EXAMPLE), ...errorResponses([]) },
      },
    },
    async (req) => {
      const caller = callerOf(req);
      return {
        data: {
          login: caller.login,
          account_id: caller.accountId,
          source_ip: req.ip,
          token_expires: caller.tokenExpiresAt === undefined ? null : formatCreated(caller.tokenExpiresAt),
        },
      };
    },
  );
}
