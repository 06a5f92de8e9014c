import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZONES } from '../../src/domain/catalog.js';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

describe.each(DIALECTS)('zones on %s', (dialect) => {
  describe('without a zones file', () => {
    let th: TestHangar, alice: Account;
    beforeAll(async () => ({ th, alice } = await startWithTwoAccounts({ dialect })));
    afterAll(() => th.close());

    it("every zone of the spec, offering the services the spec lists it for, on the runtime's engines, unlimited", async () => {
      const res = await alice.get('/v2/zones/');
      expect(res.status).toBe(200);
      const zones = res.body.data as any[];
      expect(new Set(zones.map((z) => z.name))).toEqual(new Set(Object.values(ZONES).flat()));
      const london = zones.find((z) => z.name === 'EU-London');
      expect(london.services.map((s: any) => s.service)).toEqual(['mongodb', 'redis']);
      expect(london).toMatchObject({ runtime: 'emulated', capacity_mb: null, free_mb: null, allocated_mb: 0 });
      await alice.ready(redisBody('in-london', { zone: 'EU-London' }));
      expect(((await alice.get('/v2/zones/')).body.data as any[]).find((z) => z.name === 'EU-London').allocated_mb).toBe(1000);
    });

    it('401 without credentials', async () => {
      expect((await th.anonymous().get('/v2/zones/')).status).toBe(401);
    });
  });

  describe('with a zones file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-zones-'));
    let th: TestHangar;
    let alice: Account;
    let bob: Account;
    beforeAll(async () => {
      const zones = join(dir, 'zones.json');
      writeFileSync(zones, JSON.stringify({ Small: { runtime: 'emulated', capacity_mb: 4000 }, Big: { runtime: 'emulated' } }));
      th = await startTestHangar({ dialect, env: { HANGAR_ZONES: zones } });
      alice = await th.signup();
      bob = await th.signup();
    });
    afterAll(async () => {
      await th.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('creates at once for the last of a zone: exactly the ones that fit are recorded, the others get 409', async () => {
      // 4000 MB: two plans of 1000 (2000 MB each) fit, of five asked for at once by two accounts
      const asks = ['a1', 'a2', 'a3'].map((n) => alice.post('/v2/instances/', redisBody(n, { zone: 'Small', plan: 1000 })));
      asks.push(...['b1', 'b2'].map((n) => bob.post('/v2/instances/', redisBody(n, { zone: 'Small', plan: 1000 }))));
      const statuses = (await Promise.all(asks)).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(2);
      expect(statuses.filter((s) => s === 409)).toHaveLength(3);
      const small = ((await alice.get('/v2/zones/')).body.data as any[]).find((z) => z.name === 'Small');
      expect(small).toMatchObject({ capacity_mb: 4000, allocated_mb: 4000, free_mb: 0 });
    });

    it('a zone with no capacity set takes what the other refuses', async () => {
      expect((await alice.post('/v2/instances/', redisBody('elsewhere', { zone: 'Big', plan: 100000 }))).status).toBe(200);
    });
  });
});
