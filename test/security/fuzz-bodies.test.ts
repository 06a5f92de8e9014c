import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { bodyFor, contentType } from './helpers/fuzz-arbitraries.js';
import { FuzzWorld, type Seeds, changes, expectSaneAnswer, fuzzParameters } from './helpers/fuzz-world.js';

interface BodyRoute {
  readonly method: string;
  readonly path: (s: Seeds) => string;
  /** The valid body mutations start from (most are refused only late: a name taken, an ACL that exists). */
  readonly valid: (s: Seeds, token: string) => unknown;
  readonly runs: number;
  /** The request revokes the token it carries: send a spare one. */
  readonly spendsToken?: boolean;
}

const ROUTES: readonly BodyRoute[] = [
  {
    method: 'POST',
    path: () => '/v2/instances/',
    valid: () => redisBody('fz-redis', { acls: [{ cidr_mask: '192.0.2.1', description: 'x' }] }),
    runs: 500,
  },
  {
    method: 'POST',
    path: () => '/v2/instances/',
    runs: 250,
    valid: () =>
      mongoBody('fz-mongo', 'mongodb_sharded', {
        encryption: true,
        storage_engine: 'wiredtiger',
        acls: [{ cidr_mask: '2001:db8::/32', description: 'v6' }],
      }),
  },
  {
    method: 'POST',
    path: () => '/v2/instances/',
    valid: () => esBody('fz-es', { encryption: false, acls: [{ cidr_mask: '192.0.2.0/24', description: 'x', transport: true }] }),
    runs: 250,
  },
  { method: 'POST', path: () => '/v2/instances/fz-redis/rename/', valid: () => ({ name: 'fz-mongo' }), runs: 250 },
  {
    method: 'POST',
    path: () => '/v2/instances/fz-redis/acls/',
    valid: () => ({ cidr_mask: '192.0.2.10', description: 'seed' }),
    runs: 300,
  },
  {
    method: 'POST',
    path: () => '/v2/instances/fz-es/acls/',
    valid: () => ({ cidr_mask: '192.0.2.11', description: 'x', transport: true, kibana: true }),
    runs: 200,
  },
  { method: 'POST', path: () => '/v2/redis/fz-redis/resize/', valid: () => ({ new_plan: 500 }), runs: 250 },
  {
    method: 'PUT',
    path: () => '/v2/instances/fz-redis/acls/',
    valid: () => [
      { cidr_mask: '192.0.2.10', description: 'seed' },
      { cidr_mask: '192.0.2.12', description: 'x', expires_at: '2099-01-01T00:00:00Z' },
    ],
    runs: 200,
  },
  { method: 'POST', path: () => '/v2/instances/fz-redis/acls/check', valid: () => ({ ip: '192.0.2.10' }), runs: 150 },
  {
    method: 'PATCH',
    path: () => '/v2/redis/fz-redis/config/',
    valid: () => ({ 'maxmemory-policy': 'allkeys-lru', timeout: 300, 'notify-keyspace-events': 'Ex' }),
    runs: 200,
  },
  {
    method: 'POST',
    path: () => '/v2/redis/fz-redis/users/',
    valid: () => ({
      username: 'fz-user',
      password: 'fz-user-password',
      keys: ['app:*'],
      channels: ['news'],
      commands: ['+@read', '-keys'],
    }),
    runs: 200,
  },
  {
    method: 'POST',
    path: (s) => `/v2/mongodb/${s.mongoId}/databases/app/users`,
    valid: () => ({ username: 'seed-user', password: 'another-password', roles: [{ role: 'readWrite', db: 'app' }] }),
    runs: 300,
  },
  {
    method: 'PATCH',
    path: (s) => `/v2/mongodb/${s.mongoId}/databases/app/users/seed-user`,
    valid: () => ({ password: 'seed-user-password', roles: [{ role: 'read', db: 'app' }] }),
    runs: 250,
  },
  { method: 'POST', path: () => '/v2/instances/fz-redis/restore/', valid: () => ({ backup_id: 'f'.repeat(24) }), runs: 150 },
  { method: 'PUT', path: () => '/v2/instances/fz-redis/backup-policy/', valid: () => ({ schedule: 'off', keep_last: null }), runs: 150 },
  { method: 'POST', path: () => '/v2/tokens/verify/', valid: (_s, token) => ({ token }), runs: 200 },
  { method: 'DELETE', path: () => '/v2/tokens/', valid: () => ({}), runs: 100, spendsToken: true },
  { method: 'DELETE', path: () => '/v2/instances/ghost/', valid: () => ({}), runs: 50 },
  { method: 'DELETE', path: (_s) => `/v2/instances/fz-redis/acls/${'f'.repeat(24)}/`, valid: () => ({}), runs: 50 },
  { method: 'DELETE', path: (s) => `/v2/mongodb/${s.mongoId}/databases/app/users/ghost`, valid: () => ({}), runs: 50 },
  { method: 'GET', path: () => '/v2/instances/', valid: () => ({}), runs: 50 },
];

type AuthChoice = 'token' | 'basic' | 'none' | 'bad-token';
const authChoice = fc.oneof(
  { weight: 12, arbitrary: fc.constant<AuthChoice>('token') },
  { weight: 1, arbitrary: fc.constantFrom<AuthChoice>('basic', 'none', 'bad-token') },
);

/**
 * Arbitrary bodies at every endpoint that reads one: JSON of any type and depth, huge numbers,
 * long strings, unicode and control characters, `__proto__` and `constructor` keys, duplicate
 * keys, valid bodies with something wrong, text that is not JSON. Every answer is sane, and a
 * refused request changes nothing of the account (instances, ACLs, users, Redis users and settings, ports, tokens, keys).
 */
describe('arbitrary bodies at every endpoint', () => {
  let w: FuzzWorld;
  let before: string;

  beforeAll(async () => {
    w = await FuzzWorld.start();
    before = w.snapshot();
  }, 60_000);
  afterAll(() => w?.close());

  async function headersFor(auth: AuthChoice, spendsToken: boolean, type: string | undefined): Promise<Record<string, string>> {
    const h: Record<string, string> = type === undefined ? {} : { 'content-type': type };
    if (auth === 'token') h['x-auth-token'] = spendsToken ? await w.spareToken() : w.token;
    if (auth === 'bad-token') h['x-auth-token'] = 'not-a-token';
    if (auth === 'basic') h.authorization = `Basic ${Buffer.from(`${w.login}:${w.password}`).toString('base64')}`;
    return h;
  }

  for (const route of ROUTES) {
    const label = `${route.method} ${route.path({ redis: '', mongo: '', mongoId: '{instance_id}', es: '', aclId: '', user: '' })}`.replace(
      /f{24}/,
      '{acl_id}',
    );
    it(`${label}: ${route.runs} cases`, async () => {
      const seen = new Map<string, number>();
      const body = bodyFor(route.valid(w.seeds, w.token));
      await fc.assert(
        fc.asyncProperty(body, contentType, authChoice, async (text, type, auth) => {
          const path = route.path(w.seeds);
          const headers = await headersFor(auth, route.spendsToken === true, type);
          if (route.spendsToken) before = w.snapshot(); // the spare token is in it
          const res = await w.send(route.method, path, { headers, body: text });
          expectSaneAnswer(res);
          seen.set(`${res.status} ${res.json?.code ?? ''}`, (seen.get(`${res.status} ${res.json?.code ?? ''}`) ?? 0) + 1);
          const after = w.snapshot();
          if (res.status >= 400) {
            expect(changes(before, after), `a refused ${route.method} ${path} (${res.status} ${res.json?.code}) changed the store`).toEqual(
              [],
            );
          } else if (route.method !== 'GET' && !path.endsWith('/verify/')) {
            // accepted: a change the account may make; put the world back for the next case
            await w.reset();
            before = w.snapshot();
            return;
          }
          before = after;
        }),
        fuzzParameters(route.runs),
      );
      // HANGAR_FUZZ_STATS=1 shows how deep the cases went (answers by status and code)
      if (process.env.HANGAR_FUZZ_STATS) console.log(label, Object.fromEntries([...seen].sort((a, b) => b[1] - a[1])));
      // still serving, and the account as it should be
      expect((await w.send('GET', '/healthz')).status).toBe(200);
      const list = await w.send('GET', '/v2/instances/', { headers: { 'x-auth-token': w.token } });
      expect(list.status).toBe(200);
    });
  }
});
