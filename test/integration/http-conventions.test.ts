import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysOf, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { rawRequest } from '../helpers/raw-http.js';

const ERROR_KEYS = ['allowed', 'code', 'errors', 'field', 'message'];

/** An error as clients must always see it: JSON, `message` and `code`, nothing else of the server. */
function expectErrorBody(res: { headers: Record<string, unknown>; text: string; json: any }, status: number, code: string): void {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json).toMatchObject({ message: expect.any(String), code });
  for (const k of Object.keys(res.json)) expect(ERROR_KEYS).toContain(k);
  expect(res.text).not.toMatch(/<html|<!doctype|\n\s+at |node_modules|\.ts:\d+/i);
  void status;
}

describe.each(DIALECTS)('HTTP conventions on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let token: string;
  let m: any;
  let aclId: string;

  const raw = (method: string, path: string, opts: { headers?: Record<string, string>; body?: string | Buffer } = {}) =>
    rawRequest(th.url, method, path, { ...opts, headers: { 'x-auth-token': token, ...opts.headers } });

  beforeAll(async () => {
    th = await startTestHangar({ listen: true, dialect });
    alice = await th.signup();
    token = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
    await alice.ready(redisBody('r'));
    m = await alice.ready(mongoBody('m', 'mongodb_singledb'));
    aclId = (await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.1', description: 'x' })).body.data;
    await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'u', password: 'password-1', roles: [] });
  });
  afterAll(() => th.close());

  describe('paths with and without the trailing slash', () => {
    it.each([
      ['/v2/instances/', '/v2/instances'],
      ['/v2/instances/r/', '/v2/instances/r'],
      ['/v2/instances/r/acls/', '/v2/instances/r/acls'],
      ['/v2/redis/r/maxClients/', '/v2/redis/r/maxClients'],
      ['/v2/redis/r/connectedSlaves/', '/v2/redis/r/connectedSlaves'],
      ['/v2/mongodb/m/databases/app/users', '/v2/mongodb/m/databases/app/users/'],
    ])('GET %s and %s answer the same', async (a, b) => {
      const x = await raw('GET', a);
      const y = await raw('GET', b);
      expect(x.status).toBe(200);
      expect(y.status).toBe(200);
      expect(y.json).toEqual(x.json);
    });

    it('an ACL by id, both ways', async () => {
      expect((await raw('GET', `/v2/instances/r/acls/${aclId}`)).json).toEqual((await raw('GET', `/v2/instances/r/acls/${aclId}/`)).json);
    });

    it('POST without the slash: create (as the Go SDK sends it), rename, ACL, resize', async () => {
      const json = { 'content-type': 'application/json' };
      expect((await raw('POST', '/v2/instances', { headers: json, body: JSON.stringify(redisBody('noslash')) })).status).toBe(200);
      expect((await raw('POST', '/v2/instances/noslash/rename', { headers: json, body: '{"name":"noslash-2"}' })).status).toBe(200);
      expect(
        (await raw('POST', '/v2/instances/noslash-2/acls', { headers: json, body: '{"cidr_mask":"192.0.2.9","description":"x"}' })).status,
      ).toBe(200);
      await alice.waitFor('noslash-2', (r) => r?.state === 'ACTIVE');
      expect((await raw('POST', '/v2/redis/noslash-2/resize', { headers: json, body: '{"new_plan":1000}' })).status).toBe(200);
    });

    it('PATCH and DELETE of a user with the slash', async () => {
      const json = { 'content-type': 'application/json' };
      await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'slash', password: 'password-1', roles: [] });
      expect((await raw('PATCH', `/v2/mongodb/${m.id}/databases/app/users/slash/`, { headers: json, body: '{"roles":[]}' })).status).toBe(
        200,
      );
      expect((await raw('DELETE', `/v2/mongodb/${m.id}/databases/app/users/slash/`)).status).toBe(200);
    });
  });

  describe('request bodies', () => {
    it('200: a JSON body with no Content-Type at all and a trailing newline (the Go SDK)', async () => {
      const res = await raw('POST', '/v2/instances', { body: `${JSON.stringify(redisBody('go-sdk'))}\n` });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({ name: 'go-sdk', state: 'REQUESTED' });
    });

    it.each([[''], [' ']])('200: a JSON body with an empty Content-Type header (%j) is taken as one without', async (type) => {
      const res = await raw('POST', '/v2/instances/', {
        headers: { 'content-type': type },
        body: JSON.stringify(redisBody(`empty-type-${type.length}`)),
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json.data).toMatchObject({ name: `empty-type-${type.length}`, state: 'REQUESTED' });
      const invalid = await raw('POST', '/v2/instances/r/rename/', { headers: { 'content-type': type }, body: '{"name": ' });
      expect(invalid.status).toBe(400);
      expect(invalid.json).toMatchObject({ code: 'INVALID_BODY', message: 'the body is not valid JSON' });
    });

    it('200: an empty body on a GET, with or without Content-Type: application/json', async () => {
      expect((await raw('GET', '/v2/instances/', { body: '' })).status).toBe(200);
      expect((await raw('GET', '/v2/instances/', { headers: { 'content-type': 'application/json' }, body: '' })).status).toBe(200);
    });

    it('200: Content-Type with a charset', async () => {
      const res = await raw('POST', '/v2/instances/', {
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify(redisBody('charset')),
      });
      expect(res.status).toBe(200);
    });

    it.each([
      ['an instance', async () => (await alice.post('/v2/instances/', redisBody('empty-del'))) && '/v2/instances/empty-del/'],
      [
        'an ACL',
        async () =>
          `/v2/instances/r/acls/${(await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.200', description: 'x' })).body.data}/`,
      ],
      [
        'a user',
        async () =>
          (await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'empty-del', password: 'password-1', roles: [] })) &&
          `/v2/mongodb/${m.id}/databases/app/users/empty-del`,
      ],
    ])('200: DELETE of %s with Content-Type: application/json and an empty body (the python client)', async (_what, path) => {
      const res = await raw('DELETE', await path(), { headers: { 'content-type': 'application/json' }, body: '' });
      expect(res.status).toBe(200);
      expect(keysOf(res.json)).toEqual(['data']);
    });

    it.each([['/v2/instances/'], ['/v2/redis/r/resize/'], ['/v2/instances/r/acls/'], ['/v2/instances/r/rename/']])(
      '400: a body-less POST %s with Content-Type: application/json says the body is missing',
      async (path) => {
        const res = await raw('POST', path, { headers: { 'content-type': 'application/json' }, body: '' });
        expect(res.status).toBe(400);
        expectErrorBody(res, 400, 'INVALID_BODY');
      },
    );

    it.each([['{"name": '], ['{name: "x"}'], ["{'a': 1}"], ['{"a":1}}']])('400: invalid JSON %s', async (body) => {
      const res = await raw('POST', '/v2/instances/', { headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(400);
      expectErrorBody(res, 400, 'INVALID_BODY');
      expect(res.json.message).toBe('the body is not valid JSON');
    });

    it.each([
      [`{"__proto__": {"admin": true}, ${JSON.stringify(redisBody('proto')).slice(1)}`, '__proto__', '__proto__'],
      [
        `{"constructor": {"prototype": {"admin": true}}, ${JSON.stringify(redisBody('proto')).slice(1)}`,
        'constructor.prototype',
        'constructor.prototype',
      ],
      ['{"acls": [{"__proto__": {}, "cidr_mask": "1.2.3.4", "description": "x"}], "name": "proto"}', '__proto__', 'acls[0].__proto__'],
    ])('400: a refused key, named with where it is and why, and nothing is created: %s', async (body, key, path) => {
      const res = await raw('POST', '/v2/instances/', { headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(400);
      expectErrorBody(res, 400, 'INVALID_BODY');
      // valid JSON: the answer does not say otherwise, and names the key
      expect(res.json.message).not.toContain('not valid JSON');
      expect(res.json.message).toContain(`the body is valid JSON, but its key "${key}" (at ${path}) is refused`);
      expect(res.json.message).toContain('prototype pollution');
      expect(res.json.field).toBe(path);
      expect((await alice.get('/v2/instances/proto/')).status).toBe(404);
    });

    it.each([
      ['text/plain'],
      ['application/x-www-form-urlencoded'],
      ['multipart/form-data; boundary=x'],
      ['application/xml'],
      ['application/jsonx'],
    ])('415: a declared Content-Type %s, and nothing is created', async (type) => {
      const res = await raw('POST', '/v2/instances/', { headers: { 'content-type': type }, body: JSON.stringify(redisBody('typed')) });
      expect(res.status).toBe(415);
      expectErrorBody(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(res.json.message).toBe(`the body was sent as "${type}"; send it as JSON (Content-Type: application/json, or none)`);
      expect((await alice.get('/v2/instances/typed/')).status).toBe(404);
    });

    it('413: a body over 64 KiB, and nothing is created', async () => {
      const body = JSON.stringify(redisBody('huge', { acls: [{ cidr_mask: '192.0.2.1', description: 'x'.repeat(65 * 1024) }] }));
      const res = await raw('POST', '/v2/instances/', { headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(413);
      expectErrorBody(res, 413, 'BODY_TOO_LARGE');
      expect((await alice.get('/v2/instances/huge/')).status).toBe(404);
    });

    it('413 without a Content-Type too; a body just under the limit is read (and judged on its content)', async () => {
      const over = JSON.stringify({ cidr_mask: '192.0.2.2', description: 'x'.repeat(64 * 1024) });
      expect((await raw('POST', '/v2/instances/r/acls/', { body: over })).status).toBe(413);
      const under = JSON.stringify({ cidr_mask: '192.0.2.2', description: 'x'.repeat(60 * 1024) });
      const res = await raw('POST', '/v2/instances/r/acls/', { headers: { 'content-type': 'application/json' }, body: under });
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ code: 'INVALID_VALUE', field: 'description' });
    });
  });

  describe('responses', () => {
    it('success is exactly 200 with {"data"} on every endpoint; the user PATCH with {"message"}', async () => {
      await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'sweep', password: 'password-1', roles: [] });
      await alice.post('/v2/instances/', redisBody('sweep'));
      await alice.waitFor('sweep', (r) => r?.state === 'ACTIVE');
      const sweepAcl = (await alice.post('/v2/instances/sweep/acls/', { cidr_mask: '192.0.2.77', description: 'x' })).body.data;
      const calls: [string, string, unknown, string][] = [
        ['GET', '/v2/instances/', undefined, 'data'],
        ['GET', '/v2/instances/sweep/', undefined, 'data'],
        ['GET', '/v2/instances/sweep/acls/', undefined, 'data'],
        ['GET', `/v2/instances/sweep/acls/${sweepAcl}/`, undefined, 'data'],
        ['GET', '/v2/redis/sweep/connectedSlaves/', undefined, 'data'],
        ['GET', '/v2/redis/sweep/spaceUsage/', undefined, 'data'],
        ['GET', '/v2/redis/sweep/maxMemoryPolicy/', undefined, 'data'],
        ['GET', '/v2/redis/sweep/maxClients/', undefined, 'data'],
        ['GET', `/v2/mongodb/${m.id}/databases/app/users`, undefined, 'data'],
        ['PATCH', `/v2/mongodb/${m.id}/databases/app/users/sweep`, { roles: [] }, 'message'],
        ['DELETE', `/v2/mongodb/${m.id}/databases/app/users/sweep`, undefined, 'data'],
        ['DELETE', `/v2/instances/sweep/acls/${sweepAcl}/`, undefined, 'data'],
        ['POST', '/v2/redis/sweep/resize/', { new_plan: 1000 }, 'data'],
        ['POST', '/v2/instances/sweep/rename/', { name: 'sweep-2' }, 'data'],
        ['DELETE', '/v2/instances/sweep-2/', undefined, 'data'],
      ];
      for (const [method, path, body, key] of calls) {
        const res = await alice.request(method, path, body === undefined ? {} : { body });
        expect({ method, path, status: res.status }).toEqual({ method, path, status: 200 });
        expect(keysOf(res.body)).toEqual([key]);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      }
    });

    it('every response carries a request id; a sane one sent by the client is kept', async () => {
      expect((await raw('GET', '/v2/instances/')).headers['x-request-id']).toMatch(/.+/);
      expect((await raw('GET', '/v2/instances/', { headers: { 'x-request-id': 'trace-123' } })).headers['x-request-id']).toBe('trace-123');
    });
  });

  describe('unknown routes', () => {
    it.each([
      ['GET', '/v2/nope'],
      ['GET', '/v2/instances/r/nope/'],
      ['GET', '/nope'],
      ['POST', '/v2/nope/'],
      ['GET', '/v2/redis/r/flushall/'],
      ['GET', '/v1/instance/'],
    ])('404 JSON: %s %s', async (method, path) => {
      const res = await raw(method, path);
      expect(res.status).toBe(404);
      expectErrorBody(res, 404, 'ROUTE_NOT_FOUND');
      expect(res.headers.allow).toBeUndefined();
    });

    it.each([
      ['POST', '/v2/tokens/', 'GET, HEAD, DELETE'],
      ['PUT', '/v2/instances/', 'GET, HEAD, POST'],
      ['PUT', '/v2/instances', 'GET, HEAD, POST'],
      ['PATCH', '/v2/instances/r/', 'GET, HEAD, DELETE'],
      ['POST', '/v2/redis/r/maxClients/', 'GET, HEAD'],
      ['DELETE', '/v2/instances/r/acls/', 'GET, HEAD, POST, PUT'],
      ['OPTIONS', '/v2/whoami/', 'GET, HEAD'],
    ])('405 with Allow: %s %s, a path that takes other methods', async (method, path, allow) => {
      const res = await raw(method, path);
      expect(res.status).toBe(405);
      expectErrorBody(res, 405, 'METHOD_NOT_ALLOWED');
      expect(res.headers.allow).toBe(allow);
      expect(res.json.message).toBe(`${path} does not take ${method}; it takes ${allow}`);
    });

    it('405, not 401, without credentials: which methods a path takes is no secret (the OpenAPI document lists them)', async () => {
      const res = await rawRequest(th.url, 'POST', '/v2/tokens/');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD, DELETE');
    });

    it('404, not 401, without credentials', async () => {
      const res = await rawRequest(th.url, 'GET', '/v2/nope/');
      expect(res.status).toBe(404);
      expectErrorBody(res, 404, 'ROUTE_NOT_FOUND');
    });
  });

  it('health: /healthz and /readyz answer 200 without credentials', async () => {
    expect((await rawRequest(th.url, 'GET', '/healthz')).status).toBe(200);
    expect((await rawRequest(th.url, 'GET', '/readyz')).status).toBe(200);
  });
});

describe('failures inside hangar', () => {
  it('are JSON {"message", "code"} with no stack trace or driver text when the store is gone', async () => {
    const th = await startTestHangar({ listen: true });
    try {
      const alice = await th.signup();
      const token = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
      await th.hangar.reconciler.stop();
      await th.hangar.store.db.destroy();
      const res = await rawRequest(th.url, 'GET', '/v2/instances/', { headers: { 'x-auth-token': token } });
      expect(res.status).toBe(500);
      expectErrorBody(res, 500, 'INTERNAL');
      expect(res.json.message).toBe(`internal error; request id ${res.headers['x-request-id']}`);
      expect(res.text).not.toMatch(/destroyed|sqlite|kysely/i);
    } finally {
      await th.close().catch(() => {});
    }
  });
});
