import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { rawRequest } from '../helpers/raw-http.js';
import { sendRaw } from '../security/helpers/raw-socket.js';

/**
 * Failures found before any route runs (by the router, by node's HTTP parser, by the static
 * files of the docs page) are rendered like every other error: JSON {"message", "code"} (and
 * `errors` on a 400), with
 * X-Request-Id and nosniff, never the framework's own body.
 */
describe('errors outside the routes', () => {
  let th: TestHangar;
  let alice: Account;
  let token: string;
  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    token = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
  });
  afterAll(() => th.close());

  const expectOwnError = (
    res: { status: number; headers: Record<string, unknown>; json: any; text: string },
    status: number,
    code: string,
  ) => {
    // a 400 lists its problem in `errors` too, as every 400 does
    const listed = status === 400 ? { errors: [{ message: res.json?.message, code }] } : {};
    expect({ status: res.status, body: res.json }).toEqual({ status, body: { message: expect.any(String), code, ...listed } });
    expect(res.json.message.length).toBeGreaterThan(10);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toMatch(/.+/);
    expect(res.text).not.toMatch(/FST_|statusCode|"error"/);
  };

  describe('the router', () => {
    it.each([
      ['a path parameter over 512 characters', `/v2/instances/${'x'.repeat(600)}/`, 414, 'URI_TOO_LONG'],
      ['a path that is not valid percent-encoding', '/v2/instances/%zz/', 400, 'INVALID_PATH'],
      ['a path that decodes to bytes that are not UTF-8', '/v2/instances/%ff%fe/acls/', 400, 'INVALID_PATH'],
    ])('%s', async (_what, path, status, code) => {
      const res = await rawRequest(th.url, 'GET', path, { headers: { 'x-auth-token': token } });
      expectOwnError(res, status, code);
    });

    it('a path parameter of exactly 512 characters is an ordinary 404', async () => {
      const res = await rawRequest(th.url, 'GET', `/v2/instances/${'x'.repeat(512)}/`, { headers: { 'x-auth-token': token } });
      expect(res.status).toBe(404);
      expect(res.json.code).toBe('INSTANCE_NOT_FOUND');
    });
  });

  describe("node's HTTP parser: a JSON answer, then the connection is closed", () => {
    const get = (extra = '') => `GET /v2/instances/ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token}\r\n${extra}\r\n`;

    it.each([
      ['an unknown method', () => 'BREW /v2/instances/ HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a control character in a header value', () => get('X-Note: a\x01b\r\n')],
      ['a space in a header name', () => get('Bad Name: x\r\n')],
      [
        'two different Content-Lengths',
        () => 'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      ],
      [
        'Content-Length with Transfer-Encoding',
        () => 'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      ],
      ['a version that is not HTTP/1.x', () => 'GET /v2/instances/ HTTP/7.1\r\nHost: x\r\n\r\n'],
    ])('400 BAD_REQUEST: %s', async (_what, request) => {
      expectOwnError(await sendRaw(th.url, request()), 400, 'BAD_REQUEST');
    });

    it('431 HEADERS_TOO_LARGE: headers over 16 KiB', async () => {
      expectOwnError(await sendRaw(th.url, get(`X-Padding: ${'a'.repeat(17 * 1024)}\r\n`)), 431, 'HEADERS_TOO_LARGE');
    });

    it('431 HEADERS_TOO_LARGE: a URL over 16 KiB', async () => {
      expectOwnError(await sendRaw(th.url, `GET /v2/${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431, 'HEADERS_TOO_LARGE');
    });

    it('405 METHOD_NOT_ALLOWED: CONNECT', async () => {
      expectOwnError(await sendRaw(th.url, 'CONNECT 127.0.0.1:6379 HTTP/1.1\r\nHost: 127.0.0.1:6379\r\n\r\n'), 405, 'METHOD_NOT_ALLOWED');
    });

    it('the server keeps serving other connections afterwards', async () => {
      const res = await sendRaw(th.url, get());
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: [] });
    });
  });

  it('a request without Host gets the API answer, not an empty 400', async () => {
    const res = await sendRaw(th.url, `GET /v2/instances/ HTTP/1.1\r\nX-Auth-Token: ${token}\r\n\r\n`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [] });
  });

  it('400 INVALID_BODY: a body that is not UTF-8, and nothing is created', async () => {
    const body = Buffer.concat([
      Buffer.from('{"name": "caf'),
      Buffer.from([0xe9]),
      Buffer.from('", "plan": 500, "service": "redis", "type": "redis_ha_instance", "version": "7.0.15", "zone": "US-Dallas"}'),
    ]);
    const res = await rawRequest(th.url, 'POST', '/v2/instances/', {
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      message: 'the body is not valid UTF-8',
      code: 'INVALID_BODY',
      errors: [{ message: 'the body is not valid UTF-8', code: 'INVALID_BODY' }],
    });
    expect((await alice.get('/v2/instances/')).body.data).toEqual([]);
  });

  it('403 FORBIDDEN: a path out of the docs assets', async () => {
    // (sent as bytes: a URL parser would resolve the dots before sending)
    for (const path of ['/docs/static/../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json']) {
      expectOwnError(await sendRaw(th.url, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`), 403, 'FORBIDDEN');
    }
  });
});
