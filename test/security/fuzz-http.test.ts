import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyJson, anyString, render } from './helpers/fuzz-arbitraries.js';
import { FuzzWorld, type Seeds, changes, expectSaneAnswer, fuzzParameters } from './helpers/fuzz-world.js';
import { sendRaw } from './helpers/raw-socket.js';

/** Path segments that have fooled routers, decoders and file servers. */
const ODD_SEGMENTS = [
  '..',
  '.',
  '%2e%2e',
  '%2E%2e',
  '%2e',
  '..%2f',
  '%2f',
  '%2F..%2F',
  '%252e%252e',
  '%00',
  'a%00b',
  '%0a',
  '%0d%0a',
  '%20',
  '+',
  '%ff',
  '%fe%ff',
  '%c0%ae',
  '%e2%80%ae',
  '%zz',
  '%',
  '%1',
  '~',
  '*',
  ';',
  ';jsessionid=1',
  '%3b',
  '%3f',
  '%23',
  '@',
  ':',
  '$',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'null',
  'undefined',
  'NaN',
  '0',
  '-1',
  '1e400',
  'ffffffffffffffffffffffff',
  '',
  'x'.repeat(512),
  'x'.repeat(513),
  'x'.repeat(5000),
  '%2e%2e%2f%2e%2e%2fmetrics',
  'ghost',
  'acls',
  'users',
  'databases',
] as const;

/** The API's path templates; `{}` is filled with an odd segment or a seed. */
const TEMPLATES = [
  '/v2/instances/{}/',
  '/v2/instances/{}',
  '/v2/instances/{}/rename/',
  '/v2/instances/{}/acls/',
  '/v2/instances/{}/acls/{}/',
  '/v2/redis/{}/connectedSlaves/',
  '/v2/redis/{}/spaceUsage/',
  '/v2/redis/{}/maxMemoryPolicy/',
  '/v2/redis/{}/maxClients/',
  '/v2/redis/{}/resize/',
  '/v2/mongodb/{}/databases/{}/users',
  '/v2/mongodb/{}/databases/{}/users/{}',
  '/v2/tokens/{}',
  '/v2/events/{}',
  '/v2/{}',
  '/{}',
  '/{}/{}/{}',
  '/docs/{}',
  '/docs/static/{}/{}',
  '/v2/instances/{}/backups/',
  '/v2/instances/{}/backups/{}/',
  '/v2/instances/{}/backups/{}/download',
  '/v2/instances/{}/restore/',
  '/v2/instances/{}/restores/',
  '/v2/instances/{}/backup-policy/',
  '/v2/instances/',
  '/v2/events/',
  '/v2/tokens/',
  '/v2/tokens/verify/',
  '/v2/openapi.json',
  '/healthz',
  '/readyz',
  '/metrics',
  '/docs',
] as const;

type Segment = { readonly seed: keyof Seeds } | { readonly raw: string };

const segment: fc.Arbitrary<Segment> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom<Segment>({ seed: 'redis' }, { seed: 'mongoId' }, { seed: 'es' }, { seed: 'aclId' }, { seed: 'user' }),
  },
  { weight: 4, arbitrary: fc.constantFrom(...ODD_SEGMENTS).map((raw): Segment => ({ raw })) },
  { weight: 2, arbitrary: anyString.map((s): Segment => ({ raw: percentEncoded(s.slice(0, 600)) })) },
);

/** Every byte of the UTF-8 form outside the unreserved set, percent-encoded (lone surrogates too). */
function percentEncoded(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`))
    .join('');
}

const SEED_NAMES: Partial<Record<keyof Seeds, string>> = { redis: 'fz-redis', es: 'fz-es', user: 'seed-user' };

function fill(template: string, segments: readonly Segment[], seeds: Seeds): string {
  let i = 0;
  return template.replace(/\{\}/g, () => {
    const s = segments[i++ % segments.length]!;
    return 'raw' in s ? s.raw : (SEED_NAMES[s.seed] ?? seeds[s.seed]);
  });
}

const METHODS = [
  'GET',
  'GET',
  'POST',
  'DELETE',
  'PATCH',
  'PUT',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'SEARCH',
  'PROPFIND',
  'LOCK',
  'PURGE',
  'BREW',
  'get',
  'M-SEARCH',
] as const;

/** Headers a client may send, some of them odd (node's client refuses what is not HTTP at all). */
const header: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.constantFrom<[string, string]>(
    ['accept', 'text/html'],
    ['accept', '*/*;q=0.1, application/xml'],
    ['accept-encoding', 'gzip, br'],
    ['content-encoding', 'gzip'],
    ['content-type', 'application/json'],
    ['content-type', 'text/plain'],
    ['x-forwarded-for', '10.0.0.1, 127.0.0.1'],
    ['x-real-ip', '10.0.0.9'],
    ['forwarded', 'for=10.0.0.1'],
    ['x-http-method-override', 'DELETE'],
    ['x-request-id', '../../etc/passwd'],
    ['x-request-id', 'a'.repeat(200)],
    ['range', 'bytes=0-0,5-1,-9999999999999999999'],
    ['if-none-match', '*'],
    ['if-modified-since', 'not a date'],
    ['expect', '100-continue'],
    ['connection', 'close'],
    ['connection', 'upgrade'],
    ['upgrade', 'h2c'],
    ['upgrade', 'websocket'],
    ['te', 'trailers'],
    ['origin', 'https://evil.example'],
    ['authorization', 'Basic'],
    ['authorization', 'Basic !!!!'],
    ['authorization', 'Bearer x'],
    ['authorization', `Basic ${Buffer.from(':').toString('base64')}`],
    ['authorization', `Basic ${Buffer.from('\u0000:\u0000').toString('base64')}`],
    ['authorization', `Basic ${'A'.repeat(8000)}`],
    ['x-auth-token', ''],
    ['x-auth-token', 'x'.repeat(600)],
    ['x-auth-token', '__proto__'],
    ['cookie', 'token=x'],
    ['host', 'evil.example'],
    ['content-length', '0'],
    ['transfer-encoding', 'chunked'],
    ['accept-version', '9.9.9'],
    ['x-content-type-options', 'none'],
  ),
  fc.tuple(
    fc.constantFrom('x-request-id', 'x-auth-token', 'authorization', 'accept', 'content-type', 'x-fuzz'),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 64 }),
  ),
);

/**
 * Odd paths, methods and headers at every route: `..`, `%2e%2e`, `%00`, invalid percent-encoding,
 * very long segments, unknown methods, duplicate and contradictory headers. Every answer is sane
 * and a refused request changes nothing.
 */
describe('odd paths, methods and headers', () => {
  let w: FuzzWorld;
  let before: string;
  beforeAll(async () => {
    w = await FuzzWorld.start();
    before = w.snapshot();
  }, 60_000);
  afterAll(() => w?.close());

  async function judge(
    method: string,
    path: string,
    res: { status: number; headers: Record<string, unknown>; text: string; json: any },
  ): Promise<void> {
    expectSaneAnswer(res, { head: method === 'HEAD' || res.status === 0 });
    const after = w.snapshot();
    if (res.status >= 400) {
      expect(changes(before, after), `a refused ${method} ${path} (${res.status} ${res.json?.code}) changed the store`).toEqual([]);
    } else if (!['GET', 'HEAD'].includes(method.toUpperCase())) {
      await w.reset();
      before = w.snapshot();
      return;
    }
    before = after;
  }

  it('paths and methods: 1500 cases', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TEMPLATES),
        fc.array(segment, { minLength: 1, maxLength: 3 }),
        fc.constantFrom(...METHODS),
        fc.option(
          fc.constantFrom(
            '?limit=1',
            '?limit=0',
            '?limit=99999',
            '?limit=-1&before=x',
            '?limit=1&limit=2',
            '?__proto__[a]=1',
            '?a=%zz',
            `?${'q'.repeat(3000)}=1`,
          ),
          { nil: '' },
        ),
        fc.boolean(),
        async (template, segments, method, query, authenticated) => {
          const path = fill(template, segments, w.seeds) + query;
          const res = await w.send(method, path, { headers: authenticated ? { 'x-auth-token': w.token } : {} });
          await judge(method, path, res);
        },
      ),
      fuzzParameters(1500),
    );
    expect((await w.send('GET', '/healthz')).status).toBe(200);
  });

  it('headers: 600 cases', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          'GET /v2/instances/',
          'GET /v2/instances/fz-redis/',
          'POST /v2/instances/fz-redis/acls/',
          'GET /v2/tokens/',
          'POST /v2/tokens/verify/',
          'DELETE /v2/instances/ghost/',
          'GET /docs/static/index.css',
        ),
        fc.array(header, { maxLength: 6 }),
        fc.boolean(),
        fc.option(anyJson.map(render), { nil: undefined }),
        async (route, headers, authenticated, body) => {
          const [method, path] = route.split(' ') as [string, string];
          const h: Record<string, string> = authenticated ? { 'x-auth-token': w.token } : {};
          for (const [k, v] of headers) h[k] = k in h ? `${h[k]}, ${v}` : v;
          if (h['transfer-encoding']) delete h['content-length'];
          const res = await w
            .send(method, path, { headers: h, ...(body === undefined || method === 'GET' ? {} : { body }) })
            .catch((err: Error) => ({ status: -1, headers: {}, text: err.message, json: undefined }));
          // node's client itself may refuse to send a combination; that is not the server's doing
          if (res.status === -1) return;
          await judge(method, path, res);
        },
      ),
      fuzzParameters(600),
    );
  });

  it('bytes that are not HTTP, or not UTF-8: 600 cases', async () => {
    const token = () => w.token;
    const rawRequest = fc.oneof(
      // a request line with any bytes in the path, and any header bytes
      fc
        .tuple(
          fc.constantFrom('GET', 'POST', 'get', 'G E T', 'GET\t', '', 'PRI', 'CONNECT'),
          fc.uint8Array({ maxLength: 40 }),
          fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 extra', '', 'http/1.1'),
          fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 12 }), fc.uint8Array({ maxLength: 24 })), { maxLength: 4 }),
        )
        .map(([m, path, version, headers]) =>
          Buffer.concat([
            Buffer.from(`${m} /v2/instances/`),
            Buffer.from(path),
            Buffer.from(` ${version}\r\nHost: x\r\nX-Auth-Token: ${token()}\r\n`),
            ...headers.map(([k, v]) => Buffer.concat([Buffer.from(k), Buffer.from(': '), Buffer.from(v), Buffer.from('\r\n')])),
            Buffer.from('\r\n'),
          ]),
        ),
      // a JSON body with bytes that are not UTF-8 in it
      fc
        .tuple(
          fc.constantFrom('/v2/instances/', '/v2/instances/fz-redis/acls/', '/v2/instances/fz-redis/rename/', '/v2/tokens/verify/'),
          fc.uint8Array({ minLength: 1, maxLength: 16 }).filter((b) => !isUtf8(b)),
        )
        .map(([path, bad]) => {
          const body = Buffer.concat([
            Buffer.from('{"name": "x'),
            Buffer.from(bad),
            Buffer.from('", "cidr_mask": "192.0.2.99", "description": "'),
            Buffer.from(bad),
            Buffer.from('", "token": "t"}'),
          ]);
          return Buffer.concat([
            Buffer.from(
              `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
            ),
            body,
          ]);
        }),
      // framing tricks: bare LF, obs-fold, duplicate or negative lengths, chunked junk, nothing at all
      fc
        .constantFrom(
          'GET /v2/instances/ HTTP/1.1\nHost: x\n\n',
          'GET /v2/instances/ HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
          'POST /v2/tokens/verify/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\n{}\r\n0\r\nTrailer: x\r\n\r\n',
          'GET /v2/instances/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n',
          '\r\n\r\nGET /v2/instances/ HTTP/1.1\r\nHost: x\r\n\r\n',
          'GET\r\n\r\n',
          `GET / HTTP/1.1\r\n${'X-A: b\r\n'.repeat(3000)}\r\n`,
          '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03',
          'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
        )
        .map((t) => Buffer.from(t, 'latin1')),
    );
    await fc.assert(
      fc.asyncProperty(rawRequest, async (bytes) => {
        const res = await sendRaw(w.url, bytes);
        // Every request, however broken, gets an answer before the connection closes.
        expect(res.status, `no answer to ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`).toBeGreaterThan(0);
        expectSaneAnswer(res);
        const after = w.snapshot();
        if (res.status >= 400) expect(changes(before, after)).toEqual([]);
        before = after;
      }),
      fuzzParameters(600),
    );
    expect((await w.send('GET', '/v2/instances/', { headers: { 'x-auth-token': w.token } })).status).toBe(200);
  });
});
