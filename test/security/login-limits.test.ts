import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { type HttpReply, httpRequest } from './helpers/http.js';

/** A 429 as the issue promises it: Retry-After in seconds, the same number in the message, {message, code} only. */
function expect429(res: HttpReply, code: string): number {
  expect({ status: res.status, code: res.json?.code }).toEqual({ status: 429, code });
  expect(Object.keys(res.json).sort()).toEqual(['code', 'message']);
  const retry = Number(res.headers['retry-after']);
  expect(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${res.headers['retry-after']}`).toBe(true);
  expect(res.json.message).toMatch(new RegExp(`try again in (${retry}|${retry - 1}|${retry + 1}) s`));
  return retry;
}

describe('failed logins are limited per (login, source address), and per source address with a larger budget', () => {
  let th: TestHangar;
  const login = (user: string, secret: string, from: string, path = '/v2/tokens/', headers: Record<string, string> = {}) =>
    httpRequest(th.url, 'GET', path, { basic: [user, secret], localAddress: from, headers });

  beforeAll(async () => {
    th = await startTestHangar({ listen: true, env: { HANGAR_LOGIN_FAILURE_LIMIT: '3', HANGAR_LOGIN_SOURCE_FAILURE_LIMIT: '6' } });
  });
  afterAll(() => th.close());

  it('per login and source: past the limit, 429 with Retry-After and a message, the right password too, on every route; not from elsewhere', async () => {
    const alice = await th.signup();
    for (let i = 0; i < 3; i++) expect((await login(alice.login, 'wrong-password', '127.0.0.21')).status).toBe(401);
    expect429(await login(alice.login, PASSWORD, '127.0.0.21'), 'TOO_MANY_LOGIN_FAILURES');
    expect429(await login(alice.login, PASSWORD, '127.0.0.21', '/v2/instances/'), 'TOO_MANY_LOGIN_FAILURES');
    expect429(await login(alice.login, 'wrong-password', '127.0.0.21'), 'TOO_MANY_LOGIN_FAILURES');
    // a token issued before keeps working: it is no login
    expect((await alice.get('/v2/instances/')).status).toBe(200);
    // the same login from another address is not held back: failures from one place cannot lock an account out
    expect((await login(alice.login, PASSWORD, '127.0.0.22')).status).toBe(200);
    // nor another login behind the same address (an office, a NAT)
    const bob = await th.signup();
    expect((await login(bob.login, PASSWORD, '127.0.0.21')).status).toBe(200);
  });

  it('failures of one login spread over addresses are counted per address', async () => {
    const frank = await th.signup();
    for (const from of ['127.0.0.71', '127.0.0.72', '127.0.0.73'])
      expect((await login(frank.login, 'wrong-password', from)).status).toBe(401);
    expect((await login(frank.login, PASSWORD, '127.0.0.74')).status).toBe(200);
  });

  it('per source address: failures on many logins hold back every login from that address past the larger budget, not from others', async () => {
    const carol = await th.signup();
    for (let i = 1; i <= 6; i++) expect((await login(`nobody-${i}@example.com`, 'whatever-password', '127.0.0.31')).status).toBe(401);
    expect429(await login(carol.login, PASSWORD, '127.0.0.31'), 'TOO_MANY_LOGIN_FAILURES');
    // the address is the connection's: X-Forwarded-For and friends change nothing
    expect429(
      await login(carol.login, PASSWORD, '127.0.0.31', '/v2/tokens/', {
        'x-forwarded-for': '203.0.113.9',
        'x-real-ip': '203.0.113.9',
        forwarded: 'for=203.0.113.9',
      }),
      'TOO_MANY_LOGIN_FAILURES',
    );
    expect((await login(carol.login, PASSWORD, '127.0.0.32')).status).toBe(200);
  });

  it('counts failures only: successful logins never add up to a limit', async () => {
    const dave = await th.signup();
    for (let i = 0; i < 8; i++) expect((await login(dave.login, PASSWORD, '127.0.0.41')).status).toBe(200);
    expect((await login(dave.login, 'wrong-password', '127.0.0.41')).status).toBe(401);
    expect((await login(dave.login, PASSWORD, '127.0.0.41')).status).toBe(200);
  });

  it('API key pairs are logins too: a key id is held back from the source like a login', async () => {
    const erin = await th.signup();
    const { accounts } = await import('../helpers/accounts.js');
    const key = await accounts(th.hangar).createApiKey(erin.login);
    for (let i = 0; i < 3; i++) expect((await login(key.user_key, 'f'.repeat(48), '127.0.0.51')).status).toBe(401);
    expect429(await login(key.user_key, key.pass_key, '127.0.0.51'), 'TOO_MANY_LOGIN_FAILURES');
    expect((await login(key.user_key, key.pass_key, '127.0.0.52')).status).toBe(200);
  });
});

describe('requests are limited per account (HANGAR_RATE_LIMIT) and, before authentication, per source address', () => {
  let th: TestHangar;
  const LIMIT = 15;
  beforeAll(async () => {
    th = await startTestHangar({ listen: true, env: { HANGAR_RATE_LIMIT: String(LIMIT) } });
  });
  afterAll(() => th.close());

  const token = (a: Account) => (a.auth && 'token' in a.auth ? a.auth.token : '');

  it('X-RateLimit-* count down on every answer; past the limit, 429 RATE_LIMITED with Retry-After and a message', async () => {
    const alice = await th.signup(); // its login spent one request
    const t = token(alice);
    const seen: number[] = [];
    for (let i = 1; i < LIMIT; i++) {
      // successes and failures count alike
      const res = await httpRequest(th.url, 'GET', i % 2 ? '/v2/instances/' : '/v2/instances/ghost/', { headers: { 'x-auth-token': t } });
      expect(res.status).toBe(i % 2 ? 200 : 404);
      expect(res.headers['x-ratelimit-limit']).toBe(String(LIMIT));
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
      expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
      seen.push(Number(res.headers['x-ratelimit-remaining']));
    }
    expect(seen).toEqual(Array.from({ length: LIMIT - 1 }, (_, i) => LIMIT - 2 - i));
    const over = await httpRequest(th.url, 'GET', '/v2/instances/', { headers: { 'x-auth-token': t } });
    expect429(over, 'RATE_LIMITED');
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    // a change is refused too, and nothing is created
    expect429(
      await httpRequest(th.url, 'POST', '/v2/instances/', {
        headers: { 'x-auth-token': t, 'content-type': 'application/json' },
        body: '{"name":"x"}',
      }),
      'RATE_LIMITED',
    );
    // another account has a budget of its own
    const bob = await th.signup();
    expect((await bob.get('/v2/instances/')).status).toBe(200);
    expect(await th.hangar.store.db.selectFrom('instances').select('id').execute()).toEqual([]);
  });

  it('unauthenticated requests spend the budget of their source address', async () => {
    for (let i = 0; i < LIMIT; i++)
      expect((await httpRequest(th.url, 'GET', '/v2/instances/', { localAddress: '127.0.0.61' })).status).toBe(401);
    expect429(
      await httpRequest(th.url, 'POST', '/v2/tokens/verify/', {
        localAddress: '127.0.0.61',
        headers: { 'content-type': 'application/json' },
        body: '{"token":"x"}',
      }),
      'RATE_LIMITED',
    );
    expect((await httpRequest(th.url, 'GET', '/v2/instances/', { localAddress: '127.0.0.62' })).status).toBe(401);
  });
});
