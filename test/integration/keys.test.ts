import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startTestHangar } from '../helpers/hangar.js';

const KEY_KEYS = ['_id', 'created', 'date_created', 'id', 'last_used', 'user_key'];

describe.each(DIALECTS)('API keys of the caller on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect });
    alice = await th.signup();
    bob = await th.signup();
  });
  afterAll(() => th.close());

  describe('POST /v2/keys/', () => {
    it('200: a new pair, the pass key in this answer only, not cached; it logs in with HTTP Basic', async () => {
      const before = Date.now();
      const res = await alice.post('/v2/keys/');
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const key = res.body.data;
      expect(Object.keys(key).sort()).toEqual([...KEY_KEYS, 'pass_key'].sort());
      expect(key.id).toMatch(/^[0-9a-f]{24}$/);
      expect(key._id).toEqual({ $oid: key.id });
      expect(key.user_key).toMatch(/^[0-9a-f]{32}$/);
      expect(key.pass_key).toMatch(/^[0-9a-f]{48}$/);
      expect(key.date_created.$date).toBeGreaterThanOrEqual(before - 1000);
      expect(key.last_used).toBeNull();
      const login = await new Client(th.target, { basic: [key.user_key, key.pass_key] }).get('/v2/tokens/');
      expect(login.status).toBe(200);
      const who = await new Client(th.target, { token: login.body.data.token }).get('/v2/whoami/');
      expect(who.body.data.login).toBe(alice.login);
    });

    it('200 with an empty JSON object as body', async () => {
      expect((await alice.post('/v2/keys/', {})).status).toBe(200);
    });

    it('400: a body with fields', async () => {
      const res = await alice.post('/v2/keys/', { description: 'ci' });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_BODY');
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().post('/v2/keys/')).status).toBe(401);
    });
  });

  describe('GET /v2/keys/', () => {
    it("200: the caller's pairs, oldest first, never a secret; another account's are not listed", async () => {
      const carol = await th.signup();
      const first = (await carol.post('/v2/keys/')).body.data;
      const second = (await carol.post('/v2/keys/')).body.data;
      await bob.post('/v2/keys/');
      const res = await carol.get('/v2/keys/');
      expect(res.status).toBe(200);
      expect(res.body.data.map((k: any) => k.id)).toEqual([first.id, second.id]);
      for (const k of res.body.data) expect(Object.keys(k).sort()).toEqual(KEY_KEYS);
      expect(JSON.stringify(res.body)).not.toContain(first.pass_key);
    });

    it('200: last_used is set once the pair has logged in', async () => {
      const dave = await th.signup();
      const key = (await dave.post('/v2/keys/')).body.data;
      await new Client(th.target, { basic: [key.user_key, key.pass_key] }).get('/v2/tokens/');
      const listed = (await dave.get('/v2/keys/')).body.data.find((k: any) => k.id === key.id);
      expect(listed.last_used).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    });

    it('401: with a revoked token', async () => {
      const erin = await th.signup();
      await erin.delete('/v2/tokens/');
      expect((await erin.get('/v2/keys/')).status).toBe(401);
    });
  });

  describe('DELETE /v2/keys/<id>/', () => {
    it('200: the pair no longer logs in and is no longer listed; the change is in the audit log', async () => {
      const key = (await alice.post('/v2/keys/')).body.data;
      const res = await alice.delete(`/v2/keys/${key.id}/`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: {} });
      expect((await new Client(th.target, { basic: [key.user_key, key.pass_key] }).get('/v2/tokens/')).status).toBe(401);
      expect((await alice.get('/v2/keys/')).body.data.map((k: any) => k.id)).not.toContain(key.id);
      const events = (await alice.get('/v2/events/?limit=20')).body.data;
      expect(events.find((e: any) => e.action === 'key.delete')).toMatchObject({
        target: `key:${key.id}`,
        outcome: 'success',
        status: 200,
      });
      expect(events.some((e: any) => e.action === 'key.create')).toBe(true);
    });

    it("404: another account's pair, with the same answer as a missing one; the pair still works", async () => {
      const key = (await alice.post('/v2/keys/')).body.data;
      const foreign = await bob.delete(`/v2/keys/${key.id}/`);
      const missing = await bob.delete('/v2/keys/0123456789abcdef01234567/');
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ message: `account "${bob.login}" has no key ${key.id}`, code: 'API_KEY_NOT_FOUND' });
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('API_KEY_NOT_FOUND');
      expect((await new Client(th.target, { basic: [key.user_key, key.pass_key] }).get('/v2/tokens/')).status).toBe(200);
    });

    it('404: twice', async () => {
      const key = (await alice.post('/v2/keys/')).body.data;
      expect((await alice.delete(`/v2/keys/${key.id}/`)).status).toBe(200);
      expect((await alice.delete(`/v2/keys/${key.id}/`)).status).toBe(404);
    });
  });
});

describe('GET /v2/whoami/', () => {
  let th: TestHangar;
  beforeAll(async () => {
    th = await startTestHangar();
  });
  afterAll(() => th.close());

  it('200: the account, the token expiry and the source address hangar sees', async () => {
    const alice = await th.signup();
    const res = await alice.get('/v2/whoami/');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      login: alice.login,
      account_id: expect.stringMatching(/^[0-9a-f]{24}$/),
      source_ip: '127.0.0.1',
      token_expires: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    });
  });

  it('200 with HTTP Basic: no token, no expiry', async () => {
    const alice = await th.signup();
    const res = await new Client(th.target, { basic: [alice.login, alice.password] }).get('/v2/whoami/');
    expect(res.body.data).toMatchObject({ login: alice.login, token_expires: null });
  });

  it('401: without credentials', async () => {
    expect((await th.anonymous().get('/v2/whoami/')).status).toBe(401);
  });
});
