import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysOf, redisBody } from '../helpers/bodies.js';
import { accounts } from '../helpers/accounts.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// Failed logins are limited per source address; these tests fail many logins on purpose.
const ENV = { HANGAR_LOGIN_FAILURE_LIMIT: '1000', HANGAR_LOGIN_SOURCE_FAILURE_LIMIT: '1000' };

const UNAUTHORIZED = { message: expect.any(String), code: 'UNAUTHORIZED' };

describe.each(DIALECTS)('authentication on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let keys: { user_key: string; pass_key: string };

  beforeAll(async () => {
    th = await startTestHangar({ dialect, env: ENV });
    alice = await th.signup();
    await alice.post('/v2/instances/', redisBody('mine'));
    keys = await accounts(th.hangar).createApiKey(alice.login);
  });
  afterAll(() => th.close());

  const basic = (user: string, secret: string) => new Client(th.target, { basic: [user, secret] });
  const token = (t: string) => new Client(th.target, { token: t });
  const names = async (c: Client) => (await c.get('/v2/instances/')).body.data.map((r: any) => r.name);

  describe('GET /v2/tokens/', () => {
    it('200: HTTP Basic login:password gives {"data": {"token"}}, not cached, usable in X-Auth-Token', async () => {
      const res = await basic(alice.login, PASSWORD).get('/v2/tokens/');
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(['data']);
      expect(keysOf(res.body.data)).toEqual(['token']);
      expect(res.body.data.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await names(token(res.body.data.token))).toEqual(['mine']);
    });

    it('200: an API key pair (user_key:pass_key) gives a token of the same account', async () => {
      const res = await basic(keys.user_key, keys.pass_key).get('/v2/tokens/');
      expect(res.status).toBe(200);
      expect(await names(token(res.body.data.token))).toEqual(['mine']);
    });

    it('200: as the python client asks: Content-Type application/json, empty body; with or without the trailing slash', async () => {
      const c = basic(alice.login, PASSWORD);
      expect((await c.get('/v2/tokens/', { headers: { 'content-type': 'application/json' } })).status).toBe(200);
      expect((await c.get('/v2/tokens')).status).toBe(200);
    });

    it('200: every login gives a new token; earlier ones stay valid', async () => {
      const a = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      const b = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      expect(a).not.toBe(b);
      expect((await token(a).get('/v2/instances/')).status).toBe(200);
      expect((await token(b).get('/v2/instances/')).status).toBe(200);
    });

    describe('401 {"message", "code"}', () => {
      it.each<[string, () => Client]>([
        ['a wrong password', () => basic(alice.login, 'wrong-password-1')],
        ['an unknown login', () => basic('nobody@example.com', PASSWORD)],
        ['a key pair with a wrong pass_key', () => basic(keys.user_key, 'f'.repeat(48))],
        ['a pass_key given as the password of the login', () => basic(alice.login, keys.pass_key)],
        ['no credentials', () => th.anonymous()],
        ['a token instead of Basic', () => token(alice.auth && 'token' in alice.auth ? alice.auth.token : '')],
      ])('%s', async (_what, client) => {
        const res = await client().get('/v2/tokens/');
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      });

      it.each([['Basic !!!'], [`Basic ${Buffer.from('no-colon').toString('base64')}`], ['Bearer abc'], ['Basic']])(
        'a malformed Authorization header %j',
        async (header) => {
          const res = await th.anonymous().get('/v2/tokens/', { headers: { authorization: header } });
          expect(res.status).toBe(401);
          expect(res.body).toEqual(UNAUTHORIZED);
        },
      );

      it('a deleted API key pair', async () => {
        // (A pair the server verified in the last few seconds stays trusted that long: its cache.)
        const k = await accounts(th.hangar).createApiKey(alice.login);
        await accounts(th.hangar).deleteApiKey(alice.login, k.user_key);
        const res = await basic(k.user_key, k.pass_key).get('/v2/tokens/');
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED);
      });
    });
  });

  describe('other endpoints', () => {
    it('200: X-Auth-Token, HTTP Basic login:password and HTTP Basic key pair all authenticate', async () => {
      expect(await names(alice)).toEqual(['mine']);
      expect(await names(basic(alice.login, PASSWORD))).toEqual(['mine']);
      expect(await names(basic(keys.user_key, keys.pass_key))).toEqual(['mine']);
    });

    it.each<[string, Record<string, string>]>([
      ['no credentials', {}],
      ['an unknown token', { 'x-auth-token': 'not-a-token' }],
      ['an empty token', { 'x-auth-token': '' }],
      ['a very long token', { 'x-auth-token': 'x'.repeat(2000) }],
      ['a wrong password', { authorization: `Basic ${Buffer.from(`${'x'}:y`).toString('base64')}` }],
    ])('401: %s, with nothing of the account in the body', async (_what, headers) => {
      const res = await th.anonymous().get('/v2/instances/', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    });

    it('401 on a change, and nothing changes', async () => {
      const res = await token('not-a-token').post('/v2/instances/', redisBody('forged'));
      expect(res.status).toBe(401);
      expect(await names(alice)).not.toContain('forged');
    });
  });

  describe('POST /v2/tokens/verify/', () => {
    it('200 without X-Auth-Token: whose token it is, and nothing secret', async () => {
      const t = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      const res = await th.anonymous().post('/v2/tokens/verify/', { token: t });
      expect(res.status).toBe(200);
      expect(keysOf(res.body.data)).toEqual(['account_id', 'created', 'login', 'token_expires']);
      expect(res.body.data).toMatchObject({ login: alice.login, account_id: expect.stringMatching(/^[0-9a-f]{24}$/) });
      expect(res.body.data.created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      // The default lifetime is 24 h.
      const expires = Date.parse(`${res.body.data.token_expires.replace(' ', 'T')}Z`);
      expect(Math.abs(expires - (Date.now() + 86_400_000))).toBeLessThan(60_000);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(t);
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain('scrypt');
    });

    it('200 without the trailing slash', async () => {
      const t = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      expect((await th.anonymous().post('/v2/tokens/verify', { token: t })).body.data.login).toBe(alice.login);
    });

    it('401: an unknown token', async () => {
      const res = await th.anonymous().post('/v2/tokens/verify/', { token: 'not-a-token' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    });

    it.each<[unknown, string]>([
      [{}, 'token'],
      [{ token: 5 }, 'token'],
      [{ token: 'x', login: 'y' }, 'login'],
    ])('400: a body %j', async (body, field) => {
      const res = await th.anonymous().post('/v2/tokens/verify/', body);
      expect(res.status).toBe(400);
      expect(res.body.field).toBe(field);
    });
  });

  describe('DELETE /v2/tokens/', () => {
    it('200: revokes the token in use, and only that one', async () => {
      const t1 = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      const t2 = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
      expect((await token(t1).get('/v2/instances/')).status).toBe(200);
      // as the python client sends a DELETE: Content-Type application/json and no body
      const res = await token(t1).delete('/v2/tokens/', { headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: {} });
      const revoked = await token(t1).get('/v2/instances/');
      expect(revoked.status).toBe(401);
      expect(revoked.body.message).toMatch(
        /^the token was revoked at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC: log in again at GET \/v2\/tokens\/$/,
      );
      expect((await th.anonymous().post('/v2/tokens/verify/', { token: t1 })).status).toBe(401);
      expect((await token(t2).get('/v2/instances/')).status).toBe(200);
    });

    it('400: with Basic credentials there is no token to revoke', async () => {
      const res = await basic(alice.login, PASSWORD).delete('/v2/tokens/');
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_BODY');
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().delete('/v2/tokens/')).body).toEqual(UNAUTHORIZED);
    });
  });

  it('the store keeps scrypt hashes of passwords and key secrets, and hashes of tokens', async () => {
    const db = th.hangar.store.db;
    const account = await db.selectFrom('accounts').selectAll().where('login', '=', alice.login).executeTakeFirstOrThrow();
    expect(account.password_hash).toMatch(/^scrypt\$/);
    expect(account.password_hash).not.toContain(PASSWORD);
    const key = await db.selectFrom('api_keys').selectAll().where('user_key', '=', keys.user_key).executeTakeFirstOrThrow();
    expect(key.secret_hash).toMatch(/^scrypt\$/);
    expect(key.secret_hash).not.toContain(keys.pass_key);
    const t = (await basic(alice.login, PASSWORD).get('/v2/tokens/')).body.data.token;
    const rows = await db.selectFrom('tokens').select('token_hash').execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(r.token_hash).not.toBe(t);
    }
  });
});

describe.each(DIALECTS)('token lifetime on %s', (dialect) => {
  let th: TestHangar;
  beforeAll(async () => {
    th = await startTestHangar({ dialect, env: { ...ENV, HANGAR_TOKEN_TTL: '1' } });
  });
  afterAll(() => th.close());

  it('401 once a token is past HANGAR_TOKEN_TTL, on the API and on verify; a new login works', async () => {
    const alice = await th.signup();
    const t = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
    const verified = await th.anonymous().post('/v2/tokens/verify/', { token: t });
    const expires = Date.parse(`${verified.body.data.token_expires.replace(' ', 'T')}Z`);
    expect(expires - Date.now()).toBeLessThanOrEqual(1000);
    await new Promise((r) => setTimeout(r, Math.max(0, expires + 1100 - Date.now())));
    const res = await alice.get('/v2/instances/');
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
    // it says when the token expired
    const when = `${verified.body.data.token_expires} UTC`;
    expect(res.body.message).toBe(`the token expired at ${when}: log in again at GET /v2/tokens/`);
    const verify = await th.anonymous().post('/v2/tokens/verify/', { token: t });
    expect(verify.status).toBe(401);
    expect(verify.body.message).toContain(`expired at ${when}`);
    // a token never issued is unknown
    expect((await new Client(th.target, { token: 'f'.repeat(64) }).get('/v2/instances/')).body.message).toBe(
      'the token is unknown, expired or revoked: log in again at GET /v2/tokens/',
    );
    const again = await new Client(th.target, { basic: [alice.login, alice.password] }).get('/v2/tokens/');
    expect((await new Client(th.target, { token: again.body.data.token }).get('/v2/instances/')).status).toBe(200);
  });
});
