import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/domain/catalog.js';
import { PRODUCTS } from '../../src/engines/products.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

describe.each(DIALECTS)('engines and instance shells on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;
  beforeAll(async () => ({ th, alice, bob } = await startWithTwoAccounts({ dialect })));
  afterAll(() => th.close());

  describe('GET /v2/engines/', () => {
    it('200: every product of the registry, in its order, with what the API offers on it and what each plan promises', async () => {
      const res = await alice.get('/v2/engines/');
      expect(res.status).toBe(200);
      const engines = res.body.data as any[];
      expect(engines.map((e) => e.engine)).toEqual(PRODUCTS.map((p) => p.name));
      const byName = new Map(engines.map((e) => [e.engine, e]));
      expect(byName.get('redis')).toMatchObject({
        service: 'redis',
        label: 'Redis',
        plan_unit: 'MB',
        done_state: 'ACTIVE',
        types: ['redis_ha_instance'],
        features: { password: true, redis_api: true, database_users: false, encryption: false, storage_engines: null, acl_groups: [] },
        shell: { program: 'redis-cli', install: expect.any(String) },
      });
      expect(byName.get('mongod')).toMatchObject({
        service: 'mongodb',
        plan_unit: 'GB',
        features: { password: false, redis_api: false, database_users: true, storage_engines: ['mmapv1', 'wiredtiger'] },
        shell: { program: 'mongosh' },
      });
      expect(byName.get('elasticsearch')).toMatchObject({
        done_state: 'COMPLETED',
        features: { acl_groups: ['transport', 'kibana'], encryption: true },
        shell: null,
      });
      // the memory of each plan, by the product's own rule: what zone capacity counts
      for (const p of PRODUCTS) {
        const e = byName.get(p.name);
        expect(e.plans).toHaveLength(p.types.length * PLANS[p.service].length);
        for (const row of e.plans) expect(row.promised_mb).toBe(p.promisedMemoryMb(row.type, row.plan));
      }
      expect(byName.get('redis').plans[0]).toEqual({
        type: 'redis_ha_instance',
        plan: 500,
        promised_mb: 1000,
        memory_rule: '2 x 500 MB: maxmemory of the primary and of the replica',
      });
    });

    it('401 without credentials', async () => {
      expect((await th.anonymous().get('/v2/engines/')).status).toBe(401);
    });
  });

  describe('GET /v2/instances/{name}/shell', () => {
    let redis: any;
    beforeAll(async () => {
      redis = await alice.ready(redisBody('cache'));
      await alice.ready(mongoBody('docs'));
      await alice.ready(esBody('search'));
    });

    it('200: the shell of a Redis instance, its password in the environment and not in the arguments', async () => {
      const res = await alice.get('/v2/instances/cache/shell');
      expect(res.status).toBe(200);
      const { hostname, port } = new URL(redis.public_connect_string);
      expect(res.body.data).toEqual({
        program: 'redis-cli',
        install: expect.any(String),
        command: 'redis-cli',
        args: ['-h', hostname, '-p', port],
        env: { REDISCLI_AUTH: redis.password },
        line: `REDISCLI_AUTH=${redis.password} redis-cli -h ${hostname} -p ${port}`,
      });
      const servicenet = await alice.get('/v2/instances/cache/shell?servicenet=true');
      expect(servicenet.body.data.args[3]).toBe(new URL(redis.servicenet_connect_string).port);
    });

    it('200: mongosh for a user of a database; null for an engine without a shell', async () => {
      const res = await alice.get('/v2/instances/docs/shell?user=app&database=shop');
      expect(res.status).toBe(200);
      expect(res.body.data.command).toBe('mongosh');
      expect(res.body.data.args.slice(1)).toEqual(['--username', 'app', '--authenticationDatabase', 'shop']);
      expect(res.body.data.args[0]).toMatch(/^mongodb:\/\/.+\/shop$/);
      expect(res.body.data.env).toEqual({});
      const es = await alice.get('/v2/instances/search/shell');
      expect(es.status).toBe(200);
      expect(es.body.data).toBeNull();
    });

    it('400 for a query value of the wrong form', async () => {
      const res = await alice.get('/v2/instances/cache/shell?servicenet=perhaps');
      expect(res.status).toBe(400);
    });

    it('401 without credentials', async () => {
      expect((await th.anonymous().get('/v2/instances/cache/shell')).status).toBe(401);
    });

    it("404 for a missing instance, and for another account's", async () => {
      expect((await alice.get('/v2/instances/nothing/shell')).status).toBe(404);
      const other = await bob.get('/v2/instances/cache/shell');
      expect(other.status).toBe(404);
      expect(other.body.message).toBe('instance "cache" not found');
    });
  });
});
