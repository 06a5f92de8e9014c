import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { formatCreated } from '../../lib/time.js';
import { hashToken } from '../../lib/passwords.js';
import { errors } from '../../domain/errors.js';
import { type AppDeps, callerOf } from '../context.js';
import { Data } from '../schemas/common.js';
import { WITH_BODY, errorResponses } from '../schemas/error-responses.js';
import { TOKEN } from '../schemas/examples.js';
import { AccountInfo, TokenData, VerifyBody } from '../schemas/tokens.js';

const NO_STORE = 'no-store';

export function tokenRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { accounts } = deps.services;
  const tags = ['tokens'];

  app.get(
    '/tokens/',
    {
      config: { auth: 'basic', audit: 'token.create' },
      schema: {
        summary: 'Log in: HTTP Basic (login:password or user_key:pass_key) gives a token for X-Auth-Token',
        tags,
        response: { 200: Data(TokenData, { token: TOKEN }), ...errorResponses([]) },
      },
    },
    async (req, _reply) => {
      // no-store comes with the answer's schema (a token): see plugins/no-store.ts
      const { token } = await accounts.issueToken(callerOf(req));
      return { data: { token } };
    },
  );

  app.post(
    '/tokens/verify/',
    {
      config: { auth: 'none' },
      schema: {
        summary: 'Check a token and tell whose it is (no X-Auth-Token needed)',
        tags,
        body: VerifyBody,
        response: {
          200: Data(AccountInfo, {
            login: 'ops@example.com',
            account_id: '6560a1f2c3d4e5f607182920',
            created: '2026-11-20 08:00:00',
            token_expires: '2026-11-22 09:00:00',
          }),
          ...errorResponses([...WITH_BODY, 'UNAUTHORIZED', 'RATE_LIMITED', 'STORE_UNAVAILABLE'], { authenticated: false }),
        },
      },
    },
    async (req, reply) => {
      const caller = await accounts.verifyToken(req.body.token);
      if (!caller) throw await accounts.tokenRefusal(req.body.token);
      void reply.header('cache-control', NO_STORE);
      return {
        data: {
          login: caller.login,
          account_id: caller.accountId,
          created: formatCreated(caller.accountCreatedAt),
          token_expires: formatCreated(caller.tokenExpiresAt ?? 0),
        },
      };
    },
  );

  app.delete(
    '/tokens/',
    {
      config: { audit: 'token.revoke' },
      schema: {
        summary: 'Revoke the token in use (log out)',
        tags,
        response: { 200: Data(Type.Object({}, { description: 'Empty' }), {}), ...errorResponses(['INVALID_BODY']) },
      },
    },
    async (req, reply) => {
      const token = req.headers['x-auth-token'];
      if (typeof token !== 'string') throw errors.invalidBody('no token in use: send the token to revoke in X-Auth-Token');
      await accounts.revokeToken(hashToken(token));
      void reply.header('cache-control', NO_STORE);
      return { data: {} };
    },
  );
}
