import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warningsOf } from '../../src/client/hangar-client.js';
import { userRules } from '../../src/engines/redis/redis-users.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

// Redis users, password rotation, the settings allow-list, the slow log and stats through the
// HTTP API on the emulated runtime (whose engine model shows what it runs with). The same on real
// redis-server processes behind the edge: test/e2e/access-day-two.test.ts.

async function until(what: string, condition: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.each(DIALECTS)('Redis, day two, on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;
  let r: any;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect, env: { HANGAR_PASSWORD_GRACE: '2' } }));
    r = await alice.ready(redisBody('r'));
    await alice.ready(mongoBody('m'));
  });
  afterAll(() => th.close());

  const engine = () => th.hangar.zones.targets()[0]!.engines.require('redis') as unknown as { redisAccessOf(id: string): any };
  const users = '/v2/redis/r/users/';

  describe('users', () => {
    it('200: create (password made by hangar when left out), list, read, change, delete; the engine follows', async () => {
      const created = await alice.post(users, {
        username: 'app',
        keys: ['app:*'],
        channels: ['app.events'],
        commands: ['+@read', '+@WRITE', '-@dangerous'],
      });
      expect(created.status).toBe(200);
      expect(created.body.data).toEqual({
        user: {
          name: 'app',
          keys: ['app:*'],
          channels: ['app.events'],
          commands: ['+@read', '+@write', '-@dangerous'],
          date_created: { $date: expect.any(Number) },
        },
        password: expect.stringMatching(/^[0-9a-f]{32}$/),
      });
      const password = created.body.data.password;
      expect(engine().redisAccessOf(r.id).users).toEqual([
        { name: 'app', passwords: [password], keys: ['app:*'], channels: ['app.events'], commands: ['+@read', '+@write', '-@dangerous'] },
      ]);
      expect((await alice.post(users, { username: 'ro', password: 'a-long-password', keys: ['*'], commands: ['+@read'] })).status).toBe(
        200,
      );
      expect((await alice.get(users)).body.data.map((u: any) => u.name)).toEqual(['app', 'ro']);
      expect((await alice.get(`${users}ro/`)).body.data).toMatchObject({ name: 'ro', keys: ['*'], commands: ['+@read'] });
      const changed = await alice.patch(`${users}ro/`, { keys: ['reports:*'] });
      expect(changed.status).toBe(200);
      expect(changed.body.data.keys).toEqual(['reports:*']);
      expect(changed.body.data.commands).toEqual(['+@read']);
      expect((await alice.delete(`${users}ro/`)).body).toEqual({ data: {} });
      expect(
        engine()
          .redisAccessOf(r.id)
          .users.map((u: any) => u.name),
      ).toEqual(['app']);
      expect((await alice.get(users)).body.data.map((u: any) => u.name)).toEqual(['app']);
      const events = (await alice.get('/v2/events/?limit=4')).body.data.map((e: any) => [e.action, e.target]);
      expect(events).toContainEqual(['redis_user.delete', 'instance:r/user:ro']);
    });

    it('400: a command hangar keeps for itself, named; an admin category; a reserved or invalid name; a short password; a bad pattern', async () => {
      for (const [rule, named] of [
        ['+config', 'CONFIG'],
        ['+acl|setuser', 'ACL'],
        ['+replicaof', 'REPLICAOF'],
        ['+shutdown', 'SHUTDOWN'],
        ['+debug', 'DEBUG'],
        ['+module', 'MODULE'],
        ['+client', 'CLIENT'],
      ] as const) {
        const res = await alice.post(users, { username: 'bad', commands: ['+@read', rule] });
        expect(res.status, rule).toBe(400);
        expect(res.body.field).toBe('commands[1]');
        expect(res.body.message).toContain(named);
      }
      for (const category of ['+@admin', '+@dangerous', '+@all']) {
        const res = await alice.post(users, { username: 'bad', commands: [category] });
        expect(res.body, category).toMatchObject({
          code: 'INVALID_VALUE',
          field: 'commands[0]',
          allowed: expect.arrayContaining(['@read', '@write']),
        });
      }
      // taking commands away is always allowed
      expect(
        (await alice.post(users, { username: 'minus', commands: ['+@read', '-@admin', '-@dangerous', '-config', '+client|setname'] }))
          .status,
      ).toBe(200);
      expect((await alice.post(users, { username: 'default' })).body).toMatchObject({ field: 'username' });
      expect((await alice.post(users, { username: 'hangar' })).body).toMatchObject({ field: 'username' });
      expect((await alice.post(users, { username: 'has space' })).body).toMatchObject({ field: 'username' });
      expect((await alice.post(users, { username: 'x', password: 'short' })).body).toMatchObject({ field: 'password' });
      expect((await alice.post(users, { username: 'x', keys: ['a b'] })).body).toMatchObject({ field: 'keys[0]' });
      expect((await alice.post(users, { username: 'x', grants: [] })).status).toBe(400);
      expect((await alice.patch(`${users}app/`, {})).status).toBe(400);
      expect((await alice.patch(`${users}app/`, { commands: ['+config|get'] })).body.message).toContain('CONFIG');
    });

    it('200: patterns written as Redis writes them (~app:*, &news.*) are stored without their mark, each with a Warning', async () => {
      const created = await alice.post(users, {
        username: 'marked',
        keys: ['~app:*', 'jobs:*'],
        channels: ['&news.*'],
        commands: ['+@read'],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.user).toMatchObject({ keys: ['app:*', 'jobs:*'], channels: ['news.*'] });
      expect(warningsOf(created.headers.get('warning'))).toEqual([
        'keys[0] "~app:*" was stored as "app:*": hangar writes the "~" of Redis\'s key patterns itself',
        'channels[0] "&news.*" was stored as "news.*": hangar writes the "&" of Redis\'s channel patterns itself',
      ]);
      // the engine is given the patterns once marked: ~app:*, never ~~app:*
      const user = engine()
        .redisAccessOf(r.id)
        .users.find((u: any) => u.name === 'marked');
      expect(user).toMatchObject({ keys: ['app:*', 'jobs:*'], channels: ['news.*'] });
      expect(userRules(user)).toEqual(expect.arrayContaining(['~app:*', '~jobs:*', '&news.*']));
      const patched = await alice.patch(`${users}marked/`, { keys: ['~reports:*'] });
      expect(patched.body.data.keys).toEqual(['reports:*']);
      expect(warningsOf(patched.headers.get('warning'))).toEqual([
        'keys[0] "~reports:*" was stored as "reports:*": hangar writes the "~" of Redis\'s key patterns itself',
      ]);
      expect((await alice.patch(`${users}marked/`, { keys: ['plain:*'] })).headers.get('warning')).toBeNull();
      expect((await alice.delete(`${users}marked/`)).status).toBe(200);
    });

    it('400: a key permission (%R~app:*) or a mark alone, which would match nothing, every one named', async () => {
      const res = await alice.post(users, { username: 'perm', keys: ['%R~app:*', '~'], channels: ['&'] });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'keys[0]' });
      expect(res.body.message).toContain(
        'is a key permission (%R~, %W~, %RW~), which hangar does not take: give the pattern alone ("app:*")',
      );
      expect(res.body.errors.map((e: any) => e.field)).toEqual(['keys[0]', 'keys[1]', 'channels[0]']);
      expect((await alice.get(`${users}perm/`)).status).toBe(404);
    });

    it('404: unknown user, another account, not a redis instance; 409: a name taken', async () => {
      expect((await alice.get(`${users}nobody/`)).body).toEqual({
        message: 'user "nobody" not found on instance "r"',
        code: 'USER_NOT_FOUND',
      });
      expect((await alice.patch(`${users}nobody/`, { keys: [] })).status).toBe(404);
      expect((await alice.delete(`${users}nobody/`)).status).toBe(404);
      expect((await bob.get(users)).body).toEqual({ message: 'redis instance "r" not found', code: 'INSTANCE_NOT_FOUND' });
      expect((await bob.post(users, { username: 'x' })).status).toBe(404);
      expect((await alice.get('/v2/redis/m/users/')).status).toBe(404);
      expect((await alice.post(users, { username: 'app' })).body.code).toBe('USER_EXISTS');
    });
  });

  describe('password rotation', () => {
    it('instance: the record shows the new password at once, the engine takes both until finish; 409 while one runs', async () => {
      const old = (await alice.get('/v2/instances/r/')).body.data.password;
      const res = await alice.post('/v2/instances/r/rotate-password');
      expect(res.status).toBe(200);
      const { password, previous_valid_until } = res.body.data;
      expect(password).toMatch(/^[0-9a-f]{32}$/);
      expect(Date.parse(previous_valid_until)).toBeGreaterThan(Date.now());
      expect((await alice.get('/v2/instances/r/')).body.data.password).toBe(password);
      expect(engine().redisAccessOf(r.id).passwords).toEqual([password, old]);
      expect((await alice.post('/v2/instances/r/rotate-password')).body.code).toBe('ROTATION_IN_PROGRESS');
      expect((await alice.post('/v2/instances/r/rotate-password/finish')).body).toEqual({ data: { retired: true } });
      expect(engine().redisAccessOf(r.id).passwords).toEqual([password]);
      expect((await alice.post('/v2/instances/r/rotate-password/finish')).body).toEqual({ data: { retired: false } });
    });

    it('instance: the old password is retired by itself when the grace period (HANGAR_PASSWORD_GRACE) ends, and audited', async () => {
      const { password } = (await alice.post('/v2/instances/r/rotate-password')).body.data;
      expect(engine().redisAccessOf(r.id).passwords).toHaveLength(2);
      await until('the old password is retired', () => engine().redisAccessOf(r.id).passwords.length === 1);
      expect(engine().redisAccessOf(r.id).passwords).toEqual([password]);
      const actions = (await alice.get('/v2/events/?limit=5')).body.data.map((e: any) => e.action);
      expect(actions).toContain('instance.password.retire');
    });

    it('user: both passwords until finish; a PATCH of the password ends a rotation too', async () => {
      const before = engine()
        .redisAccessOf(r.id)
        .users.find((u: any) => u.name === 'app').passwords;
      const res = await alice.post(`${users}app/rotate-password`);
      expect(res.status).toBe(200);
      const after = engine()
        .redisAccessOf(r.id)
        .users.find((u: any) => u.name === 'app').passwords;
      expect(after).toEqual([res.body.data.password, before[0]]);
      expect((await alice.get(`${users}app/`)).body.data.previous_password_valid_until).toBe(res.body.data.previous_valid_until);
      expect((await alice.post(`${users}app/rotate-password`)).status).toBe(409);
      expect((await alice.post(`${users}app/rotate-password/finish`)).body.data.retired).toBe(true);
      expect(
        engine()
          .redisAccessOf(r.id)
          .users.find((u: any) => u.name === 'app').passwords,
      ).toEqual([res.body.data.password]);
      await alice.post(`${users}app/rotate-password`);
      await alice.patch(`${users}app/`, { password: 'brand-new-password' });
      expect(
        engine()
          .redisAccessOf(r.id)
          .users.find((u: any) => u.name === 'app').passwords,
      ).toEqual(['brand-new-password']);
    });

    it('404: another account, not redis, an unknown user', async () => {
      expect((await bob.post('/v2/instances/r/rotate-password')).status).toBe(404);
      expect((await alice.post('/v2/instances/m/rotate-password')).status).toBe(404);
      expect((await alice.post(`${users}nobody/rotate-password`)).body.code).toBe('USER_NOT_FOUND');
      expect((await bob.post(`${users}app/rotate-password/finish`)).status).toBe(404);
    });
  });

  describe('settings', () => {
    it('200: GET shows every setting of the allow-list, live', async () => {
      const res = await alice.get('/v2/redis/r/config/');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.data).sort()).toEqual([
        'hz',
        'lazyfree-lazy-eviction',
        'lazyfree-lazy-expire',
        'lazyfree-lazy-server-del',
        'lazyfree-lazy-user-del',
        'lazyfree-lazy-user-flush',
        'maxclients',
        'maxmemory-policy',
        'maxmemory-samples',
        'notify-keyspace-events',
        'slowlog-log-slower-than',
        'slowlog-max-len',
        'tcp-keepalive',
        'timeout',
      ]);
      expect(res.body.data['maxmemory-policy']).toBe('noeviction');
    });

    it("200: PATCH applies; the spec's maxMemoryPolicy and maxClients show the new values; audited", async () => {
      const res = await alice.patch('/v2/redis/r/config/', { 'maxmemory-policy': 'allkeys-lru', maxclients: 5000, timeout: '300' });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ maxclients: '5000', 'maxmemory-policy': 'allkeys-lru', timeout: '300' });
      expect((await alice.get('/v2/redis/r/maxMemoryPolicy/')).body.data).toBe('allkeys-lru');
      expect((await alice.get('/v2/redis/r/maxClients/')).body.data).toBe('5000');
      expect((await alice.get('/v2/redis/r/config/')).body.data).toMatchObject({
        'maxmemory-policy': 'allkeys-lru',
        maxclients: '5000',
        timeout: '300',
      });
      expect((await alice.get('/v2/events/?limit=1')).body.data[0]).toMatchObject({ action: 'redis.config', target: 'instance:r' });
    });

    it('400: the setting and its allowed values', async () => {
      const unknown = await alice.patch('/v2/redis/r/config/', { save: '' });
      expect(unknown.body).toMatchObject({
        code: 'INVALID_VALUE',
        field: 'save',
        allowed: expect.arrayContaining(['maxmemory-policy', 'timeout']),
      });
      const policy = await alice.patch('/v2/redis/r/config/', { 'maxmemory-policy': 'lru' });
      expect(policy.body).toMatchObject({ field: 'maxmemory-policy', allowed: expect.arrayContaining(['allkeys-lru', 'noeviction']) });
      expect(policy.body.message).toContain('allkeys-lru');
      const bounded = await alice.patch('/v2/redis/r/config/', { maxclients: 100000 });
      expect(bounded.body).toMatchObject({ field: 'maxclients', allowed: [1, 10000] });
      expect((await alice.patch('/v2/redis/r/config/', { 'notify-keyspace-events': 'KEx!' })).body.field).toBe('notify-keyspace-events');
      expect((await alice.patch('/v2/redis/r/config/', { 'lazyfree-lazy-user-del': true })).status).toBe(400);
      expect((await alice.patch('/v2/redis/r/config/', {})).status).toBe(400);
      expect((await alice.get('/v2/redis/r/maxClients/')).body.data).toBe('5000');
    });

    it('404: another account, not redis', async () => {
      expect((await bob.get('/v2/redis/r/config/')).status).toBe(404);
      expect((await bob.patch('/v2/redis/r/config/', { timeout: 1 })).status).toBe(404);
      expect((await alice.patch('/v2/redis/m/config/', { timeout: 1 })).status).toBe(404);
    });
  });

  describe('slow log and stats', () => {
    it('200: read live; 400 for a bad limit; 404 for another account', async () => {
      expect((await alice.get('/v2/redis/r/slowlog/')).body).toEqual({ data: [] });
      expect((await alice.get('/v2/redis/r/slowlog/?limit=x')).status).toBe(400);
      const stats = await alice.get('/v2/redis/r/stats/');
      expect(stats.status).toBe(200);
      expect(stats.body.data).toMatchObject({
        role: 'master',
        maxclients: 5000,
        maxmemory: 500 * 1024 * 1024,
        hit_ratio: null,
        replicas: [{ state: 'online' }],
      });
      expect((await bob.get('/v2/redis/r/stats/')).status).toBe(404);
      expect((await bob.get('/v2/redis/r/slowlog/')).status).toBe(404);
    });
  });

  it('every change is an operation (X-Operation-Id, Location) that SUCCEEDS once the engines run it: users, rotations, settings', async () => {
    // an instance of its own: the restart case below counts on r's settings and password
    await alice.ready(redisBody('o'));
    const oUsers = '/v2/redis/o/users/';
    const succeeded = async (res: { status: number; headers: Headers }, kind: string, detail: Record<string, unknown>) => {
      expect(res.status).toBe(200);
      const id = res.headers.get('x-operation-id');
      expect(id, kind).toMatch(/^[0-9a-f]{24}$/);
      expect(res.headers.get('location')).toBe(`/v2/operations/${id}/`);
      await until(`${kind} to succeed`, async () => (await alice.get(`/v2/operations/${id}/`)).body.data.state === 'SUCCEEDED');
      const op = (await alice.get(`/v2/operations/${id}/`)).body.data;
      expect(op).toMatchObject({ kind, instance_name: 'o', progress: 100, detail });
    };
    await succeeded(await alice.post(oUsers, { username: 'ops' }), 'user.create', { service: 'redis', username: 'ops' });
    await succeeded(await alice.patch(`${oUsers}ops/`, { keys: ['ops:*'] }), 'user.update', {
      service: 'redis',
      username: 'ops',
      changed: ['keys'],
    });
    await succeeded(await alice.post(`${oUsers}ops/rotate-password`), 'password.rotate', { service: 'redis', username: 'ops' });
    await succeeded(await alice.post(`${oUsers}ops/rotate-password/finish`), 'password.finish', { service: 'redis', username: 'ops' });
    // nothing left to finish: no operation
    const again = await alice.post(`${oUsers}ops/rotate-password/finish`);
    expect([again.status, again.body.data.retired, again.headers.get('x-operation-id')]).toEqual([200, false, null]);
    await succeeded(await alice.delete(`${oUsers}ops/`), 'user.delete', { service: 'redis', username: 'ops' });
    await succeeded(await alice.post('/v2/instances/o/rotate-password'), 'password.rotate', { service: 'redis' });
    await succeeded(await alice.post('/v2/instances/o/rotate-password/finish'), 'password.finish', { service: 'redis' });
    await succeeded(await alice.patch('/v2/redis/o/config/', { timeout: 120 }), 'config.update', {
      service: 'redis',
      settings: { timeout: '120' },
    });
    // a refused change leaves no operation behind
    const before = (await alice.get('/v2/operations/?instance=o&limit=100')).body.data.length;
    expect((await alice.patch('/v2/redis/o/config/', { 'maxmemory-policy': 'sometimes' })).status).toBe(400);
    expect((await alice.post(oUsers, { username: 'default' })).status).toBe(400);
    expect((await alice.get('/v2/operations/?instance=o&limit=100')).body.data.length).toBe(before);
  });

  it('users, settings and passwords come back after a restart (the emulated engines rebuild from the store)', async () => {
    const password = (await alice.get('/v2/instances/r/')).body.data.password;
    await th.restart({ HANGAR_PASSWORD_GRACE: '2' });
    await until('the engine runs again', () => engine().redisAccessOf(r.id) !== undefined);
    expect(engine().redisAccessOf(r.id)).toMatchObject({
      passwords: [password],
      settings: { 'maxmemory-policy': 'allkeys-lru', maxclients: '5000', timeout: '300' },
    });
    expect(
      engine()
        .redisAccessOf(r.id)
        .users.map((u: any) => u.name),
    ).toEqual(['app', 'minus']);
    expect((await alice.get('/v2/redis/r/maxMemoryPolicy/')).body.data).toBe('allkeys-lru');
  });
});
