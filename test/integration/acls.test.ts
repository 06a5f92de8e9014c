import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, keysOf, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { warningsOf } from '../../src/client/hangar-client.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

const ACL_KEYS = ['_cls', '_id', 'cidr_mask', 'date_created', 'description', 'instance', 'login', 'metadata', 'port'];
const EXTENDED_KEYS = [...ACL_KEYS, 'instance_id', 'instance_type', 'service_type'];
const portOf = (s: string): number => Number(/:(\d+)$/.exec(s)![1]);

describe.each(DIALECTS)('ACLs on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;
  let redis: any;
  let mongo: any;
  let es: any;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    redis = await alice.ready(redisBody('r'));
    mongo = await alice.ready(mongoBody('m'));
    es = await alice.ready(esBody('e'));
    await bob.ready(redisBody('r'));
    await bob.ready(redisBody('bobs-only'));
  });
  afterAll(() => th.close());

  const create = (who: Account, name: string, body: Record<string, unknown>) => who.post(`/v2/instances/${name}/acls/`, body);

  describe('GET /v2/instances/<name>/acls/', () => {
    it('200: an empty list for an instance without ACLs', async () => {
      await alice.post('/v2/instances/', redisBody('no-acls'));
      expect((await alice.get('/v2/instances/no-acls/acls/')).body).toEqual({ data: [] });
    });

    it('200: ACL records as spec 2.4, port = the instance public port, in creation order', async () => {
      await alice.ready(redisBody('list'));
      const before = Date.now();
      const id1 = (await create(alice, 'list', { cidr_mask: '192.0.2.1', description: 'one' })).body.data;
      const id2 = (await create(alice, 'list', { cidr_mask: '198.51.100.0/24', description: 'two' })).body.data;
      const res = await alice.get('/v2/instances/list/acls/');
      expect(res.status).toBe(200);
      const inst = (await alice.get('/v2/instances/list/')).body.data;
      expect(res.body.data).toEqual([
        {
          _cls: 'Acl',
          _id: { $oid: id1 },
          cidr_mask: '192.0.2.1',
          date_created: { $date: expect.any(Number) },
          description: 'one',
          instance: 'list',
          login: alice.login,
          metadata: {},
          port: portOf(inst.public_connect_string),
        },
        expect.objectContaining({
          _id: { $oid: id2 },
          cidr_mask: '198.51.100.0/24',
          description: 'two',
          port: portOf(inst.public_connect_string),
        }),
      ]);
      for (const a of res.body.data) {
        expect(keysOf(a)).toEqual(ACL_KEYS.sort());
        expect(Number.isInteger(a.date_created.$date)).toBe(true);
        expect(a.date_created.$date).toBeGreaterThanOrEqual(before);
      }
    });

    it('200: on mongodb the port is the first host of the connect string; elasticsearch entries add transport and kibana', async () => {
      await create(alice, 'm', { cidr_mask: '192.0.2.2', description: 'm' });
      const m = (await alice.get('/v2/instances/m/acls/')).body.data[0];
      expect(m.port).toBe(portOf(mongo.connect_string.split(',')[0]));
      await create(alice, 'e', { cidr_mask: '192.0.2.3', description: 'e' });
      const e = (await alice.get('/v2/instances/e/acls/')).body.data[0];
      expect(keysOf(e)).toEqual([...ACL_KEYS, 'kibana', 'transport'].sort());
      expect(e).toMatchObject({ port: portOf(es.connection_strings.public.http), transport: false, kibana: false });
    });

    it("404: an unknown instance, and another account's", async () => {
      expect((await alice.get('/v2/instances/nope/acls/')).body).toEqual({
        code: 'INSTANCE_NOT_FOUND',
        message: 'instance "nope" not found',
      });
      await create(bob, 'r', { cidr_mask: '203.0.113.9', description: 'bobs' });
      await create(bob, 'bobs-only', { cidr_mask: '203.0.113.10', description: 'bobs' });
      const res = await alice.get('/v2/instances/bobs-only/acls/');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "bobs-only" not found' });
      // alice's own "r" shows only alice's ACLs, never bob's on his "r"
      const mine = (await alice.get('/v2/instances/r/acls/')).body.data;
      expect(mine.map((a: any) => a.cidr_mask)).not.toContain('203.0.113.9');
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().get('/v2/instances/r/acls/')).status).toBe(401);
    });
  });

  describe('POST /v2/instances/<name>/acls/', () => {
    it('200: the id of the new ACL; the edge admits it', async () => {
      const res = await create(alice, 'r', { cidr_mask: '192.0.2.10', description: 'office' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: expect.stringMatching(/^[0-9a-f]{24}$/) });
      expect(th.runtime.rulesOf(redis.id)).toContainEqual({ cidr: '192.0.2.10', transport: false, kibana: false });
    });

    it.each([
      ['10.1.2.3/8', '10.0.0.0/8'],
      ['10.0.0.5/32', '10.0.0.5/32'],
      ['10.0.0.6', '10.0.0.6'],
      ['0.0.0.0/0', '0.0.0.0/0'],
      ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
      ['2001:db8:1:2::5/64', '2001:db8:1:2::/64'],
      ['::1/128', '::1/128'],
      ['2001:DB8::0:7/128', '2001:db8::7/128'],
    ])('200: %s is stored as %s', async (input, stored) => {
      const id = (await create(alice, 'r', { cidr_mask: input, description: 'n' })).body.data;
      expect((await alice.get(`/v2/instances/r/acls/${id}/`)).body.data.cidr_mask).toBe(stored);
      expect((await alice.get('/v2/instances/r/acls/')).body.data.find((a: any) => a._id.$oid === id).cidr_mask).toBe(stored);
      expect(th.runtime.rulesOf(redis.id)).toContainEqual({ cidr: stored, transport: false, kibana: false });
    });

    describe('Warning headers', () => {
      // instances of their own: the ranges of these tests are taken on `r` by the tests above
      beforeAll(async () => {
        await alice.ready(redisBody('w'));
        await alice.ready(redisBody('w2'));
      });

      const ALL_V4 = 'admits every IPv4 address: anyone on the internet can reach the instance';
      it.each<[string, string[]]>([
        ['10.1.2.7/8', ['10.1.2.7/8 was stored as 10.0.0.0/8']],
        ['2001:db8:1:2::9/64', ['2001:db8:1:2::9/64 was stored as 2001:db8:1:2::/64']],
        ['0.0.0.0/0', [`0.0.0.0/0 ${ALL_V4}`]],
        ['10.9.9.9/0', ['10.9.9.9/0 was stored as 0.0.0.0/0', `0.0.0.0/0 ${ALL_V4}`]],
        ['::/0', ['::/0 admits every IPv6 address: anyone on the internet can reach the instance']],
        // written otherwise, but the same address or range: nothing to say
        ['2001:DB8:0:0:0:0:0:77', []],
        ['10.0.0.77/32', []],
        ['172.16.0.0/12', []],
      ])('200: %s is answered with a Warning header for each thing to know of it as stored', async (input, expected) => {
        const res = await create(alice, 'w', { cidr_mask: input, description: 'w' });
        expect(res.status).toBe(200);
        expect(warningsOf(res.headers.get('warning'))).toEqual(expected);
        if (expected.length > 0) expect(res.headers.get('warning')).toMatch(/^299 hangar "/);
        expect((await alice.delete(`/v2/instances/w/acls/${res.body.data}/`)).status).toBe(200);
      });

      it('200: the warnings of a whole list put at once', async () => {
        const res = await alice.request('PUT', '/v2/instances/w2/acls/', {
          body: [
            { cidr_mask: '192.0.2.1', description: 'a' },
            { cidr_mask: '198.51.100.7/24', description: 'b' },
          ],
        });
        expect(res.status).toBe(200);
        expect(warningsOf(res.headers.get('warning'))).toEqual(['198.51.100.7/24 was stored as 198.51.100.0/24']);
        expect((await alice.request('PUT', '/v2/instances/w2/acls/', { body: [] })).status).toBe(200);
      });
    });

    it('200: elasticsearch takes transport or kibana', async () => {
      const t = (await create(alice, 'e', { cidr_mask: '192.0.2.20', description: 't', transport: true })).body.data;
      const k = (await create(alice, 'e', { cidr_mask: '192.0.2.21', description: 'k', kibana: true })).body.data;
      expect((await alice.get(`/v2/instances/e/acls/${t}/`)).body.data).toMatchObject({ transport: true, kibana: false });
      expect((await alice.get(`/v2/instances/e/acls/${k}/`)).body.data).toMatchObject({ transport: false, kibana: true });
      expect(th.runtime.rulesOf(es.id)).toEqual(
        expect.arrayContaining([
          { cidr: '192.0.2.20', transport: true, kibana: false },
          { cidr: '192.0.2.21', transport: false, kibana: true },
        ]),
      );
    });

    it('200: transport and kibana set to false are accepted on any service', async () => {
      expect((await create(alice, 'm', { cidr_mask: '192.0.2.30', description: 'f', transport: false, kibana: false })).status).toBe(200);
    });

    describe('400', () => {
      it.each([['10.0.0.256'], ['abc'], ['10.0.0.1/33'], [''], ['10.0.0'], ['1.2.3.4/'], ['fe80::1%eth0'], [' 1.2.3.4']])(
        'cidr_mask %j is neither an address nor a range',
        async (cidr) => {
          const res = await create(alice, 'r', { cidr_mask: cidr, description: 'x' });
          expect(res.status).toBe(400);
          expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'cidr_mask', message: expect.stringContaining('CIDR') });
        },
      );

      it('transport and kibana together (spec 7.4)', async () => {
        const res = await create(alice, 'e', { cidr_mask: '192.0.2.40', description: 'x', transport: true, kibana: true });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'transport', message: expect.stringContaining('kibana') });
      });

      it.each([
        ['r', 'transport'],
        ['r', 'kibana'],
        ['m', 'transport'],
        ['m', 'kibana'],
      ])('on %s: %s on a non-elasticsearch instance (spec 7.5)', async (name, flag) => {
        const res = await create(alice, name, { cidr_mask: '192.0.2.41', description: 'x', [flag]: true });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: flag, message: expect.stringContaining('elasticsearch') });
      });

      it.each<[Record<string, unknown>, string]>([
        [{ description: 'x' }, 'cidr_mask'],
        [{ cidr_mask: '192.0.2.42' }, 'description'],
        [{ cidr_mask: 192, description: 'x' }, 'cidr_mask'],
        [{ cidr_mask: '192.0.2.42', description: 5 }, 'description'],
        [{ cidr_mask: '192.0.2.42', description: 'x', transport: 'yes' }, 'transport'],
        [{ cidr_mask: '192.0.2.42', description: 'x', port: 80 }, 'port'],
      ])('a body %j', async (body, field) => {
        const res = await create(alice, 'r', body);
        expect(res.status).toBe(400);
        expect(res.body.field).toBe(field);
      });

      it('every problem at once: an unknown field, the range and the description', async () => {
        const res = await create(alice, 'r', { cidr_mask: '10.0.0.1/40', description: 'x'.repeat(257), port: 80 });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', field: 'port', message: 'unknown field "port"' });
        expect(res.body.errors.map((e: any) => e.field)).toEqual(['port', 'cidr_mask', 'description']);
      });

      it('every problem of every item of a replaced list', async () => {
        const res = await alice.request('PUT', '/v2/instances/r/acls/', {
          body: [
            { cidr_mask: '192.0.2.1', description: 'ok' },
            { cidr_mask: 'bad', description: 'x' },
            { cidr_mask: '192.0.2.2', description: 'x', transport: true },
          ],
        });
        expect(res.status).toBe(400);
        expect(res.body.field).toBe('[1].cidr_mask');
        expect(res.body.errors.map((e: any) => e.field)).toEqual(['[1].cidr_mask', '[2].transport']);
      });

      it('nothing is recorded by a refused request', async () => {
        const before = (await alice.get('/v2/instances/r/acls/')).body.data.length;
        await create(alice, 'r', { cidr_mask: 'bad', description: 'x' });
        expect((await alice.get('/v2/instances/r/acls/')).body.data).toHaveLength(before);
      });
    });

    describe('409', () => {
      it('the same range twice, however written', async () => {
        expect((await create(alice, 'r', { cidr_mask: '192.0.2.50', description: 'a' })).status).toBe(200);
        const res = await create(alice, 'r', { cidr_mask: '192.0.2.50/32', description: 'b' });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ code: 'ACL_EXISTS', message: 'an ACL for 192.0.2.50 already exists on instance "r"' });
        expect((await create(alice, 'r', { cidr_mask: '192.0.2.52/32', description: 'c' })).status).toBe(200);
        const again = await create(alice, 'r', { cidr_mask: '192.0.2.52', description: 'd' });
        expect(again.status).toBe(409);
        expect(again.body).toEqual({ code: 'ACL_EXISTS', message: 'an ACL for 192.0.2.52/32 already exists on instance "r"' });
        // host bits are cleared: 198.51.100.53/24 is 198.51.100.0/24
        expect((await create(alice, 'r', { cidr_mask: '198.51.100.0/24', description: 'e' })).status).toBe(200);
        expect((await create(alice, 'r', { cidr_mask: '198.51.100.53/24', description: 'f' })).body).toEqual({
          code: 'ACL_EXISTS',
          message: 'an ACL for 198.51.100.0/24 already exists on instance "r"',
        });
      });

      it('an instance being deleted', async () => {
        await alice.ready(redisBody('acl-del'));
        const release = th.hold();
        try {
          await alice.delete('/v2/instances/acl-del/');
          const res = await create(alice, 'acl-del', { cidr_mask: '192.0.2.51', description: 'x' });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe('INSTANCE_DELETING');
        } finally {
          release();
        }
      });
    });

    it("404: an unknown instance, and another account's (which gets no ACL)", async () => {
      expect((await create(alice, 'nope', { cidr_mask: '192.0.2.60', description: 'x' })).status).toBe(404);
      await bob.ready(redisBody('bob-acl-target'));
      const res = await create(alice, 'bob-acl-target', { cidr_mask: '192.0.2.60', description: 'x' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "bob-acl-target" not found' });
      expect((await bob.get('/v2/instances/bob-acl-target/acls/')).body.data).toEqual([]);
    });

    it('401: without credentials', async () => {
      expect((await th.anonymous().post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.61', description: 'x' })).status).toBe(401);
    });
  });

  describe('GET /v2/instances/<name>/acls/<id>/', () => {
    it('200: the extended form', async () => {
      const id = (await create(alice, 'r', { cidr_mask: '192.0.2.70', description: 'ext' })).body.data;
      const res = await alice.get(`/v2/instances/r/acls/${id}/`);
      expect(res.status).toBe(200);
      expect(keysOf(res.body.data)).toEqual(EXTENDED_KEYS.sort());
      expect(res.body.data).toEqual({
        _cls: 'Acl',
        _id: { $oid: id },
        cidr_mask: '192.0.2.70',
        date_created: { $date: expect.any(Number) },
        description: 'ext',
        instance: 'r',
        login: alice.login,
        metadata: {},
        port: portOf(redis.public_connect_string),
        instance_id: { $oid: redis.id },
        instance_type: 'redis_ha_instance',
        service_type: 'redis',
      });
    });

    describe('404', () => {
      it('an unknown id, naming it and the instance', async () => {
        const res = await alice.get('/v2/instances/r/acls/000000000000000000000000/');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'ACL_NOT_FOUND', message: 'ACL "000000000000000000000000" not found on instance "r"' });
      });

      it('the id of an ACL of another instance of the account', async () => {
        const id = (await create(alice, 'm', { cidr_mask: '192.0.2.71', description: 'x' })).body.data;
        expect((await alice.get(`/v2/instances/r/acls/${id}/`)).status).toBe(404);
      });

      it("another account's ACL, through its instance name or one's own instance", async () => {
        const id = (await create(bob, 'r', { cidr_mask: '192.0.2.72', description: 'bobs' })).body.data;
        const viaMine = await alice.get(`/v2/instances/r/acls/${id}/`);
        expect(viaMine.status).toBe(404);
        expect(viaMine.body.code).toBe('ACL_NOT_FOUND');
        expect(JSON.stringify(viaMine.body)).not.toContain('192.0.2.72');
      });
    });

    it('401: without credentials', async () => {
      const id = (await create(alice, 'r', { cidr_mask: '192.0.2.73', description: 'x' })).body.data;
      expect((await th.anonymous().get(`/v2/instances/r/acls/${id}/`)).status).toBe(401);
    });
  });

  describe('DELETE /v2/instances/<name>/acls/<id>/', () => {
    it('200: an empty object; the ACL is gone from the API and from the edge; the range can be added again', async () => {
      const id = (await create(alice, 'r', { cidr_mask: '192.0.2.80', description: 'x' })).body.data;
      const res = await alice.delete(`/v2/instances/r/acls/${id}/`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: {} });
      expect((await alice.get(`/v2/instances/r/acls/${id}/`)).status).toBe(404);
      expect((await alice.get('/v2/instances/r/acls/')).body.data.map((a: any) => a._id.$oid)).not.toContain(id);
      expect(th.runtime.rulesOf(redis.id)).not.toContainEqual({ cidr: '192.0.2.80', transport: false, kibana: false });
      expect((await create(alice, 'r', { cidr_mask: '192.0.2.80', description: 'again' })).status).toBe(200);
    });

    describe('404', () => {
      it('an ACL deleted already', async () => {
        const id = (await create(alice, 'r', { cidr_mask: '192.0.2.81', description: 'x' })).body.data;
        expect((await alice.delete(`/v2/instances/r/acls/${id}/`)).status).toBe(200);
        const again = await alice.delete(`/v2/instances/r/acls/${id}/`);
        expect(again.status).toBe(404);
        expect(again.body.code).toBe('ACL_NOT_FOUND');
      });

      it("another account's ACL, which stays", async () => {
        const id = (await create(bob, 'r', { cidr_mask: '192.0.2.82', description: 'bobs' })).body.data;
        expect((await alice.delete(`/v2/instances/r/acls/${id}/`)).status).toBe(404);
        expect((await bob.get(`/v2/instances/r/acls/${id}/`)).status).toBe(200);
      });

      it('an unknown instance', async () => {
        const res = await alice.delete('/v2/instances/nope/acls/000000000000000000000000/');
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "nope" not found' });
      });
    });

    it('401: without credentials, and the ACL stays', async () => {
      const id = (await create(alice, 'r', { cidr_mask: '192.0.2.83', description: 'x' })).body.data;
      expect((await th.anonymous().delete(`/v2/instances/r/acls/${id}/`)).status).toBe(401);
      expect((await alice.get(`/v2/instances/r/acls/${id}/`)).status).toBe(200);
    });
  });
});
