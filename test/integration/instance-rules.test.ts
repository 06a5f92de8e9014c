import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_OF, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/** What POST /v2/instances/ refuses: every rule of the create body, and the quotas. */
describe.each(DIALECTS)('instance create rules on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ dialect });
    alice = await th.signup();
  });
  afterAll(() => th.close());

  describe('400', () => {
    const expect400 = async (body: unknown, field: string, code = 'INVALID_VALUE') => {
      const res = await alice.post('/v2/instances/', body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code, field, message: expect.stringContaining(field.replace(/\[\d+\]\./, '')) });
      return res.body;
    };

    it('a service that is not one of elasticsearch, mongodb, redis (spec 7.1)', async () => {
      const body = await expect400(redisBody('x', { service: 'mysql' }), 'service');
      expect(body.message).toContain('elasticsearch, mongodb, redis');
      expect(body.allowed).toEqual(['elasticsearch', 'mongodb', 'redis']);
    });

    it.each([['yes'], [1], [null], [{}]])('encryption %j that is not a boolean (spec 7.2)', async (encryption) => {
      await expect400(mongoBody('x', 'mongodb_singledb', { encryption }), 'encryption');
    });

    it('encryption true on redis (it applies to elasticsearch and mongodb)', async () => {
      const body = await expect400(redisBody('x', { encryption: true }), 'encryption');
      expect(body.message).toContain('elasticsearch and mongodb');
    });

    const allowed = {
      redis: {
        plan: [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
        type: ['redis_ha_instance'],
        zone: ['EU-London', 'US-Chicago', 'US-East-IAD3', 'US-Dallas'],
        version: ['7.2.4', '7.2', '7.0.15', '7.0', '6.2.14', '6.2'],
      },
      mongodb: {
        plan: [1, 5, 20, 50, 100],
        type: ['mongodb_sharded', 'mongodb_replica_set', 'mongodb_singledb', 'mongodb_jumbo_replica_set'],
        zone: ['US-East-IAD3', 'US-West', 'EU-London', 'AP-HongKong', 'US-Chicago', 'AP-Sydney', 'US-Dallas'],
        version: ['2.6.11', '3.2.8', '3.4.2'],
      },
      elasticsearch: {
        plan: [4, 8, 16, 32, 64, 128, 256, 512],
        type: ['elasticsearch'],
        zone: ['US-East-IAD1', 'US-Chicago-ORD2', 'EU-London-LON5', 'US-Dallas'],
        version: ['2.4.6', '5.2.2', '5.4.3', '5.5.1', '5.6.9', '6.1.2', '6.3.2', '6.4.1'],
      },
    } as const;
    // A value allowed for another service is still refused: the lists are per service.
    const wrong = {
      redis: { plan: 1, type: 'mongodb_sharded', zone: 'US-West', version: '3.4.2' },
      mongodb: { plan: 500, type: 'redis_ha_instance', zone: 'US-East-IAD1', version: '6.4.1' },
      elasticsearch: { plan: 1, type: 'mongodb_singledb', zone: 'US-West', version: '7.0.15' },
    } as const;
    describe.each(['redis', 'mongodb', 'elasticsearch'] as const)('%s', (service) => {
      it.each(['plan', 'type', 'zone', 'version'] as const)(
        'a %s outside the list of the service, naming the allowed values',
        async (field) => {
          const body = await expect400({ ...BODY_OF[service]('x'), [field]: wrong[service][field] }, field);
          expect(body.allowed).toEqual(allowed[service][field]);
          expect(body.message).toContain(allowed[service][field].join(', '));
          expect(body.message).toContain(service);
        },
      );
    });

    it.each([['rocksdb'], ['WiredTiger']])('storage_engine %j on mongodb', async (engine) => {
      const body = await expect400(mongoBody('x', 'mongodb_singledb', { storage_engine: engine }), 'storage_engine');
      expect(body.allowed).toEqual(['mmapv1', 'wiredtiger']);
    });

    it('storage_engine on a service other than mongodb', async () => {
      const body = await expect400(redisBody('x', { storage_engine: 'wiredtiger' }), 'storage_engine');
      expect(body.message).toContain('mongodb');
    });

    it.each([[''], ['x'.repeat(65)], ['a.b'], ['a b'], ['a/b'], ['é'], ['a:b'], ['name\n']])(
      'a name %j outside 1-64 of letters, digits, "-", "_"',
      async (name) => {
        const body = await expect400(redisBody(name), 'name');
        expect(body.message).toContain('1 to 64');
      },
    );

    it.each(['name', 'plan', 'service', 'type', 'version', 'zone'])('a missing %s', async (field) => {
      const body: Record<string, unknown> = redisBody('x');
      delete body[field];
      await expect400(body, field, 'INVALID_BODY');
    });

    it('an unknown field', async () => {
      const body = await expect400(redisBody('x', { size: 5 }), 'size', 'INVALID_BODY');
      expect(body.message).toBe('unknown field "size"');
    });

    it.each<[string, unknown]>([
      ['plan', '500'],
      ['plan', 500.5],
      ['plan', true],
      ['name', 5],
      ['service', ['redis']],
      ['zone', null],
      ['acls', { cidr_mask: '10.0.0.1' }],
    ])('%s of the wrong JSON type (%j)', async (field, value) => {
      await expect400(redisBody('x', { [field]: value }), field);
    });

    it.each([['[]'], ['"redis"'], ['null'], ['42']])('a body that is not an object: %s', async (raw) => {
      const res = await alice.request('POST', '/v2/instances/', { rawBody: raw, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: expect.stringMatching(/^INVALID_(BODY|VALUE)$/), message: expect.any(String) });
    });

    it.each<[Record<string, unknown>, string]>([
      [{ cidr_mask: '10.0.0.256', description: 'x' }, 'acls[0].cidr_mask'],
      [{ cidr_mask: '10.0.0.1', description: 'x', transport: true }, 'acls[0].transport'],
      [{ cidr_mask: '10.0.0.1' }, 'acls[0].description'],
      [{ cidr_mask: '10.0.0.1', description: 'x', port: 1 }, 'acls[0].port'],
    ])('an ACL of the create body that is not valid: %j', async (acl, field) => {
      const res = await alice.post('/v2/instances/', redisBody('x', { acls: [acl] }));
      expect(res.status).toBe(400);
      expect(res.body.field).toBe(field);
      expect(res.body.message).toContain(field);
    });

    it('the same range twice in the ACLs of the create body', async () => {
      const body = await expect400(
        redisBody('x', {
          acls: [
            { cidr_mask: '10.0.0.1', description: 'a' },
            { cidr_mask: '10.0.0.1/32', description: 'b' },
          ],
        }),
        'acls',
      );
      expect(body.message).toContain('10.0.0.1');
    });

    describe('every problem at once: the first as message, code and field; all of them in errors', () => {
      const problems = (body: any) => body.errors.map((e: any) => [e.field, e.code]);

      it('an empty body names every missing field', async () => {
        const res = await alice.post('/v2/instances/', {});
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', field: 'name', message: '"name" is required' });
        expect(problems(res.body)).toEqual(['name', 'plan', 'service', 'type', 'version', 'zone'].map((f) => [f, 'INVALID_BODY']));
      });

      it('no body at all names every missing field too', async () => {
        const res = await alice.request('POST', '/v2/instances/');
        expect(res.status).toBe(400);
        expect(res.body.message).toBe('the request body must be a JSON object');
        expect(res.body.errors.map((e: any) => e.field)).toEqual([undefined, 'name', 'plan', 'service', 'type', 'version', 'zone']);
      });

      it("the service's own checks: name, type, plan, zone and version, each with its allowed values", async () => {
        const res = await alice.post('/v2/instances/', {
          name: 'a b',
          plan: 3,
          service: 'redis',
          type: 'mongodb_sharded',
          version: '1.0',
          zone: 'US-Dallas',
        });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'name' });
        expect(problems(res.body)).toEqual([
          ['name', 'INVALID_VALUE'],
          ['type', 'INVALID_VALUE'],
          ['plan', 'INVALID_VALUE'],
          ['version', 'INVALID_VALUE'],
        ]);
        expect(res.body.errors[2].allowed).toEqual(allowed.redis.plan);
        expect(res.body.errors[3].allowed).toEqual(allowed.redis.version);
        // the first problem is told exactly as before
        expect(res.body.errors[0].message).toBe(res.body.message);
      });

      it('a version is judged against the zone, so a wrong zone leaves it out', async () => {
        const res = await alice.post('/v2/instances/', redisBody('x', { zone: 'Mars', version: '1.0', plan: 3 }));
        expect(problems(res.body)).toEqual([
          ['plan', 'INVALID_VALUE'],
          ['zone', 'INVALID_VALUE'],
        ]);
      });

      it("the schema's problems and the service's, without naming a field twice", async () => {
        const res = await alice.post('/v2/instances/', {
          name: 5,
          plan: 'x',
          service: 'redis',
          type: 'redis_ha_instance',
          zone: 'Mars',
          acls: [{ cidr_mask: 'nowhere' }, { cidr_mask: '10.0.0.1', description: 'x'.repeat(300) }],
          size: 1,
        });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', field: 'version', message: '"version" is required' });
        expect(problems(res.body)).toEqual([
          ['version', 'INVALID_BODY'],
          ['size', 'INVALID_BODY'],
          ['name', 'INVALID_VALUE'],
          ['plan', 'INVALID_VALUE'],
          ['acls[0].description', 'INVALID_BODY'],
          ['zone', 'INVALID_VALUE'],
          ['acls[0].cidr_mask', 'INVALID_VALUE'],
          ['acls[1].description', 'INVALID_VALUE'],
        ]);
      });
    });

    it('nothing is created by a refused request', async () => {
      await alice.post('/v2/instances/', redisBody('refused', { plan: 501 }));
      expect((await alice.get('/v2/instances/refused/')).status).toBe(404);
      const list = await alice.get('/v2/instances/');
      expect(list.body.data.map((r: any) => r.name)).not.toContain('refused');
    });
  });

  describe('quotas', () => {
    let small: TestHangar;
    beforeAll(async () => {
      small = await startTestHangar({ dialect, env: { HANGAR_MAX_INSTANCES: '2', HANGAR_MAX_ACLS: '2' } });
    });
    afterAll(() => small.close());

    it('409 QUOTA_EXCEEDED past HANGAR_MAX_INSTANCES per account; other accounts have their own', async () => {
      const carol = await small.signup();
      expect((await carol.post('/v2/instances/', redisBody('q1'))).status).toBe(200);
      expect((await carol.post('/v2/instances/', redisBody('q2'))).status).toBe(200);
      const res = await carol.post('/v2/instances/', redisBody('q3'));
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: 'QUOTA_EXCEEDED', message: 'quota reached: at most 2 instances per account' });
      expect((await carol.get('/v2/instances/q3/')).status).toBe(404);
      const dave = await small.signup();
      expect((await dave.post('/v2/instances/', redisBody('q1'))).status).toBe(200);
    });

    it('409 QUOTA_EXCEEDED past HANGAR_MAX_ACLS per instance, in the create body or one by one', async () => {
      const erin = await small.signup();
      const three = [1, 2, 3].map((i) => ({ cidr_mask: `192.0.2.${i}`, description: 'x' }));
      expect((await erin.post('/v2/instances/', redisBody('qa', { acls: three }))).body.code).toBe('QUOTA_EXCEEDED');
      await erin.post('/v2/instances/', redisBody('qb', { acls: three.slice(0, 2) }));
      const res = await erin.post('/v2/instances/qb/acls/', three[2]);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: 'QUOTA_EXCEEDED', message: 'quota reached: at most 2 ACLs per instance' });
    });
  });
});
