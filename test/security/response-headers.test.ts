import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { type Account, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { type HttpReply, httpRequest } from './helpers/http.js';

/**
 * The headers of every answer of every endpoint, successes and failures alike: X-Request-Id,
 * `X-Content-Type-Options: nosniff`, no X-Powered-By or Server, the caller's X-RateLimit-*
 * on every /v2 answer, and `Cache-Control: no-store` on every answer that carries a token.
 */
describe('response headers', () => {
  let th: TestHangar;
  let alice: Account;
  let token: string;
  const calls: [string, string, string, unknown?][] = [];

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    token = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
    await alice.ready(redisBody('r'));
    const m = await alice.ready(mongoBody('m'));
    const acl = (await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.1', description: 'x' })).body.data;
    await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'u', password: 'password-1', roles: [] });
    const users = `/v2/mongodb/${m.id}/databases/app/users`;
    calls.push(
      ['200', 'GET', '/v2/instances/'],
      ['200', 'GET', '/v2/instances/r/'],
      ['200', 'GET', '/v2/instances/r/acls/'],
      ['200', 'GET', `/v2/instances/r/acls/${acl}/`],
      ['200', 'GET', '/v2/redis/r/connectedSlaves/'],
      ['200', 'GET', '/v2/redis/r/spaceUsage/'],
      ['200', 'GET', '/v2/redis/r/maxMemoryPolicy/'],
      ['200', 'GET', '/v2/redis/r/maxClients/'],
      ['200', 'GET', users],
      ['200', 'PATCH', `${users}/u`, { roles: [] }],
      ['200', 'GET', '/v2/events/'],
      ['200', 'POST', '/v2/instances/r/acls/', { cidr_mask: '192.0.2.2', description: 'y' }],
      ['200', 'POST', '/v2/instances/', redisBody('other')],
      ['400', 'POST', '/v2/instances/', redisBody('bad', { plan: 3 })],
      ['400', 'POST', '/v2/redis/r/resize/', { new_plan: 'big' }],
      ['404', 'GET', '/v2/instances/ghost/'],
      ['404', 'DELETE', `${users}/ghost`],
      ['409', 'POST', '/v2/instances/', redisBody('r')],
      ['415', 'POST', '/v2/instances/r/rename/', 'text'],
      ['413', 'POST', '/v2/instances/r/acls/', { cidr_mask: '192.0.2.3', description: 'x'.repeat(70_000) }],
      ['414', 'GET', `/v2/instances/${'x'.repeat(600)}/`],
      ['400', 'GET', '/v2/instances/%zz/'],
      ['200', 'DELETE', `/v2/instances/r/acls/${acl}/`],
      ['200', 'POST', '/v2/instances/other/rename/', { name: 'other-2' }],
      ['200', 'DELETE', '/v2/instances/other-2/'],
    );
  });
  afterAll(() => th.close());

  const send = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = { 'x-auth-token': token },
  ): Promise<HttpReply> =>
    httpRequest(th.url, method, path, {
      headers: {
        ...headers,
        ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });

  const expectCommon = (res: HttpReply, what: string) => {
    expect(res.headers['x-request-id'], what).toMatch(/.+/);
    expect(res.headers['x-content-type-options'], what).toBe('nosniff');
    expect(res.headers['x-powered-by'], what).toBeUndefined();
    expect(res.headers.server, what).toBeUndefined();
  };

  it('every endpoint, answering a success or an error: request id, nosniff, no X-Powered-By, the rate limit', async () => {
    for (const [status, method, path, body] of calls) {
      const res = await send(method, path, body);
      const what = `${method} ${path.slice(0, 60)}`;
      expect(`${what} ${res.status}`).toBe(`${what} ${status}`);
      expectCommon(res, what);
      // the router's own refusals (414, bad percent-encoding) come before authentication
      if (!['414'].includes(status) && !path.includes('%zz')) {
        expect(res.headers['x-ratelimit-limit'], what).toBe('6000');
        expect(Number(res.headers['x-ratelimit-remaining']), what).toBeGreaterThan(0);
        expect(Number(res.headers['x-ratelimit-reset']), what).toBeGreaterThan(Date.now() / 1000 - 1);
      }
    }
  });

  it('401s carry them too, counted against the source address', async () => {
    const res = await send('GET', '/v2/instances/', undefined, {});
    expect(res.status).toBe(401);
    expectCommon(res, '401');
    expect(res.headers['x-ratelimit-limit']).toBe('6000');
  });

  it('outside /v2 (health, metrics, docs, unknown routes): request id, nosniff, no X-Powered-By', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/docs', '/nope']) expectCommon(await send('GET', path, undefined, {}), path);
  });

  it('Cache-Control: no-store on every answer that carries a token: login, verify, logout', async () => {
    const login = await httpRequest(th.url, 'GET', '/v2/tokens/', { basic: [alice.login, PASSWORD] });
    expect(login.status).toBe(200);
    expect(login.headers['cache-control']).toBe('no-store');
    const fresh = login.json.data.token as string;
    const verify = await send('POST', '/v2/tokens/verify/', { token: fresh }, {});
    expect(verify.status).toBe(200);
    expect(verify.headers['cache-control']).toBe('no-store');
    const logout = await send('DELETE', '/v2/tokens/', undefined, { 'x-auth-token': fresh });
    expect(logout.status).toBe(200);
    expect(logout.headers['cache-control']).toBe('no-store');
  });
});
