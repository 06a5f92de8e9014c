import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONGODB_ADMIN_DB, MONGODB_ADMIN_USER } from '../../src/engines/mongodb/mongodb-config.js';
import { RESERVED_MONGODB_USER } from '../../src/service/mongodb-users.js';
import { keysOf, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

const users = (inst: string, db = 'app') => `/v2/mongodb/${inst}/databases/${db}/users`;

describe("hangar's own MongoDB user", () => {
  it('is the user the engine creates on every instance', () => {
    expect(RESERVED_MONGODB_USER).toEqual({ username: MONGODB_ADMIN_USER, database: MONGODB_ADMIN_DB });
  });
});

describe.each(DIALECTS)('MongoDB users on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;
  let m: any;
  let r: any;
  let bobs: any;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    m = await alice.ready(mongoBody('m'));
    r = await alice.ready(redisBody('r'));
    bobs = await bob.ready(mongoBody('bobs'));
    await bob.post(users(bobs.id), { username: 'bobuser', password: 'bob-password', roles: [{ role: 'read', db: 'app' }] });
  });
  afterAll(() => th.close());

  const add = (
    who: Account,
    inst: string,
    username: string,
    roles: unknown = [{ role: 'readWrite', db: 'app' }],
    db = 'app',
    password = 'password-1',
  ) => who.post(users(inst, db), { username, password, roles });

  describe('POST /v2/mongodb/<id>/databases/<db>/users', () => {
    it('200: a string confirming it; the engine has the user with its password and roles', async () => {
      const res = await add(alice, m.id, 'u-create', [
        { role: 'readWrite', db: 'app' },
        { role: 'read', db: 'reports' },
      ]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: expect.stringMatching(/"u-create".*"app"/) });
      expect(th.mongodb.authenticate(m.id, 'app', 'u-create', 'password-1')).toBe(true);
      expect(th.mongodb.authenticate(m.id, 'app', 'u-create', 'wrong-password')).toBe(false);
      const engine = th.mongodb.usersOf(m.id, 'app');
      expect(engine.find((u) => u.name === 'u-create')?.roles).toEqual([
        { role: 'readWrite', db: 'app' },
        { role: 'read', db: 'reports' },
      ]);
    });

    it('200: the instance addressed by name as well as by id', async () => {
      expect((await add(alice, 'm', 'u-by-name')).status).toBe(200);
      expect((await alice.get(users(m.id))).body.data.map((u: any) => u.name)).toContain('u-by-name');
    });

    it('200: the same user name in another database is another user', async () => {
      expect((await add(alice, m.id, 'twin', [{ role: 'read', db: 'one' }], 'one')).status).toBe(200);
      expect((await add(alice, m.id, 'twin', [{ role: 'read', db: 'two' }], 'two')).status).toBe(200);
    });

    it('200: an instance still building takes the user and applies it once built', async () => {
      const release = th.hold();
      let inst: any;
      let added: Promise<any>;
      try {
        inst = (await alice.post('/v2/instances/', mongoBody('m-building', 'mongodb_singledb'))).body.data;
        await alice.waitFor('m-building', (x) => x?.state === 'BUILDING');
        // The request answers once the user is applied (or after a few seconds, recorded anyway):
        // release the build once the user is recorded.
        added = add(alice, inst.id, 'early');
        await expect.poll(async () => (await alice.get(users(inst.id))).body.data.map((u: any) => u.name)).toEqual(['early']);
        expect(th.mongodb.authenticate(inst.id, 'app', 'early', 'password-1')).toBe(false);
      } finally {
        release();
      }
      expect((await added).status).toBe(200);
      await alice.waitFor('m-building', (x) => x?.state === 'ACTIVE');
      await expect.poll(() => th.mongodb.authenticate(inst.id, 'app', 'early', 'password-1')).toBe(true);
    });

    describe('400', () => {
      it.each<[Record<string, unknown>, string]>([
        [{ password: 'password-1', roles: [] }, 'username'],
        [{ username: 'x', roles: [] }, 'password'],
        [{ username: 'x', password: 'password-1' }, 'roles'],
        [{ username: 5, password: 'password-1', roles: [] }, 'username'],
        [{ username: 'x', password: 'password-1', roles: 'read' }, 'roles'],
        [{ username: 'x', password: 'password-1', roles: [{ role: 'read' }] }, 'roles[0].db'],
        [{ username: 'x', password: 'password-1', roles: [{ role: 'read', db: 'app', extra: 1 }] }, 'roles[0].extra'],
        [{ username: 'x', password: 'password-1', roles: [], admin: true }, 'admin'],
        [{ username: '', password: 'password-1', roles: [] }, 'username'],
        [{ username: 'x', password: 'short', roles: [] }, 'password'],
        [{ username: 'x', password: 'password-1', roles: [{ role: 'root', db: 'app' }] }, 'roles[0].role'],
        [{ username: 'x', password: 'password-1', roles: [{ role: 'readAnyDatabase', db: 'app' }] }, 'roles[0].db'],
        [{ username: 'x', password: 'password-1', roles: [{ role: 'read', db: 'a.b' }] }, 'database_name'],
      ])('a body %j', async (body, field) => {
        const res = await alice.post(users(m.id), body);
        expect(res.status).toBe(400);
        expect(res.body.field).toBe(field);
        expect(res.body.message).toEqual(expect.any(String));
      });

      it('a role name outside the list, naming the allowed roles', async () => {
        const res = await add(alice, m.id, 'x', [{ role: 'superuser', db: 'app' }]);
        expect(res.status).toBe(400);
        expect(res.body.message).toContain('read, readWrite, dbAdmin');
        expect(res.body.allowed).toEqual(expect.arrayContaining(['read', 'readWrite', 'dbAdmin']));
      });

      it.each([
        ['userAdminAnyDatabase', 'admin', 'roles[0].role'],
        ['restore', 'admin', 'roles[0].role'],
        ['root', 'admin', 'roles[0].role'],
        ['userAdmin', 'admin', 'roles[0].db'],
        ['dbOwner', 'admin', 'roles[0].db'],
      ])("a role that could administer hangar's own user (%s on %s), saying why; nothing recorded", async (role, db, field) => {
        const res = await add(alice, m.id, 'x', [{ role, db }]);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field });
        if (field === 'roles[0].role') expect(res.body.allowed).not.toContain(role);
        else expect(res.body.message).toMatch(/administers the users of admin/);
        expect(
          (await alice.get(users(m.id))).body.data.some((u: { user?: string; username?: string }) => (u.user ?? u.username) === 'x'),
        ).toBe(false);
      });

      it('200: userAdmin and dbOwner on a database of the client', async () => {
        expect(
          (
            await add(alice, m.id, 'owner', [
              { role: 'dbOwner', db: 'app' },
              { role: 'userAdmin', db: 'app' },
            ])
          ).status,
        ).toBe(200);
      });

      it('a database name MongoDB refuses', async () => {
        const res = await alice.post(users(m.id, 'a$b'), { username: 'x', password: 'password-1', roles: [] });
        expect(res.status).toBe(400);
        expect(res.body.field).toBe('database_name');
      });
    });

    it("400: hangar's own user (hangar on admin), naming why; nothing recorded", async () => {
      const res = await add(alice, m.id, 'hangar', [{ role: 'readAnyDatabase', db: 'admin' }], 'admin');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'username' });
      expect(res.body.message).toMatch(/"hangar" of database "admin" is hangar's own administrative user/);
      expect((await alice.get(users(m.id, 'admin'))).body.data).toEqual([]);
      expect(th.mongodb.authenticate(m.id, 'admin', 'hangar', 'password-1')).toBe(false);
    });

    it('200: the name hangar on another database is an ordinary user', async () => {
      expect((await add(alice, m.id, 'hangar', [{ role: 'read', db: 'app' }])).status).toBe(200);
      expect(th.mongodb.authenticate(m.id, 'app', 'hangar', 'password-1')).toBe(true);
    });

    it('409: a user that exists; its password stays', async () => {
      expect((await add(alice, m.id, 'dup')).status).toBe(200);
      const res = await add(alice, m.id, 'dup', [], 'app', 'another-password');
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: 'USER_EXISTS', message: 'user "dup" already exists in database "app"' });
      expect(th.mongodb.authenticate(m.id, 'app', 'dup', 'password-1')).toBe(true);
    });

    describe('404', () => {
      it.each([
        ['unknown id', '000000000000000000000000'],
        ['unknown name', 'nope'],
      ])('an %s', async (_what, inst) => {
        const res = await add(alice, inst, 'x');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: `mongodb instance "${inst}" not found` });
      });

      it('a redis instance of the account, by id and by name: it says so', async () => {
        for (const inst of [r.id, 'r']) {
          const res = await add(alice, inst, 'x');
          expect(res.status).toBe(404);
          expect(res.body).toEqual({
            code: 'INSTANCE_NOT_FOUND',
            message: `instance "${inst}" is a redis instance, not a mongodb instance`,
          });
        }
      });

      it("another account's instance with an invalid role: the 404, not a word about the role", async () => {
        for (const inst of [bobs.id, 'bobs']) {
          const res = await add(alice, inst, 'intruder', [{ role: 'not-a-role', db: 'app' }]);
          expect(res.status).toBe(404);
          expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: `mongodb instance "${inst}" not found` });
        }
      });

      it("another account's instance, by id and by name; it gets no user", async () => {
        for (const inst of [bobs.id, 'bobs']) {
          const res = await add(alice, inst, 'intruder');
          expect(res.status).toBe(404);
          expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: `mongodb instance "${inst}" not found` });
        }
        expect((await bob.get(users(bobs.id))).body.data.map((u: any) => u.name)).toEqual(['bobuser']);
      });
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().post(users(m.id), { username: 'x', password: 'password-1', roles: [] })).status).toBe(401);
    });
  });

  describe('GET /v2/mongodb/<id>/databases/<db>/users', () => {
    it('200: the users of that database only, name and roles, never a password', async () => {
      await add(alice, m.id, 'l1', [{ role: 'read', db: 'listdb' }], 'listdb');
      await add(
        alice,
        m.id,
        'l2',
        [
          { role: 'dbAdmin', db: 'listdb' },
          { role: 'read', db: 'other' },
        ],
        'listdb',
      );
      await add(alice, m.id, 'l3', [], 'otherdb');
      const res = await alice.get(users(m.id, 'listdb'));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: [
          { name: 'l1', roles: [{ role: 'read', db: 'listdb' }] },
          {
            name: 'l2',
            roles: [
              { role: 'dbAdmin', db: 'listdb' },
              { role: 'read', db: 'other' },
            ],
          },
        ],
      });
      for (const u of res.body.data) expect(keysOf(u)).toEqual(['name', 'roles']);
      expect(JSON.stringify(res.body)).not.toContain('password-1');
      expect((await alice.get(users('m', 'listdb'))).body).toEqual(res.body);
    });

    it('200: an empty list for a database without users', async () => {
      expect((await alice.get(users(m.id, 'empty'))).body).toEqual({ data: [] });
    });

    it('404: unknown, redis and foreign instances', async () => {
      for (const inst of ['000000000000000000000000', r.id, bobs.id, 'bobs']) {
        const res = await alice.get(users(inst));
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('INSTANCE_NOT_FOUND');
        expect(JSON.stringify(res.body)).not.toContain('bobuser');
      }
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().get(users(m.id))).status).toBe(401);
    });
  });

  describe('PATCH /v2/mongodb/<id>/databases/<db>/users/<user>', () => {
    const patch = (who: Account, inst: string, user: string, body: unknown, db = 'app') => who.patch(`${users(inst, db)}/${user}`, body);

    it('200 {"message"}: the password alone; the roles stay', async () => {
      await add(alice, m.id, 'p-pass', [{ role: 'read', db: 'app' }]);
      const res = await patch(alice, m.id, 'p-pass', { password: 'new-password' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ message: expect.stringMatching(/"p-pass".*"app"/) });
      expect(th.mongodb.authenticate(m.id, 'app', 'p-pass', 'new-password')).toBe(true);
      expect(th.mongodb.authenticate(m.id, 'app', 'p-pass', 'password-1')).toBe(false);
      const list = (await alice.get(users(m.id))).body.data;
      expect(list.find((u: any) => u.name === 'p-pass').roles).toEqual([{ role: 'read', db: 'app' }]);
    });

    it('200: sent roles replace the whole list; the password stays', async () => {
      await add(alice, m.id, 'p-roles', [
        { role: 'read', db: 'app' },
        { role: 'read', db: 'logs' },
      ]);
      const res = await patch(alice, m.id, 'p-roles', { roles: [{ role: 'dbAdmin', db: 'app' }] });
      expect(res.status).toBe(200);
      const list = (await alice.get(users(m.id))).body.data;
      expect(list.find((u: any) => u.name === 'p-roles').roles).toEqual([{ role: 'dbAdmin', db: 'app' }]);
      const engine = th.mongodb.usersOf(m.id, 'app');
      expect(engine.find((u) => u.name === 'p-roles')?.roles).toEqual([{ role: 'dbAdmin', db: 'app' }]);
      expect(th.mongodb.authenticate(m.id, 'app', 'p-roles', 'password-1')).toBe(true);
    });

    it('200: an empty role list takes every role away', async () => {
      await add(alice, m.id, 'p-none', [{ role: 'read', db: 'app' }]);
      expect((await patch(alice, m.id, 'p-none', { roles: [] })).status).toBe(200);
      expect((await alice.get(users(m.id))).body.data.find((u: any) => u.name === 'p-none').roles).toEqual([]);
    });

    it('200: both at once, with the instance addressed by name', async () => {
      await add(alice, m.id, 'p-both');
      expect((await patch(alice, 'm', 'p-both', { password: 'both-password', roles: [{ role: 'read', db: 'app' }] })).status).toBe(200);
      expect(th.mongodb.authenticate(m.id, 'app', 'p-both', 'both-password')).toBe(true);
      expect((await alice.get(users(m.id))).body.data.find((u: any) => u.name === 'p-both').roles).toEqual([{ role: 'read', db: 'app' }]);
    });

    describe('400', () => {
      it.each<[unknown, string | undefined]>([
        [{}, undefined],
        [{ password: 5 }, 'password'],
        [{ password: 'short' }, 'password'],
        [{ roles: 'read' }, 'roles'],
        [{ roles: [{ role: 'nope', db: 'app' }] }, 'roles[0].role'],
        [{ username: 'rename' }, 'username'],
      ])('a body %j; nothing changes', async (body, field) => {
        await add(alice, m.id, `p400-${field ?? 'empty'}`, [{ role: 'read', db: 'app' }]);
        const res = await patch(alice, m.id, `p400-${field ?? 'empty'}`, body);
        expect(res.status).toBe(400);
        expect(res.body.message).toEqual(expect.any(String));
        if (field) expect(res.body.field).toBe(field);
        expect(th.mongodb.authenticate(m.id, 'app', `p400-${field ?? 'empty'}`, 'password-1')).toBe(true);
      });

      it('no body at all', async () => {
        await add(alice, m.id, 'p-nobody');
        const res = await alice.request('PATCH', `${users(m.id)}/p-nobody`, {
          rawBody: '',
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).toBe(400);
        expect(res.body.code).toMatch(/^INVALID_/);
      });
    });

    it("400: hangar's own user (hangar on admin); on another account's instance the 404 comes first", async () => {
      const res = await patch(alice, m.id, 'hangar', { password: 'password-2' }, 'admin');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'INVALID_VALUE',
        field: 'username',
        message: expect.stringMatching(/hangar's own administrative user/),
      });
      const foreign = await patch(alice, bobs.id, 'hangar', { password: 'password-2' }, 'admin');
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: `mongodb instance "${bobs.id}" not found` });
    });

    describe('404', () => {
      it('an unknown user, naming it and the database', async () => {
        const res = await patch(alice, m.id, 'ghost', { password: 'password-2' });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'USER_NOT_FOUND', message: 'user "ghost" not found in database "app"' });
      });

      it('a user of another database', async () => {
        await add(alice, m.id, 'elsewhere', [], 'db1');
        expect((await patch(alice, m.id, 'elsewhere', { password: 'password-2' }, 'db2')).status).toBe(404);
      });

      it("another account's user, which keeps its password", async () => {
        for (const inst of [bobs.id, 'bobs']) {
          const res = await patch(alice, inst, 'bobuser', { password: 'stolen-password' });
          expect(res.status).toBe(404);
          expect(res.body.code).toBe('INSTANCE_NOT_FOUND');
        }
        expect(th.mongodb.authenticate(bobs.id, 'app', 'bobuser', 'bob-password')).toBe(true);
      });
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().patch(`${users(m.id)}/dup`, { password: 'password-3' })).status).toBe(401);
    });
  });

  describe('DELETE /v2/mongodb/<id>/databases/<db>/users/<user>', () => {
    it('200: a string naming user and database; gone from the list and the engine; can be added again', async () => {
      await add(alice, m.id, 'd1');
      const res = await alice.delete(`${users(m.id)}/d1`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: expect.stringMatching(/"d1".*"app"/) });
      expect((await alice.get(users(m.id))).body.data.map((u: any) => u.name)).not.toContain('d1');
      expect(th.mongodb.authenticate(m.id, 'app', 'd1', 'password-1')).toBe(false);
      expect((await add(alice, m.id, 'd1', [], 'app', 'password-2')).status).toBe(200);
      expect(th.mongodb.authenticate(m.id, 'app', 'd1', 'password-2')).toBe(true);
    });

    it('200: by instance name', async () => {
      await add(alice, m.id, 'd-name');
      expect((await alice.delete(`${users('m')}/d-name`)).status).toBe(200);
    });

    it("400: hangar's own user (hangar on admin), naming why", async () => {
      const res = await alice.delete(`${users(m.id, 'admin')}/hangar`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'INVALID_VALUE',
        field: 'username',
        message: expect.stringMatching(/hangar's own administrative user/),
      });
    });

    describe('404', () => {
      it('a user deleted already', async () => {
        await add(alice, m.id, 'd2');
        expect((await alice.delete(`${users(m.id)}/d2`)).status).toBe(200);
        const again = await alice.delete(`${users(m.id)}/d2`);
        expect(again.status).toBe(404);
        expect(again.body).toEqual({ code: 'USER_NOT_FOUND', message: 'user "d2" not found in database "app"' });
      });

      it("another account's user, which stays", async () => {
        expect((await alice.delete(`${users(bobs.id)}/bobuser`)).status).toBe(404);
        expect((await alice.delete(`${users('bobs')}/bobuser`)).status).toBe(404);
        expect(th.mongodb.authenticate(bobs.id, 'app', 'bobuser', 'bob-password')).toBe(true);
      });

      it('an unknown instance', async () => {
        expect((await alice.delete(`${users('000000000000000000000000')}/x`)).body.code).toBe('INSTANCE_NOT_FOUND');
      });
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().delete(`${users(m.id)}/dup`)).status).toBe(401);
    });
  });
});
