import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePattern } from '../../src/http/plugins/error-handler.js';
import { esBody, redisBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/** Refusals say what is wrong in words that are true, and say what a right value looks like. */
describe('messages of refusals', () => {
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar();
    alice = await th.signup();
    await alice.ready(redisBody('r'));
    await alice.post('/v2/instances/', esBody('e'));
  });
  afterAll(() => th.close());

  describe('a CIDR prefix out of range says the range of prefixes', () => {
    it.each([
      ['10.0.0.0/33', 'from 0 to 32 for an IPv4 address (IPv6: 0 to 128)'],
      ['10.0.0.0/', 'from 0 to 32 for an IPv4 address (IPv6: 0 to 128)'],
      ['10.0.0.0/x', 'from 0 to 32 for an IPv4 address (IPv6: 0 to 128)'],
      ['2001:db8::/129', 'from 0 to 128 for an IPv6 address (IPv4: 0 to 32)'],
    ])('%s', async (cidr, range) => {
      const res = await alice.post('/v2/instances/r/acls/', { cidr_mask: cidr, description: 'x' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'cidr_mask' });
      expect(res.body.message).toBe(
        `"cidr_mask" ${JSON.stringify(cidr)} is not a CIDR range: the prefix length after "/" must be a whole number ${range}`,
      );
    });

    it('in the ACLs of a create body too', async () => {
      const res = await alice.post('/v2/instances/', redisBody('x', { acls: [{ cidr_mask: '10.0.0.0/40', description: 'x' }] }));
      expect(res.body.message).toContain('"acls[0].cidr_mask" "10.0.0.0/40" is not a CIDR range: the prefix length');
    });

    it('an address that is not one is still told so', async () => {
      const res = await alice.post('/v2/instances/r/acls/', { cidr_mask: '10.0.0.300/8', description: 'x' });
      expect(res.body.message).toContain('must be an IP address (a.b.c.d) or a CIDR range');
    });
  });

  it('"an elasticsearch instance", not "a elasticsearch instance"', async () => {
    const res = await alice.get('/v2/redis/e/maxClients/');
    expect(res.status).toBe(404);
    expect(res.body.message).toBe('instance "e" is an elasticsearch instance, not a redis instance');
  });

  describe('a query value of the wrong form says what a right one looks like, never a regular expression', () => {
    it.each([
      ['/v2/events/?before=abc', '"before" must be a whole number of 1 to 15 digits, e.g. 42; got "abc"'],
      ['/v2/events/?limit=ten', '"limit" must be a whole number of 1 to 4 digits, e.g. 20; got "ten"'],
      ['/v2/operations/?limit=-1', '"limit" must be a whole number of 1 to 3 digits, e.g. 20; got "-1"'],
    ])('%s', async (path, message) => {
      const res = await alice.get(path);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', message });
      expect(res.body.message).not.toMatch(/\^|\$|\[0-9\]/);
    });

    it('every pattern of a request (path, query, header, body) in the OpenAPI document has words', async () => {
      const doc = (await alice.get('/v2/openapi.json')).body;
      const patterns = new Set<string>();
      const walk = (v: unknown): void => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (typeof v === 'object' && v !== null) {
          for (const [k, x] of Object.entries(v)) {
            if (k === 'pattern' && typeof x === 'string') patterns.add(x);
            else if (k !== 'responses') walk(x);
          }
        }
      };
      walk(doc.paths);
      expect(patterns.size).toBeGreaterThan(0);
      for (const p of patterns) expect(describePattern(p), p).toEqual(expect.any(String));
    });
  });

  describe('a name with a letter beyond ASCII says ASCII letters, and which character', () => {
    it.each([
      ['café', '"é" is a letter, but not an ASCII one'],
      ['a b', '" " is not one'],
      ['x'.repeat(65), 'got 65 characters'],
    ])('%j', async (name, why) => {
      const res = await alice.post('/v2/instances/', redisBody(name));
      expect(res.status).toBe(400);
      expect(res.body.message).toContain('"name" must be 1 to 64 characters, each an ASCII letter (A-Z, a-z), a digit, "-" or "_"');
      expect(res.body.message).toContain(why);
    });
  });
});
