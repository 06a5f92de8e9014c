import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, keysOf, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

const METRICS = ['connectedSlaves', 'connectedClients', 'spaceUsage', 'maxMemoryPolicy', 'maxClients'] as const;

/** What the emulated engine reports as used: an empty redis-server. */
const USED = 866_400;
const freePercent = (planMb: number) => Math.round(((planMb * 1024 * 1024 - USED) / (planMb * 1024 * 1024)) * 100 * 100) / 100;

describe.each(DIALECTS)('redis endpoints on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    await alice.ready(redisBody('r'));
    await alice.ready(mongoBody('m'));
    await alice.ready(esBody('e'));
    await bob.ready(redisBody('bobs'));
  });
  afterAll(() => th.close());

  describe('GET /v2/redis/<name>/<metric>/', () => {
    it('200: connectedSlaves is an integer: the one replica of redis_ha_instance', async () => {
      const res = await alice.get('/v2/redis/r/connectedSlaves/');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: 1 });
    });

    it('200: spaceUsage is an object of a number and a human-readable size, against maxmemory = plan MB', async () => {
      const res = await alice.get('/v2/redis/r/spaceUsage/');
      expect(res.status).toBe(200);
      expect(keysOf(res.body.data)).toEqual(['freeSpacePercentage', 'usedMemoryHuman']);
      expect(res.body.data).toEqual({ freeSpacePercentage: freePercent(500), usedMemoryHuman: '846.09K' });
    });

    it('200: connectedClients is an integer: the connections of the primary (the emulated replica link)', async () => {
      expect((await alice.get('/v2/redis/r/connectedClients/')).body).toEqual({ data: 1 });
    });

    it('200: maxMemoryPolicy is a policy name', async () => {
      expect((await alice.get('/v2/redis/r/maxMemoryPolicy/')).body).toEqual({ data: 'noeviction' });
    });

    it('200: maxClients is a string holding a number', async () => {
      const res = await alice.get('/v2/redis/r/maxClients/');
      expect(res.body).toEqual({ data: '10000' });
    });

    it('200: maxMemoryPolicy follows HANGAR_REDIS_MAXMEMORY_POLICY', async () => {
      const other = await startTestHangar({ dialect, env: { HANGAR_REDIS_MAXMEMORY_POLICY: 'allkeys-lru' } });
      try {
        const carol = await other.signup();
        await carol.ready(redisBody('p'));
        expect((await carol.get('/v2/redis/p/maxMemoryPolicy/')).body).toEqual({ data: 'allkeys-lru' });
      } finally {
        await other.close();
      }
    });

    it.each(METRICS)('409: %s of an instance that is not built yet', async (metric) => {
      const release = th.hold();
      try {
        await alice.post('/v2/instances/', redisBody(`building-${metric}`));
        await alice.waitFor(`building-${metric}`, (r) => r?.state === 'BUILDING');
        const res = await alice.get(`/v2/redis/building-${metric}/${metric}/`);
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_READY', message: `instance "building-${metric}" is BUILDING, not ACTIVE` });
      } finally {
        release();
      }
    });

    describe.each(METRICS)('404: %s', (metric) => {
      it.each([['nope'], ['bobs']])('of %s (unknown, another account)', async (name) => {
        const res = await alice.get(`/v2/redis/${name}/${metric}/`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: `redis instance "${name}" not found` });
      });

      it.each([
        ['m', 'a mongodb'],
        ['e', 'an elasticsearch'],
      ])('of %s, an instance of the account of another service: it says which', async (name, service) => {
        const res = await alice.get(`/v2/redis/${name}/${metric}/`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({
          code: 'INSTANCE_NOT_FOUND',
          message: `instance "${name}" is ${service} instance, not a redis instance`,
        });
      });
    });

    it.each(METRICS)('401: %s without credentials', async (metric) => {
      expect((await th.anonymous().get(`/v2/redis/r/${metric}/`)).status).toBe(401);
    });
  });

  describe('POST /v2/redis/<name>/resize/', () => {
    it('200: names instance, old and new plan; RESIZING while it runs, then ACTIVE on the new plan', async () => {
      await alice.ready(redisBody('grow'));
      const release = th.hold();
      try {
        const res = await alice.post('/v2/redis/grow/resize/', { new_plan: 1000 });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: expect.stringMatching(/"grow".*500.*1000/) });
        const during = (await alice.get('/v2/instances/grow/')).body.data;
        expect(during).toMatchObject({ state: 'RESIZING', plan: 500 });
        // Two resizes in a row: the second waits for the first.
        const second = await alice.post('/v2/redis/grow/resize/', { new_plan: 2500 });
        expect(second.status).toBe(409);
        expect(second.body).toMatchObject({
          code: 'OPERATION_IN_PROGRESS',
          message: 'instance "grow" is RESIZING; wait until it is ACTIVE and try again',
        });
      } finally {
        release();
      }
      const after = await alice.waitFor('grow', (r) => r?.state === 'ACTIVE');
      expect(after.plan).toBe(1000);
      expect((await alice.get('/v2/redis/grow/spaceUsage/')).body.data.freeSpacePercentage).toBe(freePercent(1000));
      expect((await alice.post('/v2/redis/grow/resize/', { new_plan: 2500 })).status).toBe(200);
      expect((await alice.waitFor('grow', (r) => r?.state === 'ACTIVE' && r.plan === 2500)).plan).toBe(2500);
    });

    it('200: the inspection endpoints keep answering while it resizes', async () => {
      await alice.ready(redisBody('grow-read'));
      const release = th.hold();
      try {
        await alice.post('/v2/redis/grow-read/resize/', { new_plan: 5000 });
        expect((await alice.get('/v2/redis/grow-read/connectedSlaves/')).body).toEqual({ data: 1 });
      } finally {
        release();
      }
    });

    describe('400 (spec 7.3)', () => {
      it.each([[600], [750], [0], [-500], [100001]])('new_plan %i is not a redis plan; the message lists them', async (plan) => {
        const res = await alice.post('/v2/redis/r/resize/', { new_plan: plan });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: 'INVALID_VALUE',
          field: 'new_plan',
          allowed: [500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
        });
        expect(res.body.message).toContain('500, 1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000');
      });

      it('new_plan equal to the current plan; the message lists the larger ones', async () => {
        const res = await alice.post('/v2/redis/r/resize/', { new_plan: 500 });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: 'INVALID_VALUE',
          field: 'new_plan',
          allowed: [1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000],
        });
        expect(res.body.message).toContain('larger');
      });

      it('new_plan smaller than the current plan; the plan stays', async () => {
        await alice.ready(redisBody('big', { plan: 5000 }));
        const res = await alice.post('/v2/redis/big/resize/', { new_plan: 1000 });
        expect(res.status).toBe(400);
        expect(res.body.allowed).toEqual([10000, 20000, 50000, 75000, 100000]);
        expect((await alice.get('/v2/instances/big/')).body.data).toMatchObject({ plan: 5000, state: 'ACTIVE' });
      });

      it('the largest plan has nothing larger', async () => {
        await alice.ready(redisBody('largest', { plan: 100000 }));
        const res = await alice.post('/v2/redis/largest/resize/', { new_plan: 100000 });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'new_plan' });
        expect(res.body.message).toContain('largest');
      });

      it.each<[unknown, string]>([
        [{}, 'new_plan'],
        [{ new_plan: '1000' }, 'new_plan'],
        [{ new_plan: 1000.5 }, 'new_plan'],
        [{ new_plan: 1000, now: true }, 'now'],
      ])('a body %j', async (body, field) => {
        const res = await alice.post('/v2/redis/r/resize/', body);
        expect(res.status).toBe(400);
        expect(res.body.field).toBe(field);
      });
    });

    describe('409', () => {
      it('an instance still building', async () => {
        const release = th.hold();
        try {
          await alice.post('/v2/instances/', redisBody('resize-building'));
          const res = await alice.post('/v2/redis/resize-building/resize/', { new_plan: 1000 });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe('OPERATION_IN_PROGRESS');
        } finally {
          release();
        }
        expect((await alice.waitFor('resize-building', (r) => r?.state === 'ACTIVE')).plan).toBe(500);
      });

      it('an instance being deleted', async () => {
        await alice.ready(redisBody('resize-del'));
        const release = th.hold();
        try {
          await alice.delete('/v2/instances/resize-del/');
          const res = await alice.post('/v2/redis/resize-del/resize/', { new_plan: 1000 });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe('INSTANCE_DELETING');
        } finally {
          release();
        }
      });
    });

    describe('404', () => {
      it.each([
        ['m', 'a mongodb'],
        ['e', 'an elasticsearch'],
      ])('resize of %s: only redis resizes', async (name, service) => {
        const res = await alice.post(`/v2/redis/${name}/resize/`, { new_plan: 1000 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({
          code: 'INSTANCE_NOT_FOUND',
          message: `instance "${name}" is ${service} instance, not a redis instance`,
        });
        expect((await alice.get(`/v2/instances/${name}/`)).body.data.plan).toBe(name === 'm' ? 1 : 4);
      });

      it("another account's instance, which keeps its plan", async () => {
        const res = await alice.post('/v2/redis/bobs/resize/', { new_plan: 1000 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'redis instance "bobs" not found' });
        expect((await bob.get('/v2/instances/bobs/')).body.data).toMatchObject({ plan: 500, state: 'ACTIVE' });
      });

      it('an unknown name', async () => {
        expect((await alice.post('/v2/redis/nope/resize/', { new_plan: 1000 })).status).toBe(404);
      });
    });

    it('401: without credentials, and the plan stays', async () => {
      expect((await th.anonymous().post('/v2/redis/r/resize/', { new_plan: 1000 })).status).toBe(401);
      expect((await alice.get('/v2/instances/r/')).body.data).toMatchObject({ plan: 500, state: 'ACTIVE' });
    });
  });
});
