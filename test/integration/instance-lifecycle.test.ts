import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

/** Delete and rename: DELETING until gone, ACLs and users going or moving with the instance. */
describe.each(DIALECTS)('instance delete and rename on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;

  beforeAll(async () => ({ th, alice, bob } = await startWithTwoAccounts({ dialect })));
  afterAll(() => th.close());

  describe('DELETE /v2/instances/<name>/', () => {
    it('200: a string naming the instance; DELETING until gone, then 404 and out of the list', async () => {
      await alice.ready(redisBody('del-1'));
      const release = th.hold();
      try {
        const res = await alice.delete('/v2/instances/del-1/');
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: expect.stringContaining('"del-1"') });
        expect((await alice.get('/v2/instances/del-1/')).body.data.state).toBe('DELETING');
        const again = await alice.delete('/v2/instances/del-1/');
        expect(again.status).toBe(409);
        expect(again.body).toEqual({ code: 'INSTANCE_DELETING', message: 'instance "del-1" is being deleted' });
      } finally {
        release();
      }
      await alice.waitGone('del-1');
      const list = await alice.get('/v2/instances/');
      expect(list.body.data.map((r: any) => r.name)).not.toContain('del-1');
      expect((await alice.delete('/v2/instances/del-1/')).status).toBe(404);
    });

    it('200: an instance still building can be deleted', async () => {
      const release = th.hold();
      try {
        await alice.post('/v2/instances/', redisBody('del-building'));
        await alice.waitFor('del-building', (r) => r?.state === 'BUILDING');
        expect((await alice.delete('/v2/instances/del-building/')).status).toBe(200);
      } finally {
        release();
      }
      await alice.waitGone('del-building');
    });

    it('takes its ACLs and users with it: a new instance of the same name starts empty', async () => {
      const old = await alice.ready(mongoBody('del-2', 'mongodb_singledb'));
      expect((await alice.post('/v2/instances/del-2/acls/', { cidr_mask: '10.0.0.1', description: 'x' })).status).toBe(200);
      expect(
        (
          await alice.post(`/v2/mongodb/${old.id}/databases/app/users`, {
            username: 'u1',
            password: 'password-1',
            roles: [{ role: 'read', db: 'app' }],
          })
        ).status,
      ).toBe(200);
      expect((await alice.delete('/v2/instances/del-2/')).status).toBe(200);
      await alice.waitGone('del-2');
      const db = th.hangar.store.db;
      expect(await db.selectFrom('acls').select('id').where('instance_id', '=', old.id).execute()).toEqual([]);
      expect(await db.selectFrom('mongodb_users').select('id').where('instance_id', '=', old.id).execute()).toEqual([]);
      expect(await db.selectFrom('ports').select('port').where('instance_id', '=', old.id).execute()).toEqual([]);
      expect(th.runtime.rulesOf(old.id)).toBeUndefined();
      const fresh = await alice.ready(mongoBody('del-2', 'mongodb_singledb'));
      expect(fresh.id).not.toBe(old.id);
      expect((await alice.get('/v2/instances/del-2/acls/')).body.data).toEqual([]);
      expect((await alice.get(`/v2/mongodb/${fresh.id}/databases/app/users`)).body.data).toEqual([]);
      expect((await alice.get(`/v2/mongodb/${old.id}/databases/app/users`)).status).toBe(404);
    });

    describe('404', () => {
      it('an unknown name', async () => {
        const res = await alice.delete('/v2/instances/nope/');
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('INSTANCE_NOT_FOUND');
      });

      it("another account's instance, which stays", async () => {
        await bob.ready(redisBody('bobs-keep'));
        const res = await alice.delete('/v2/instances/bobs-keep/');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "bobs-keep" not found' });
        expect((await bob.get('/v2/instances/bobs-keep/')).body.data.state).toBe('ACTIVE');
      });
    });

    it('401: without credentials, and the instance stays', async () => {
      await alice.post('/v2/instances/', redisBody('del-anon'));
      expect((await th.anonymous().delete('/v2/instances/del-anon/')).status).toBe(401);
      expect((await alice.get('/v2/instances/del-anon/')).status).toBe(200);
    });
  });

  describe('POST /v2/instances/<name>/rename/', () => {
    it('200: a string naming old and new name; the instance, its ACLs and users move with it', async () => {
      const inst = await alice.ready(mongoBody('ren-1', 'mongodb_singledb'));
      const aclId = (await alice.post('/v2/instances/ren-1/acls/', { cidr_mask: '10.0.0.1', description: 'x' })).body.data;
      await alice.post(`/v2/mongodb/${inst.id}/databases/app/users`, {
        username: 'u1',
        password: 'password-1',
        roles: [{ role: 'read', db: 'app' }],
      });

      const res = await alice.post('/v2/instances/ren-1/rename/', { name: 'ren-2' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: expect.stringMatching(/"ren-1".*"ren-2"/) });

      expect((await alice.get('/v2/instances/ren-1/')).status).toBe(404);
      const moved = await alice.waitFor('ren-2', (r) => r?.state === 'ACTIVE');
      expect(moved).toMatchObject({
        id: inst.id,
        name: 'ren-2',
        connect_string: inst.connect_string,
        api_key: inst.api_key,
        created: inst.created,
      });
      const acls = (await alice.get('/v2/instances/ren-2/acls/')).body.data;
      expect(acls).toHaveLength(1);
      expect(acls[0]).toMatchObject({ _id: { $oid: aclId }, instance: 'ren-2' });
      expect((await alice.get(`/v2/instances/ren-2/acls/${aclId}/`)).body.data.instance).toBe('ren-2');
      expect((await alice.get('/v2/instances/ren-1/acls/')).status).toBe(404);
      const users = [{ name: 'u1', roles: [{ role: 'read', db: 'app' }] }];
      expect((await alice.get(`/v2/mongodb/${inst.id}/databases/app/users`)).body.data).toEqual(users);
      expect((await alice.get('/v2/mongodb/ren-2/databases/app/users')).body.data).toEqual(users);
      expect((await alice.get('/v2/mongodb/ren-1/databases/app/users')).status).toBe(404);
      expect(th.mongodb.authenticate(inst.id, 'app', 'u1', 'password-1')).toBe(true);
    });

    it('200: the old name is free again', async () => {
      await alice.post('/v2/instances/', redisBody('ren-free'));
      expect((await alice.post('/v2/instances/ren-free/rename/', { name: 'ren-freed' })).status).toBe(200);
      expect((await alice.post('/v2/instances/', redisBody('ren-free'))).status).toBe(200);
    });

    describe('400', () => {
      it.each([[''], ['a.b'], ['x'.repeat(65)]])('a new name %j outside the rules', async (name) => {
        await alice.post('/v2/instances/', redisBody('ren-bad'));
        const res = await alice.post('/v2/instances/ren-bad/rename/', { name });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'name' });
      });

      it.each<[unknown, string]>([
        [{}, 'name'],
        [{ name: 5 }, 'name'],
        [{ name: 'ok', also: 1 }, 'also'],
      ])('a body %j', async (body, field) => {
        await alice.post('/v2/instances/', redisBody('ren-body'));
        const res = await alice.post('/v2/instances/ren-body/rename/', body);
        expect(res.status).toBe(400);
        expect(res.body.field).toBe(field);
      });
    });

    describe('409', () => {
      it('a new name taken in the account; both instances keep their names', async () => {
        const a = (await alice.post('/v2/instances/', redisBody('ren-a'))).body.data;
        const b = (await alice.post('/v2/instances/', redisBody('ren-b'))).body.data;
        const res = await alice.post('/v2/instances/ren-a/rename/', { name: 'ren-b' });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ code: 'NAME_TAKEN', message: 'an instance named "ren-b" already exists in this account' });
        expect((await alice.get('/v2/instances/ren-a/')).body.data.id).toBe(a.id);
        expect((await alice.get('/v2/instances/ren-b/')).body.data.id).toBe(b.id);
      });

      it('a name taken in another account is free here', async () => {
        await bob.post('/v2/instances/', redisBody('ren-bobs'));
        await alice.post('/v2/instances/', redisBody('ren-mine'));
        expect((await alice.post('/v2/instances/ren-mine/rename/', { name: 'ren-bobs' })).status).toBe(200);
      });

      it('an instance being deleted', async () => {
        await alice.ready(redisBody('ren-del'));
        const release = th.hold();
        try {
          await alice.delete('/v2/instances/ren-del/');
          const res = await alice.post('/v2/instances/ren-del/rename/', { name: 'ren-del-2' });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe('INSTANCE_DELETING');
        } finally {
          release();
        }
      });
    });

    describe('404', () => {
      it('an unknown name', async () => {
        const res = await alice.post('/v2/instances/nope/rename/', { name: 'nope-2' });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "nope" not found' });
      });

      it("another account's instance, which keeps its name", async () => {
        await bob.post('/v2/instances/', redisBody('bobs-ren'));
        const res = await alice.post('/v2/instances/bobs-ren/rename/', { name: 'stolen' });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "bobs-ren" not found' });
        expect((await bob.get('/v2/instances/bobs-ren/')).status).toBe(200);
        expect((await alice.get('/v2/instances/stolen/')).status).toBe(404);
      });
    });

    it('401: without credentials', async () => {
      await alice.post('/v2/instances/', redisBody('ren-anon'));
      expect((await th.anonymous().post('/v2/instances/ren-anon/rename/', { name: 'x' })).status).toBe(401);
      expect((await alice.get('/v2/instances/ren-anon/')).status).toBe(200);
      expect((await alice.get('/v2/instances/x/')).status).toBe(404);
    });
  });
});
