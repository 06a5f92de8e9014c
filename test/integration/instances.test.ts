import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warningsOf } from '../../src/client/hangar-client.js';
import { esBody, keysOf, mongoBody, redisBody, type MongoType } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

/** Fields of every instance record (spec 2.1), plus `state` for every service and hangar's `engine`. */
const COMMON = ['api_key', 'caster', 'created', 'engine', 'id', 'name', 'plan', 'service', 'state', 'type', 'version', 'zone'];
const RECORD_KEYS = {
  redis: [...COMMON, 'clb_id', 'connect_string', 'password', 'public_connect_string', 'servicenet_connect_string'].sort(),
  mongodb: [...COMMON, 'connect_string'].sort(),
  mongodb_sharded: [...COMMON, 'connect_string', 'ssl_connect_string'].sort(),
  elasticsearch: [...COMMON, 'connection_strings', 'encrypted', 'settings'].sort(),
};
/** Fields the creation record (spec 2.3) adds to the instance record. */
const CREATION_EXTRA = (service: string) => [
  '_id',
  'ansible_group',
  'build_id',
  'dtcreated',
  `${service}_version`,
  'instance_name_prior',
  'instance_service',
  'instance_type',
  'login',
  'login_prior',
];

const HOST_PORT = /^127\.0\.0\.1:(\d+)$/;
const portOf = (s: string): number => Number(/:(\d+)$/.exec(s)![1]);

describe.each(DIALECTS)('instances on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;

  beforeAll(async () => ({ th, alice, bob } = await startWithTwoAccounts({ dialect })));
  afterAll(() => th.close());

  describe('GET /v2/instances/', () => {
    it('200: an empty list for a new account', async () => {
      const carol = await th.signup();
      const res = await carol.get('/v2/instances/');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [] });
    });

    it("200: the account's instances in creation order, each as its detail record, none of another account", async () => {
      const dave = await th.signup();
      await dave.ready(redisBody('l-redis'));
      await dave.ready(mongoBody('l-mongo'));
      await dave.ready(esBody('l-es'));
      await bob.post('/v2/instances/', redisBody('l-bobs'));
      const res = await dave.get('/v2/instances/');
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(['data']);
      expect(res.body.data.map((r: any) => r.name)).toEqual(['l-redis', 'l-mongo', 'l-es']);
      for (const rec of res.body.data) {
        const one = await dave.get(`/v2/instances/${rec.name}/`);
        expect(rec).toEqual(one.body.data);
      }
    });

    it('401: without credentials', async () => {
      const res = await th.anonymous().get('/v2/instances/');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: expect.any(String), code: 'UNAUTHORIZED' });
    });
  });

  describe('POST /v2/instances/', () => {
    it('200: the creation record of a redis instance (2.3 plus the detail fields), REQUESTED', async () => {
      const before = Date.now();
      const res = await alice.post('/v2/instances/', redisBody('created-1'));
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(['data']);
      const rec = res.body.data;
      expect(keysOf(rec)).toEqual([...RECORD_KEYS.redis, ...CREATION_EXTRA('redis')].sort());
      expect(rec).toMatchObject({
        _id: { $oid: expect.stringMatching(/^[0-9a-f]{24}$/) },
        ansible_group: null,
        instance_name_prior: null,
        instance_service: 'redis',
        instance_type: 'redis_ha_instance',
        redis_version: '7.0.15',
        login: alice.login,
        login_prior: null,
        name: 'created-1',
        plan: 500,
        state: 'REQUESTED',
        zone: 'US-Dallas',
        service: 'redis',
        type: 'redis_ha_instance',
        version: '7.0.15',
        caster: null,
        clb_id: null,
      });
      expect(rec.id).toBe(rec._id.$oid);
      expect(rec.build_id).toEqual(expect.any(String));
      expect(rec.build_id.length).toBeGreaterThan(0);
      // `created` is the creation time in UTC, to the second; `dtcreated` the same in epoch ms.
      expect(rec.created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      expect(Number.isInteger(rec.dtcreated.$date)).toBe(true);
      expect(rec.dtcreated.$date).toBeGreaterThanOrEqual(before);
      expect(rec.dtcreated.$date).toBeLessThanOrEqual(Date.now());
      expect(Date.parse(`${rec.created.replace(' ', 'T')}Z`)).toBe(Math.floor(rec.dtcreated.$date / 1000) * 1000);
      expect(rec.connect_string).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(rec.public_connect_string).toBe(rec.connect_string);
      expect(rec.servicenet_connect_string).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(portOf(rec.servicenet_connect_string)).not.toBe(portOf(rec.connect_string));
      expect(rec.password).toMatch(/^[0-9a-f]{32}$/);
      expect(rec.api_key).toMatch(/^[0-9a-f]{32}$/);
    });

    it.each<[MongoType, number]>([
      ['mongodb_replica_set', 3],
      ['mongodb_jumbo_replica_set', 3],
      ['mongodb_singledb', 1],
      ['mongodb_sharded', 1],
    ])('200: the creation record of a %s instance lists %i host:port', async (type, hosts) => {
      const res = await alice.post('/v2/instances/', mongoBody(`c-${type}`, type));
      expect(res.status).toBe(200);
      const rec = res.body.data;
      const keys = type === 'mongodb_sharded' ? RECORD_KEYS.mongodb_sharded : RECORD_KEYS.mongodb;
      expect(keysOf(rec)).toEqual([...keys, ...CREATION_EXTRA('mongodb')].sort());
      expect(rec).toMatchObject({
        mongodb_version: '3.4.2',
        instance_service: 'mongodb',
        instance_type: type,
        state: 'REQUESTED',
        login: alice.login,
      });
      const entries = rec.connect_string.split(',');
      expect(entries).toHaveLength(hosts);
      for (const e of entries) expect(e).toMatch(HOST_PORT);
      expect(new Set(entries.map(portOf)).size).toBe(hosts);
      if (type === 'mongodb_sharded') {
        expect(rec.ssl_connect_string).toMatch(HOST_PORT);
        expect(portOf(rec.ssl_connect_string)).not.toBe(portOf(rec.connect_string));
      }
    });

    it('200: the creation record of an elasticsearch instance', async () => {
      const res = await alice.post('/v2/instances/', esBody('c-es'));
      expect(res.status).toBe(200);
      const rec = res.body.data;
      expect(keysOf(rec)).toEqual([...RECORD_KEYS.elasticsearch, ...CREATION_EXTRA('elasticsearch')].sort());
      expect(rec).toMatchObject({
        elasticsearch_version: '6.4.1',
        instance_service: 'elasticsearch',
        state: 'REQUESTED',
        encrypted: false,
        settings: {},
      });
    });

    it('the worker, not the request, takes the instance through BUILDING to ACTIVE', async () => {
      const release = th.hold();
      try {
        const res = await alice.post('/v2/instances/', redisBody('states-1'));
        expect(res.body.data.state).toBe('REQUESTED');
        const building = await alice.waitFor('states-1', (r) => r?.state !== 'REQUESTED');
        expect(building.state).toBe('BUILDING');
      } finally {
        release();
      }
      const rec = await alice.waitFor('states-1', (r) => r?.state !== 'BUILDING');
      expect(rec).toMatchObject({ state: 'ACTIVE', plan: 500 });
    });

    it('200: encryption on mongodb and elasticsearch; the elasticsearch record says encrypted', async () => {
      expect((await alice.post('/v2/instances/', mongoBody('enc-m', 'mongodb_singledb', { encryption: true }))).status).toBe(200);
      const es = await alice.post('/v2/instances/', esBody('enc-es', { encryption: true }));
      expect(es.status).toBe(200);
      expect(es.body.data.encrypted).toBe(true);
      expect((await alice.get('/v2/instances/enc-es/')).body.data.encrypted).toBe(true);
    });

    it('200: encryption false is accepted on redis (it asks for nothing)', async () => {
      expect((await alice.post('/v2/instances/', redisBody('enc-false', { encryption: false }))).status).toBe(200);
    });

    it.each(['mmapv1', 'wiredtiger'])('200: storage_engine %s on mongodb', async (engine) => {
      expect((await alice.post('/v2/instances/', mongoBody(`se-${engine}`, 'mongodb_singledb', { storage_engine: engine }))).status).toBe(
        200,
      );
    });

    it('200: ACLs given in the create body are recorded, normalised, with the instance', async () => {
      const acls3 = [
        { cidr_mask: '10.1.2.3/8', description: 'office' },
        { cidr_mask: '192.0.2.7', description: 'ci' },
        { cidr_mask: '192.0.2.8/32', description: 'vpn' },
      ];
      const res = await alice.post('/v2/instances/', redisBody('with-acls', { acls: acls3 }));
      expect(res.status).toBe(200);
      const acls = await alice.get('/v2/instances/with-acls/acls/');
      expect(acls.body.data.map((a: any) => [a.cidr_mask, a.description])).toEqual([
        ['10.0.0.0/8', 'office'],
        ['192.0.2.7', 'ci'],
        ['192.0.2.8/32', 'vpn'],
      ]);
    });

    it('200: ACLs of the create body stored otherwise than written are named in Warning headers', async () => {
      const res = await alice.post(
        '/v2/instances/',
        redisBody('warned', {
          acls: [
            { cidr_mask: '10.1.2.3/8', description: 'office' },
            { cidr_mask: '::/0', description: 'everyone' },
            { cidr_mask: '192.0.2.7', description: 'ci' },
          ],
        }),
      );
      expect(res.status).toBe(200);
      expect(warningsOf(res.headers.get('warning'))).toEqual([
        '10.1.2.3/8 was stored as 10.0.0.0/8',
        '::/0 admits every IPv6 address: anyone on the internet can reach the instance',
      ]);
      expect((await alice.post('/v2/instances/', redisBody('not-warned'))).headers.get('warning')).toBeNull();
    });

    it.each([['a'], ['A-b_9'], ['x'.repeat(64)], ['123'], ['-_-']])('200: the name %j follows the rules', async (name) => {
      const res = await alice.post('/v2/instances/', redisBody(name));
      expect(res.status).toBe(200);
      expect(res.body.data.name).toBe(name);
    });

    it('200: a name keeps the case it was sent in; lookups by name are exact', async () => {
      expect((await alice.post('/v2/instances/', redisBody('Case'))).body.data.name).toBe('Case');
      expect((await alice.get('/v2/instances/Case/')).body.data.name).toBe('Case');
      expect((await alice.get('/v2/instances/case/')).status).toBe(404);
      expect((await alice.get('/v2/instances/CASE/')).status).toBe(404);
    });

    describe('409', () => {
      it('a name taken in the account; the same name in another account is fine', async () => {
        expect((await alice.post('/v2/instances/', redisBody('dup'))).status).toBe(200);
        const again = await alice.post('/v2/instances/', mongoBody('dup'));
        expect(again.status).toBe(409);
        expect(again.body).toEqual({ code: 'NAME_TAKEN', message: 'an instance named "dup" already exists in this account' });
        expect((await alice.get('/v2/instances/dup/')).body.data.service).toBe('redis');
        expect((await bob.post('/v2/instances/', redisBody('dup'))).status).toBe(200);
      });

      it('a name that differs only in case from one in the account, naming the other as stored; another account may use it', async () => {
        expect((await alice.post('/v2/instances/', redisBody('MyCache'))).status).toBe(200);
        for (const name of ['mycache', 'MYCACHE', 'myCache']) {
          const res = await alice.post('/v2/instances/', redisBody(name));
          expect(res.status).toBe(409);
          expect(res.body).toEqual({
            code: 'NAME_TAKEN',
            message: `an instance named "MyCache" already exists in this account, and names are unique regardless of case: "${name}" cannot be used`,
          });
        }
        expect((await alice.get('/v2/instances/')).body.data.filter((r: any) => r.name.toLowerCase() === 'mycache')).toHaveLength(1);
        expect((await bob.post('/v2/instances/', redisBody('mycache'))).status).toBe(200);
      });

      it('a rename to a name that differs only in case from another instance; a change of case alone is a rename', async () => {
        await alice.ready(redisBody('Orders'));
        await alice.ready(redisBody('to-rename'));
        const res = await alice.post('/v2/instances/to-rename/rename/', { name: 'ORDERS' });
        expect(res.status).toBe(409);
        expect(res.body.message).toContain('an instance named "Orders" already exists');
        expect((await alice.get('/v2/instances/to-rename/')).status).toBe(200);
        expect((await alice.post('/v2/instances/Orders/rename/', { name: 'orders' })).status).toBe(200);
        expect((await alice.get('/v2/instances/orders/')).body.data.name).toBe('orders');
      });

      it('two creates of one name at once, in two cases: one wins, the other is a 409', async () => {
        const [a, b] = await Promise.all([
          alice.post('/v2/instances/', redisBody('Race2')),
          alice.post('/v2/instances/', redisBody('race2')),
        ]);
        expect([a.status, b.status].sort()).toEqual([200, 409]);
      });

      it('two creates of one name at once: one wins, the other is a 409', async () => {
        const [a, b] = await Promise.all([
          alice.post('/v2/instances/', redisBody('race')),
          alice.post('/v2/instances/', redisBody('race')),
        ]);
        expect([a.status, b.status].sort()).toEqual([200, 409]);
        const list = await alice.get('/v2/instances/');
        expect(list.body.data.filter((r: any) => r.name === 'race')).toHaveLength(1);
      });
    });

    it('401: without credentials, and nothing is created', async () => {
      const res = await th.anonymous().post('/v2/instances/', redisBody('anon'));
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('UNAUTHORIZED');
      expect((await alice.get('/v2/instances/anon/')).status).toBe(404);
    });
  });

  describe('GET /v2/instances/<name>/', () => {
    it('200: a redis record, ACTIVE when ready', async () => {
      const created = (await alice.post('/v2/instances/', redisBody('get-redis'))).body.data;
      const rec = await alice.waitFor('get-redis', (r) => r?.state === 'ACTIVE');
      expect(keysOf(rec)).toEqual(RECORD_KEYS.redis);
      for (const k of RECORD_KEYS.redis) if (k !== 'state') expect(rec[k]).toEqual(created[k]);
    });

    it.each<MongoType>(['mongodb_replica_set', 'mongodb_jumbo_replica_set', 'mongodb_singledb', 'mongodb_sharded'])(
      '200: a %s record carries state, ACTIVE when ready',
      async (type) => {
        await alice.post('/v2/instances/', mongoBody(`get-${type}`, type));
        const rec = await alice.waitFor(`get-${type}`, (r) => r?.state === 'ACTIVE');
        expect(keysOf(rec)).toEqual(type === 'mongodb_sharded' ? RECORD_KEYS.mongodb_sharded : RECORD_KEYS.mongodb);
        expect(rec).toMatchObject({ service: 'mongodb', type, plan: 1, version: '3.4.2', zone: 'US-West', caster: null });
      },
    );

    it('200: an elasticsearch record, COMPLETED when ready, with connection_strings as spec 2.2', async () => {
      await alice.post('/v2/instances/', esBody('get-es', { plan: 8 }));
      const rec = await alice.waitFor('get-es', (r) => r?.state === 'COMPLETED');
      expect(keysOf(rec)).toEqual(RECORD_KEYS.elasticsearch);
      expect(rec).toMatchObject({ service: 'elasticsearch', type: 'elasticsearch', plan: 8, encrypted: false, settings: {}, caster: null });
      const cs = rec.connection_strings;
      expect(keysOf(cs)).toEqual(['public', 'servicenet']);
      expect(keysOf(cs.public)).toEqual(['http', 'https', 'kibana_http', 'kibana_https', 'transport']);
      expect(keysOf(cs.servicenet)).toEqual(['http', 'https', 'transport']);
      expect(cs.public.http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.public.https).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.public.kibana_http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.public.kibana_https).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.public.transport).toMatch(HOST_PORT);
      expect(cs.servicenet.http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.servicenet.https).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(cs.servicenet.transport).toMatch(HOST_PORT);
      const ports = [...Object.values(cs.public), ...Object.values(cs.servicenet)].map((s) => portOf(s as string));
      expect(new Set(ports).size).toBe(8);
    });

    describe('404', () => {
      it('an unknown name, naming it', async () => {
        const res = await alice.get('/v2/instances/nope/');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "nope" not found' });
      });

      it("another account's instance: the same 404 as an unknown name", async () => {
        await bob.post('/v2/instances/', redisBody('bobs-own'));
        const res = await alice.get('/v2/instances/bobs-own/');
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "bobs-own" not found' });
      });
    });

    it('401: a bad token', async () => {
      const res = await new Client(th.target, { token: 'nope' }).get('/v2/instances/created-1/');
      expect(res.body).toEqual({ message: expect.any(String), code: 'UNAUTHORIZED' });
      expect(res.status).toBe(401);
    });
  });
});
