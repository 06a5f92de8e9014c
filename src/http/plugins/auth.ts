import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService, AuthenticatedCaller } from '../../service/accounts.js';
import { errors } from '../../domain/errors.js';
import type { LoginGuard, RateLimiter } from '../../service/limits.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller?: AuthenticatedCaller;
    /** The user named in HTTP Basic credentials, when the request sent some (for the audit log). */
    loginAttempt?: { user: string; failed: boolean };
  }
  interface FastifyContextConfig {
    /** `token` (default): X-Auth-Token or Basic; `basic`: Basic only (login); `none`. */
    auth?: 'token' | 'basic' | 'none';
  }
}

export interface AuthDeps {
  readonly accounts: AccountService;
  readonly loginGuard: LoginGuard;
  readonly rateLimiter: RateLimiter;
}

function parseBasic(header: string | undefined): { user: string; secret: string } | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return undefined;
  return { user: decoded.slice(0, i), secret: decoded.slice(i + 1) };
}

/**
 * Authentication of the /v2 context, as the ObjectRocket clients do it: a token from
 * `GET /v2/tokens/` in `X-Auth-Token`, or HTTP Basic with login:password or user_key:pass_key.
 * Failed Basic logins count against the login from its source address, and against the source
 * (see LoginGuard). Every response carries
 * the caller's request budget in X-RateLimit-* headers.
 */
export function registerAuth(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('caller', undefined);
  app.decorateRequest('loginAttempt', undefined);
  // A callback hook: a token verified in the last seconds is found without waiting on anything
  // (no promise per request); others are verified against the store.
  app.addHook('onRequest', (req, reply, done) => {
    const mode = req.routeOptions.config.auth ?? 'token';
    if (mode === 'none') {
      done(limited(req, reply, `a:${req.ip}`));
      return;
    }
    const token = req.headers['x-auth-token'];
    const known = mode === 'token' && typeof token === 'string' ? deps.accounts.cachedTokenCaller(token) : undefined;
    if (known) {
      req.caller = known;
      done(limited(req, reply, `c:${known.accountId}`));
      return;
    }
    authenticate(req, mode, deps).then(
      (caller) => {
        req.caller = caller;
        done(limited(req, reply, `c:${caller.accountId}`));
      },
      (err: unknown) => done(limited(req, reply, `a:${req.ip}`) ?? (err as Error)),
    );
  });

  /** Takes one from the key's budget: the 429 to answer when it is spent, else undefined. */
  function limited(req: FastifyRequest, reply: FastifyReply, key: string): Error | undefined {
    try {
      limit(req, reply, key);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  }

  function limit(_req: FastifyRequest, reply: FastifyReply, key: string): void {
    const s = deps.rateLimiter.take(key);
    void reply.header('x-ratelimit-limit', s.limit).header('x-ratelimit-remaining', s.remaining).header('x-ratelimit-reset', s.reset);
    if (s.exceeded) throw errors.rateLimited(s.retryAfterSeconds);
  }
}

async function authenticate(req: FastifyRequest, mode: 'token' | 'basic', deps: AuthDeps): Promise<AuthenticatedCaller> {
  const token = req.headers['x-auth-token'];
  if (mode === 'token' && typeof token === 'string') {
    const caller = await deps.accounts.verifyToken(token);
    if (!caller) throw await deps.accounts.tokenRefusal(token);
    return caller;
  }
  const basic = parseBasic(req.headers.authorization);
  if (!basic) {
    throw errors.unauthorized(
      mode === 'basic'
        ? 'log in with HTTP Basic: your login and password, or an API key pair (user_key:pass_key)'
        : 'send X-Auth-Token (from GET /v2/tokens/) or HTTP Basic credentials',
    );
  }
  const attempt = { user: basic.user, failed: true };
  req.loginAttempt = attempt;
  // Checked before the password: while the limit holds, the right password is refused too.
  deps.loginGuard.check(basic.user, req.ip);
  const caller = await deps.accounts.verifyBasic(basic.user, basic.secret);
  if (!caller) {
    deps.loginGuard.failed(basic.user, req.ip);
    throw errors.unauthorized('wrong login or password');
  }
  attempt.failed = false;
  deps.loginGuard.succeeded(basic.user, req.ip);
  return caller;
}
