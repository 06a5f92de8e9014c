import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

// Expiring ACLs, "would this address get in?", what the edge enforces, refused connections and
// the bulk replace, through the HTTP API on the emulated runtime (whose edge the tests can look
// into, tamper with and connect to). The same features on the real edge: test/e2e/access-day-two.test.ts.

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

async function until(what: string, condition: () => Promise<boolean>, ms = 25_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.each(DIALECTS)('ACLs, day two, on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;
  let redis: any;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    redis = await alice.ready(redisBody('r'));
    await alice.ready(mongoBody('m'));
  });
  afterAll(() => th.close());

  const acls = (who: Account, name: string) => who.get(`/v2/instances/${name}/acls/`);
  const rulesOf = (id: string) =>
    th.runtime
      .rulesOf(id)
      ?.map((r) => r.cidr)
      .sort();

  describe('expires_at', () => {
    it('400: a time in the past, or not RFC 3339 with a time zone', async () => {
      for (const expires_at of [inMs(-1000), '2030-01-01', '2030-01-01T00:00:00', 'tomorrow']) {
        const res = await alice.post('/v2/instances/r/acls/', { cidr_mask: '192.0.2.50', description: 'x', expires_at });
        expect(res.status, expires_at).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'expires_at' });
      }
      const inBody = await alice.post(
        '/v2/instances/',
        redisBody('past', { acls: [{ cidr_mask: '192.0.2.1', description: 'x', expires_at: inMs(-1) }] }),
      );
      expect(inBody.body).toMatchObject({ code: 'INVALID_VALUE', field: 'acls[0].expires_at' });
    });

    it('200: the record shows it; at that time the edge stops admitting, the list drops it, the audit log says it expired', async () => {
      await alice.ready(redisBody('exp'));
      const forever = (await alice.post('/v2/instances/exp/acls/', { cidr_mask: '192.0.2.1', description: 'stays' })).body.data;
      const at = inMs(1500);
      const res = await alice.post('/v2/instances/exp/acls/', { cidr_mask: '192.0.2.2', description: 'goes', expires_at: at });
      expect(res.status).toBe(200);
      const id = res.body.data;
      expect((await alice.get(`/v2/instances/exp/acls/${id}/`)).body.data.expires_at).toBe(new Date(at).toISOString());
      const inst = (await alice.get('/v2/instances/exp/')).body.data;
      expect(rulesOf(inst.id)).toEqual(['192.0.2.1', '192.0.2.2']);
      expect(th.runtime.connect(inst.id, '192.0.2.2')).toBe(true);
      await until('the edge no longer admits the expired source', async () => !th.runtime.connect(inst.id, '192.0.2.2'));
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(at));
      expect(rulesOf(inst.id)).toEqual(['192.0.2.1']);
      expect((await acls(alice, 'exp')).body.data.map((a: any) => a._id.$oid)).toEqual([forever]);
      expect((await alice.get(`/v2/instances/exp/acls/${id}/`)).status).toBe(404);
      const events = (await alice.get('/v2/events/?limit=20')).body.data;
      expect(events.filter((e: any) => e.action === 'acl.expire')).toEqual([
        expect.objectContaining({ target: `instance:exp/acl:${id}`, outcome: 'success', request_id: null }),
      ]);
    });

    it('an expiry that passed while hangar was down is carried out at start, and audited once', async () => {
      await alice.ready(redisBody('down'));
      const id = (await alice.post('/v2/instances/down/acls/', { cidr_mask: '192.0.2.3', description: 'short', expires_at: inMs(800) }))
        .body.data;
      await th.stop();
      await new Promise((r) => setTimeout(r, 1200));
      await th.restart();
      const inst = (await alice.get('/v2/instances/down/')).body.data;
      expect((await acls(alice, 'down')).body.data).toEqual([]);
      await until('the restarted edge runs without it', async () => JSON.stringify(rulesOf(inst.id)) === '[]');
      const events = (await alice.get('/v2/events/?limit=50')).body.data.filter(
        (e: any) => e.action === 'acl.expire' && e.target.endsWith(id),
      );
      expect(events).toHaveLength(1);
    });

    it('an expired ACL does not stand in the way of a new one for the same range', async () => {
      await alice.ready(redisBody('again'));
      await alice.post('/v2/instances/again/acls/', { cidr_mask: '192.0.2.4', description: 'first', expires_at: inMs(300) });
      await new Promise((r) => setTimeout(r, 400));
      const res = await alice.post('/v2/instances/again/acls/', { cidr_mask: '192.0.2.4', description: 'second' });
      expect(res.status).toBe(200);
      expect((await acls(alice, 'again')).body.data.map((a: any) => a.description)).toEqual(['second']);
    });
  });

  describe('POST /v2/instances/<name>/acls/check', () => {
    beforeAll(async () => {
      await alice.ready(redisBody('chk'));
      for (const [cidr_mask, description] of [
        ['10.0.0.0/8', 'wide'],
        ['10.1.2.0/24', 'narrow'],
        ['2001:db8::/32', 'v6'],
      ]) {
        await alice.post('/v2/instances/chk/acls/', { cidr_mask, description });
      }
    });

    it('200: admitted by the most specific ACL, or not admitted', async () => {
      const one = await alice.post('/v2/instances/chk/acls/check', { ip: '10.1.2.3' });
      expect(one.status).toBe(200);
      expect(one.body.data).toMatchObject({
        ip: '10.1.2.3',
        admitted: true,
        acl: { cidr_mask: '10.1.2.0/24', description: 'narrow', instance: 'chk' },
      });
      expect((await alice.post('/v2/instances/chk/acls/check', { ip: '10.200.0.1' })).body.data.acl.description).toBe('wide');
      expect((await alice.post('/v2/instances/chk/acls/check', { ip: '2001:0db8:0:0::7' })).body.data).toMatchObject({
        ip: '2001:db8::7',
        admitted: true,
      });
      expect((await alice.post('/v2/instances/chk/acls/check', { ip: '192.0.2.9' })).body.data).toEqual({
        ip: '192.0.2.9',
        admitted: false,
        acl: null,
      });
    });

    it('200: agrees with what the edge does for every address tried', async () => {
      const inst = (await alice.get('/v2/instances/chk/')).body.data;
      for (const ip of ['10.0.0.1', '10.1.2.255', '11.0.0.1', '9.255.255.255', '2001:db8:ffff::1', '2001:db9::1']) {
        const { admitted } = (await alice.post('/v2/instances/chk/acls/check', { ip })).body.data;
        expect(admitted, ip).toBe(th.runtime.connect(inst.id, ip));
      }
    });

    it('400: not one address', async () => {
      for (const ip of ['10.0.0.0/8', 'nope', '']) {
        expect((await alice.post('/v2/instances/chk/acls/check', { ip })).body, ip).toMatchObject({ code: 'INVALID_VALUE', field: 'ip' });
      }
      expect((await alice.post('/v2/instances/chk/acls/check', { address: '10.0.0.1' })).status).toBe(400);
    });

    it("404: another account's instance, as a missing one", async () => {
      const theirs = await bob.post('/v2/instances/chk/acls/check', { ip: '10.0.0.1' });
      expect(theirs.status).toBe(404);
      expect(theirs.body).toEqual({ message: 'instance "chk" not found', code: 'INSTANCE_NOT_FOUND' });
    });
  });

  describe('GET /v2/instances/<name>/acls/effective', () => {
    it('200: what the edge runs equals the store', async () => {
      await alice.ready(
        redisBody('eff', {
          acls: [
            { cidr_mask: '198.51.100.0/24', description: 'office' },
            { cidr_mask: '203.0.113.7', description: 'laptop' },
          ],
        }),
      );
      const res = await alice.get('/v2/instances/eff/acls/effective');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        in_sync: true,
        desired: { main: ['198.51.100.0/24', '203.0.113.7'] },
        enforcers: [{ name: 'emulated', sources: { main: ['198.51.100.0/24', '203.0.113.7'] }, in_sync: true, missing: {}, extra: {} }],
        checked_at: expect.any(String),
      });
    });

    it('200: drift shows, with what is missing and what is extra, until the next pass repairs it', async () => {
      const inst = (await alice.get('/v2/instances/eff/')).body.data;
      // no pass runs while held: the drift stays until it is released
      const release = th.hold();
      try {
        th.runtime.tamper(inst.id, [
          { cidr: '203.0.113.7', transport: false, kibana: false },
          { cidr: '192.0.2.66', transport: false, kibana: false },
        ]);
        const drift = (await alice.get('/v2/instances/eff/acls/effective')).body.data;
        expect(drift.in_sync).toBe(false);
        expect(drift.enforcers[0]).toMatchObject({
          in_sync: false,
          missing: { main: ['198.51.100.0/24'] },
          extra: { main: ['192.0.2.66'] },
        });
      } finally {
        release();
      }
      // a change of the ACLs is a pass, which puts what the store says back
      await alice.post('/v2/instances/eff/acls/', { cidr_mask: '192.0.2.77', description: 'new' });
      await until('in sync again', async () => (await alice.get('/v2/instances/eff/acls/effective')).body.data.in_sync === true);
    });

    it('200: elasticsearch listeners by group', async () => {
      await alice.ready(
        esBody('es', {
          acls: [
            { cidr_mask: '192.0.2.1', description: 't', transport: true },
            { cidr_mask: '192.0.2.2', description: 'k', kibana: true },
          ],
        }),
      );
      const data = (await alice.get('/v2/instances/es/acls/effective')).body.data;
      expect(data.desired).toEqual({ main: ['192.0.2.1'], transport: ['192.0.2.1'], kibana: ['192.0.2.2'] });
      expect(data.in_sync).toBe(true);
    });

    it("404: another account's instance", async () => {
      expect((await bob.get('/v2/instances/eff/acls/effective')).status).toBe(404);
    });
  });

  describe('GET /v2/instances/<name>/acls/denied', () => {
    it('200: the last refused connections, newest first, bounded by limit; admitted ones are not there', async () => {
      await alice.ready(redisBody('den', { acls: [{ cidr_mask: '192.0.2.1', description: 'ok' }] }));
      const inst = (await alice.get('/v2/instances/den/')).body.data;
      expect((await alice.get('/v2/instances/den/acls/denied')).body).toEqual({ data: [] });
      th.runtime.connect(inst.id, '192.0.2.1');
      th.runtime.connect(inst.id, '198.51.100.1', 'public', Date.parse('2026-11-21T09:00:00Z'));
      th.runtime.connect(inst.id, '198.51.100.2', 'servicenet', Date.parse('2026-11-21T09:00:01Z'));
      const res = await alice.get('/v2/instances/den/acls/denied');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([
        { source: '198.51.100.2', time: '2026-11-21T09:00:01.000Z', listener: 'servicenet' },
        { source: '198.51.100.1', time: '2026-11-21T09:00:00.000Z', listener: 'public' },
      ]);
      expect((await alice.get('/v2/instances/den/acls/denied?limit=1')).body.data).toHaveLength(1);
    });

    it('400: a limit that is not a number; 404: another account', async () => {
      expect((await alice.get('/v2/instances/den/acls/denied?limit=all')).status).toBe(400);
      expect((await bob.get('/v2/instances/den/acls/denied')).status).toBe(404);
    });
  });

  describe('PUT /v2/instances/<name>/acls/', () => {
    it('200: applies the difference; kept ACLs keep their ids; answers the list and its new ETag', async () => {
      await alice.ready(
        redisBody('put', {
          acls: [
            { cidr_mask: '192.0.2.1', description: 'keep' },
            { cidr_mask: '192.0.2.2', description: 'drop' },
          ],
        }),
      );
      const before = await acls(alice, 'put');
      const etag = before.headers.get('etag')!;
      expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
      const keep = before.body.data.find((a: any) => a.description === 'keep')._id.$oid;
      const res = await alice.request('PUT', '/v2/instances/put/acls/', {
        body: [
          { cidr_mask: '192.0.2.1', description: 'kept, renamed' },
          { cidr_mask: '192.0.2.3', description: 'new', expires_at: inMs(3_600_000) },
        ],
        headers: { 'if-match': etag },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.map((a: any) => [a.cidr_mask, a.description])).toEqual([
        ['192.0.2.1', 'kept, renamed'],
        ['192.0.2.3', 'new'],
      ]);
      expect(res.body.data[0]._id.$oid).toBe(keep);
      expect(res.headers.get('etag')).not.toBe(etag);
      expect((await acls(alice, 'put')).headers.get('etag')).toBe(res.headers.get('etag'));
      const inst = (await alice.get('/v2/instances/put/')).body.data;
      expect(rulesOf(inst.id)).toEqual(['192.0.2.1', '192.0.2.3']);
      const events = (await alice.get('/v2/events/?limit=5')).body.data;
      expect(events[0]).toMatchObject({ action: 'acl.replace', target: 'instance:put', outcome: 'success' });
    });

    it('412: a stale ETag changes nothing', async () => {
      const stale = (await acls(alice, 'put')).headers.get('etag')!;
      await alice.post('/v2/instances/put/acls/', { cidr_mask: '192.0.2.9', description: 'meanwhile' });
      const res = await alice.request('PUT', '/v2/instances/put/acls/', { body: [], headers: { 'if-match': stale } });
      expect(res.status).toBe(412);
      expect(res.body.code).toBe('PRECONDITION_FAILED');
      expect((await acls(alice, 'put')).body.data).toHaveLength(3);
    });

    it('200: without If-Match (or with *), whatever the list is; an empty list admits nobody', async () => {
      expect(
        (
          await alice.request('PUT', '/v2/instances/put/acls/', {
            body: [{ cidr_mask: '192.0.2.1', description: 'only' }],
            headers: { 'if-match': '*' },
          })
        ).status,
      ).toBe(200);
      const res = await alice.request('PUT', '/v2/instances/put/acls/', { body: [] });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
      const inst = (await alice.get('/v2/instances/put/')).body.data;
      expect(rulesOf(inst.id)).toEqual([]);
    });

    it('200: an ACL still being taken off the edge is kept after all when the new list has it', async () => {
      await alice.ready(redisBody('revive', { acls: [{ cidr_mask: '192.0.2.1', description: 'one' }] }));
      const id = (await acls(alice, 'revive')).body.data[0]._id.$oid;
      const release = th.hold();
      try {
        expect((await alice.delete(`/v2/instances/revive/acls/${id}/`)).status).toBe(200);
        expect((await acls(alice, 'revive')).body.data).toEqual([]);
        const res = await alice.request('PUT', '/v2/instances/revive/acls/', { body: [{ cidr_mask: '192.0.2.1', description: 'back' }] });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data.map((a: any) => [a._id.$oid, a.description])).toEqual([[id, 'back']]);
      } finally {
        release();
      }
      const inst = (await alice.get('/v2/instances/revive/')).body.data;
      await until('the edge admits it', async () => JSON.stringify(rulesOf(inst.id)) === '["192.0.2.1"]');
      expect((await acls(alice, 'revive')).body.data.map((a: any) => a.description)).toEqual(['back']);
    });

    it('400: the same range twice, a bad range, not a list; 409: over the quota; 404: another account', async () => {
      expect(
        (
          await alice.request('PUT', '/v2/instances/put/acls/', {
            body: [
              { cidr_mask: '192.0.2.1', description: 'a' },
              { cidr_mask: '192.0.2.1/32', description: 'b' },
            ],
          })
        ).status,
      ).toBe(400);
      expect((await alice.request('PUT', '/v2/instances/put/acls/', { body: [{ cidr_mask: 'x', description: 'a' }] })).body).toMatchObject({
        code: 'INVALID_VALUE',
        field: '[0].cidr_mask',
      });
      expect((await alice.request('PUT', '/v2/instances/put/acls/', { body: { cidr_mask: '192.0.2.1' } })).status).toBe(400);
      const many = Array.from({ length: 101 }, (_, i) => ({ cidr_mask: `10.0.${i}.0/24`, description: String(i) }));
      expect((await alice.request('PUT', '/v2/instances/put/acls/', { body: many })).body.code).toBe('QUOTA_EXCEEDED');
      expect((await bob.request('PUT', '/v2/instances/put/acls/', { body: [] })).status).toBe(404);
    });
  });

  it('the redis instance made first still admits nobody: none of the above leaked into it', () => {
    expect(rulesOf(redis.id)).toEqual([]);
  });
});
