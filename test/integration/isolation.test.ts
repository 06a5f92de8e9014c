import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

/**
 * Every endpoint of one account against every kind of resource of another (an instance by name
 * and by id, an ACL, a user, a backup) answers exactly what it answers for a resource that does not
 * exist: 404, the same code, the same message but for the name sent, nothing of the other
 * account. Never a 401 (a client would log in again and replay).
 */

interface Endpoint {
  readonly method: string;
  /** `{inst}`, `{acl}` and `{user}` are filled in per case. */
  readonly path: string;
  readonly body?: unknown;
}

const INSTANCE: Endpoint[] = [
  { method: 'GET', path: '/v2/instances/{inst}/' },
  { method: 'DELETE', path: '/v2/instances/{inst}/' },
  { method: 'POST', path: '/v2/instances/{inst}/rename/', body: { name: 'taken-over' } },
  { method: 'GET', path: '/v2/instances/{inst}/acls/' },
  { method: 'POST', path: '/v2/instances/{inst}/acls/', body: { cidr_mask: '198.51.100.1', description: 'intruder' } },
];
const BACKUPS: Endpoint[] = [
  { method: 'GET', path: '/v2/instances/{inst}/backups/' },
  { method: 'POST', path: '/v2/instances/{inst}/backups/', body: {} },
  { method: 'GET', path: '/v2/instances/{inst}/restores/' },
  { method: 'POST', path: '/v2/instances/{inst}/restore/', body: { backup_id: 'ffffffffffffffffffffffff' } },
  { method: 'GET', path: '/v2/instances/{inst}/backup-policy/' },
  { method: 'PUT', path: '/v2/instances/{inst}/backup-policy/', body: { schedule: 'off' } },
];
const BACKUP: Endpoint[] = [
  { method: 'GET', path: '/v2/instances/{inst}/backups/{backup}/' },
  { method: 'DELETE', path: '/v2/instances/{inst}/backups/{backup}/' },
  { method: 'GET', path: '/v2/instances/{inst}/backups/{backup}/download' },
];
const ACL: Endpoint[] = [
  { method: 'GET', path: '/v2/instances/{inst}/acls/{acl}/' },
  { method: 'DELETE', path: '/v2/instances/{inst}/acls/{acl}/' },
];
const REDIS: Endpoint[] = [
  ...['connectedSlaves', 'spaceUsage', 'maxMemoryPolicy', 'maxClients'].map((m) => ({ method: 'GET', path: `/v2/redis/{inst}/${m}/` })),
  { method: 'POST', path: '/v2/redis/{inst}/resize/', body: { new_plan: 1000 } },
];
const MONGO: Endpoint[] = [
  { method: 'GET', path: '/v2/mongodb/{inst}/databases/app/users' },
  { method: 'POST', path: '/v2/mongodb/{inst}/databases/app/users', body: { username: 'intruder', password: 'password-9', roles: [] } },
];
const USER: Endpoint[] = [
  {
    method: 'PATCH',
    path: '/v2/mongodb/{inst}/databases/app/users/{user}',
    body: { password: 'password-9', roles: [{ role: 'dbOwner', db: 'app' }] },
  },
  { method: 'DELETE', path: '/v2/mongodb/{inst}/databases/app/users/{user}' },
];

/**
 * Requests whose body is wrong in every way a body can be (an unknown field, a wrong type, a
 * value outside the rules, not JSON at all): about an instance that is not the caller's they get
 * the 404 of the owner check all the same, before anything of the body is looked at.
 */
const INVALID_BODIES: Endpoint[] = [
  { method: 'POST', path: '/v2/instances/{inst}/rename/', body: { name: 5 } },
  { method: 'POST', path: '/v2/instances/{inst}/rename/', body: { name: 'no spaces allowed' } },
  { method: 'POST', path: '/v2/instances/{inst}/acls/', body: { cidr_mask: '198.51.100.1', description: 'x', port: 1 } },
  { method: 'POST', path: '/v2/instances/{inst}/acls/', body: { cidr_mask: 'not-an-address', description: 'x' } },
  { method: 'POST', path: '/v2/instances/{inst}/acls/', body: '{"cidr_mask": ' },
  { method: 'POST', path: '/v2/redis/{inst}/resize/', body: { new_plan: 'big' } },
  { method: 'POST', path: '/v2/redis/{inst}/resize/', body: { new_plan: 700 } },
  {
    method: 'POST',
    path: '/v2/mongodb/{inst}/databases/app/users',
    body: { username: 'intruder', password: 'password-9', roles: [{ role: 'not-a-role', db: 'app' }] },
  },
  { method: 'POST', path: '/v2/mongodb/{inst}/databases/app/users', body: { username: 'intruder', password: 'short', roles: [] } },
  { method: 'POST', path: '/v2/mongodb/{inst}/databases/app/users', body: { username: 'intruder' } },
  { method: 'PATCH', path: '/v2/mongodb/{inst}/databases/app/users/{user}', body: { roles: 'all' } },
  { method: 'PATCH', path: '/v2/mongodb/{inst}/databases/app/users/{user}', body: {} },
  { method: 'POST', path: '/v2/instances/{inst}/backups/', body: { now: true } },
  { method: 'POST', path: '/v2/instances/{inst}/backups/', body: '{"now": ' },
  { method: 'POST', path: '/v2/instances/{inst}/restore/', body: { backup_id: 5 } },
  { method: 'POST', path: '/v2/instances/{inst}/restore/', body: {} },
  { method: 'PUT', path: '/v2/instances/{inst}/backup-policy/', body: { schedule: 'weekly' } },
  { method: 'PUT', path: '/v2/instances/{inst}/backup-policy/', body: { schedule: 'every' } },
];

const GHOST_ID = 'ffffffffffffffffffffffff';

describe.each(DIALECTS)('isolation between accounts on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  const a: Record<string, any> = {};
  let aclId: string;
  let backupId: string;
  let before: unknown;

  /** Everything alice can see, to check that nothing of bob's requests changed it. */
  const snapshot = async () => ({
    instances: (await alice.get('/v2/instances/')).body,
    acls: await Promise.all(['a-redis', 'a-mongo', 'a-es'].map(async (n) => (await alice.get(`/v2/instances/${n}/acls/`)).body)),
    users: (await alice.get(`/v2/mongodb/${a.mongo.id}/databases/app/users`)).body,
    backups: (await alice.get('/v2/instances/a-redis/backups/')).body,
    policy: (await alice.get('/v2/instances/a-redis/backup-policy/')).body,
  });

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    a.redis = await alice.ready(redisBody('a-redis'));
    a.mongo = await alice.ready(mongoBody('a-mongo'));
    a.es = await alice.ready(esBody('a-es'));
    aclId = (await alice.post('/v2/instances/a-redis/acls/', { cidr_mask: '203.0.113.7', description: 'alice office' })).body.data;
    await alice.post('/v2/instances/a-mongo/acls/', { cidr_mask: '203.0.113.8', description: 'alice office' });
    await alice.post(`/v2/mongodb/${a.mongo.id}/databases/app/users`, {
      username: 'a-user',
      password: 'alice-password',
      roles: [{ role: 'read', db: 'app' }],
    });
    await bob.ready(redisBody('b-redis'));
    await bob.ready(mongoBody('b-mongo'));
    backupId = (await alice.post('/v2/instances/a-redis/backups/')).body.data.id;
    for (let i = 0; (await alice.get(`/v2/instances/a-redis/backups/${backupId}/`)).body.data.state !== 'COMPLETED'; i++) {
      if (i > 500) throw new Error(`alice's backup ${backupId} did not complete`);
      await new Promise((r) => setTimeout(r, 20));
    }
    before = await snapshot();
  });
  afterAll(() => th.close());

  /**
   * [label, endpoint, values for alice's resource, values for one that does not exist]; values
   * are resolved once alice's resources exist (`redis.name`, `mongo.id`, `acl`, or literal).
   */
  type Case = [string, Endpoint, Record<string, string>, Record<string, string>];
  const resolve = (values: Record<string, string>): Record<string, string> =>
    Object.fromEntries(
      Object.entries(values).map(([k, v]) => {
        if (v === '@acl') return [k, aclId];
        if (v === '@backup') return [k, backupId];
        const m = /^@(\w+)\.(name|id)$/.exec(v);
        return [k, m ? a[m[1]!][m[2]!] : v];
      }),
    );
  const cases = (): Case[] => {
    const out: Case[] = [];
    const refs = (key: string, name: string) => [
      [`${name} by name`, `@${key}.name`, 'ghost'],
      [`${name} by id`, `@${key}.id`, GHOST_ID],
    ];
    const redis = refs('redis', 'a-redis');
    const mongo = refs('mongo', 'a-mongo');
    const es = refs('es', 'a-es');
    for (const e of INSTANCE)
      for (const [l, v, g] of [...redis, ...mongo, ...es]) out.push([`${e.method} ${e.path} on ${l}`, e, { inst: v! }, { inst: g! }]);
    for (const e of REDIS)
      for (const [l, v, g] of [...redis, ...mongo]) out.push([`${e.method} ${e.path} on ${l}`, e, { inst: v! }, { inst: g! }]);
    for (const e of BACKUPS)
      for (const [l, v, g] of [...redis, ...mongo]) out.push([`${e.method} ${e.path} on ${l}`, e, { inst: v! }, { inst: g! }]);
    for (const e of BACKUP) {
      for (const [l, v, g] of redis)
        out.push([`${e.method} ${e.path}: alice's backup on ${l}`, e, { inst: v!, backup: '@backup' }, { inst: g!, backup: GHOST_ID }]);
      out.push([
        `${e.method} ${e.path}: alice's backup through bob's own instance`,
        e,
        { inst: 'b-redis', backup: '@backup' },
        { inst: 'b-redis', backup: GHOST_ID },
      ]);
    }
    for (const e of INVALID_BODIES) {
      const targets = e.path.startsWith('/v2/redis/') ? redis : e.path.startsWith('/v2/mongodb/') ? mongo : [...redis, ...mongo];
      for (const [l, v, g] of targets)
        out.push([
          `${e.method} ${e.path} with the body ${JSON.stringify(e.body)} on ${l}`,
          e,
          { inst: v!, user: 'a-user' },
          { inst: g!, user: 'a-user' },
        ]);
    }
    for (const e of MONGO)
      for (const [l, v, g] of [...mongo, ...redis]) out.push([`${e.method} ${e.path} on ${l}`, e, { inst: v! }, { inst: g! }]);
    for (const e of ACL) {
      for (const [l, v, g] of redis)
        out.push([`${e.method} ${e.path}: alice's ACL on ${l}`, e, { inst: v!, acl: '@acl' }, { inst: g!, acl: GHOST_ID }]);
      out.push([
        `${e.method} ${e.path}: alice's ACL through bob's own instance`,
        e,
        { inst: 'b-redis', acl: '@acl' },
        { inst: 'b-redis', acl: GHOST_ID },
      ]);
    }
    for (const e of USER) {
      for (const [l, v, g] of mongo)
        out.push([`${e.method} ${e.path}: alice's user on ${l}`, e, { inst: v!, user: 'a-user' }, { inst: g!, user: 'ghost-user' }]);
      out.push([
        `${e.method} ${e.path}: alice's user through bob's own instance`,
        e,
        { inst: 'b-mongo', user: 'a-user' },
        { inst: 'b-mongo', user: 'ghost-user' },
      ]);
    }
    return out;
  };

  const fill = (path: string, values: Record<string, string>) => path.replace(/\{(\w+)\}/g, (_m, k: string) => values[k]!);
  /** The message with the names sent replaced, to compare answers about different names. */
  const neutral = (body: any, values: Record<string, string>) => ({
    ...body,
    message: Object.values(values).reduce((msg: string, v) => msg.split(`"${v}"`).join('"<sent>"'), body.message),
  });

  /** Whatever of alice's a body must not show (names sent by bob himself excepted). */
  const secretsOf = (sent: Record<string, string>) =>
    [
      alice.login,
      a.redis.id,
      a.mongo.id,
      a.es.id,
      backupId,
      a.redis.password,
      a.redis.api_key,
      a.mongo.api_key,
      a.es.api_key,
      aclId,
      '203.0.113.7',
      'alice office',
      'a-user',
      String(Number(/:(\d+)$/.exec(a.redis.connect_string)![1])),
    ].filter((s) => !Object.values(sent).includes(s));

  for (const auth of ['token', 'basic'] as const) {
    describe(`bob with ${auth === 'token' ? 'X-Auth-Token' : 'HTTP Basic'}`, () => {
      const client = () => (auth === 'token' ? bob : new Client(th.target, { basic: [bob.login, bob.password] }));

      it("sees none of alice's instances in his list", async () => {
        const res = await client().get('/v2/instances/');
        expect(res.body.data.map((r: any) => r.name)).toEqual(['b-redis', 'b-mongo']);
      });

      it.each(cases().map((c) => [c[0], c] as const))('%s: the 404 of a missing one', async (_label, [, e, mineRefs, ghost]) => {
        const mine = resolve(mineRefs);
        const c = client();
        const body = (b: unknown) =>
          b === undefined ? {} : typeof b === 'string' ? { rawBody: b, headers: { 'content-type': 'application/json' } } : { body: b };
        const real = await c.request(e.method, fill(e.path, mine), body(e.body));
        const none = await c.request(e.method, fill(e.path, ghost), body(e.body));
        expect(none.status).toBe(404);
        expect(real.status).toBe(404);
        expect(neutral(real.body, mine)).toEqual(neutral(none.body, ghost));
        const text = JSON.stringify(real.body);
        for (const s of secretsOf(mine)) expect(text).not.toContain(s);
      });

      it("leaves alice's instances, ACLs and users as they were", async () => {
        expect(await snapshot()).toEqual(before);
        expect(th.mongodb.authenticate(a.mongo.id, 'app', 'a-user', 'alice-password')).toBe(true);
        expect(th.runtime.rulesOf(a.redis.id)).toEqual([{ cidr: '203.0.113.7', transport: false, kibana: false }]);
      });
    });
  }
});
