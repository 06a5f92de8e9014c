import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { type Account, PASSWORD, type Reply, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/** Field names whose value is a credential (`env`: a shell command's environment, where a password travels). */
const SECRETS = ['password', 'api_key', 'token', 'pass_key', 'secret', 'private_key', 'env'];

/** A field of this name and schema holds a credential: a boolean flag named `password` does not. */
const secretField = (name: string, schema: any) => SECRETS.includes(name) && schema?.type !== 'boolean';

/** Whether a JSON schema of the document (references followed) has a secret field at any depth. */
function schemaHasSecret(schema: any, doc: any, seen = new Set<string>()): boolean {
  if (!schema || typeof schema !== 'object') return false;
  if (typeof schema.$ref === 'string') {
    if (seen.has(schema.$ref)) return false;
    seen.add(schema.$ref);
    const target = schema.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], doc);
    return schemaHasSecret(target, doc, seen);
  }
  if (schema.properties && Object.entries(schema.properties).some(([k, v]) => secretField(k, v) || schemaHasSecret(v, doc, seen)))
    return true;
  if (schemaHasSecret(schema.items, doc, seen)) return true;
  return ['anyOf', 'oneOf', 'allOf'].some((k) => Array.isArray(schema[k]) && schema[k].some((s: any) => schemaHasSecret(s, doc, seen)));
}

/** Whether a JSON value has a secret field with a value, at any depth. */
function bodyHasSecret(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(bodyHasSecret);
  if (v === null || typeof v !== 'object') return false;
  const filled = (x: unknown) => (typeof x === 'string' && x !== '') || (x !== null && typeof x === 'object' && Object.keys(x).length > 0);
  return Object.entries(v).some(([k, x]) => (SECRETS.includes(k) && filled(x)) || bodyHasSecret(x));
}

/**
 * `Cache-Control: no-store` on every answer that carries a secret. The operations whose success
 * can carry one are taken from the OpenAPI document (every route, its response schema), and each
 * is called: a route added later with a secret in its answer fails here until it is called here
 * too, and answers no-store.
 */
describe('Cache-Control: no-store on every answer carrying a secret', () => {
  let th: TestHangar;
  let alice: Account;
  let doc: any;
  /** `METHOD /template` -> a request that answers 200 with a secret in it. */
  const calls = new Map<string, () => Promise<Reply>>();

  beforeAll(async () => {
    // a webhook receiver on this host (nothing listens: deliveries fail, which this test does not look at)
    th = await startTestHangar({ env: { HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true', HANGAR_WEBHOOK_ALLOW_HTTP: 'true' } });
    alice = await th.signup();
    await alice.ready(redisBody('r'));
    await alice.ready(mongoBody('m'));
    await alice.ready(esBody('e'));
    doc = (await th.anonymous().get('/v2/openapi.json')).body;
    calls.set('GET /v2/instances/', () => alice.get('/v2/instances/'));
    calls.set('POST /v2/instances/', () => alice.post('/v2/instances/', redisBody(`n${calls.size}-${Date.now()}`)));
    calls.set('GET /v2/instances/{instance_name}/', () => alice.get('/v2/instances/r/'));
    calls.set('GET /v2/instances/{instance_name}/shell', () => alice.get('/v2/instances/r/shell'));
    calls.set('GET /v2/tokens/', () =>
      th
        .anonymous()
        .get('/v2/tokens/', { headers: { authorization: `Basic ${Buffer.from(`${alice.login}:${PASSWORD}`).toString('base64')}` } }),
    );
    calls.set('POST /v2/keys/', () => alice.post('/v2/keys/'));
    calls.set('POST /v2/instances/{instance_name}/rotate-password', () => alice.post('/v2/instances/r/rotate-password'));
    calls.set('POST /v2/redis/{instance_name}/users/', () => alice.post('/v2/redis/r/users/', { username: `u${Date.now()}` }));
    calls.set('POST /v2/redis/{instance_name}/users/{username}/rotate-password', async () => {
      await alice.post('/v2/redis/r/users/', { username: 'rotated' });
      return alice.post('/v2/redis/r/users/rotated/rotate-password');
    });
    calls.set('POST /v2/webhooks/', () => alice.post('/v2/webhooks/', { url: 'http://127.0.0.1:9/hook' }));
    calls.set('POST /v2/instances/{instance_name}/tls/client-certs', () =>
      alice.post('/v2/instances/r/tls/client-certs', { common_name: 'app' }),
    );
    calls.set('POST /v2/webhooks/{webhook_id}/rotate-secret', async () => {
      const hook = await alice.post('/v2/webhooks/', { url: 'http://127.0.0.1:9/rotated' });
      return alice.post(`/v2/webhooks/${hook.body.data.id}/rotate-secret`);
    });
  });
  afterAll(() => th.close());

  /** Every operation of the document whose 200 answer can carry a secret. */
  function secretOperations(): string[] {
    const out: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const schema = op?.responses?.['200']?.content?.['application/json']?.schema;
        if (schemaHasSecret(schema, doc)) out.push(`${method.toUpperCase()} ${path}`);
      }
    }
    return out.sort();
  }

  it('finds them in the document: instance records and their lists, creations, tokens, new key pairs, rotated passwords, webhook secrets, client certificate keys, shell commands', () => {
    expect(secretOperations()).toEqual([
      'GET /v2/instances/',
      'GET /v2/instances/{instance_name}/',
      'GET /v2/instances/{instance_name}/shell',
      'GET /v2/tokens/',
      'POST /v2/instances/',
      'POST /v2/instances/{instance_name}/rotate-password',
      'POST /v2/instances/{instance_name}/tls/client-certs',
      'POST /v2/keys/',
      'POST /v2/redis/{instance_name}/users/',
      'POST /v2/redis/{instance_name}/users/{username}/rotate-password',
      'POST /v2/webhooks/',
      'POST /v2/webhooks/{webhook_id}/rotate-secret',
    ]);
  });

  it('each of them answers with a secret and Cache-Control: no-store', async () => {
    const ops = secretOperations();
    const missing = ops.filter((op) => !calls.has(op));
    expect(missing, 'operations with a secret in their answer that this test does not call yet').toEqual([]);
    for (const op of ops) {
      const res = await calls.get(op)!();
      expect(`${op} ${res.status}`).toBe(`${op} 200`);
      expect(bodyHasSecret(res.body), `${op} carries a secret`).toBe(true);
      expect(res.headers.get('cache-control'), op).toBe('no-store');
    }
  });

  it('every instance record, whatever the service, and lists of them', async () => {
    for (const name of ['r', 'm', 'e']) expect((await alice.get(`/v2/instances/${name}/`)).headers.get('cache-control')).toBe('no-store');
    const list = await alice.get('/v2/instances/');
    expect(list.body.data.length).toBeGreaterThanOrEqual(3);
    expect(list.headers.get('cache-control')).toBe('no-store');
  });

  it('an answer replayed for an Idempotency-Key, and the errors of those routes', async () => {
    const headers = { 'idempotency-key': 'create-once' };
    const first = await alice.post('/v2/instances/', redisBody('once'), { headers });
    const again = await alice.post('/v2/instances/', redisBody('once'), { headers });
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    expect(again.body.data.password).toBe(first.body.data.password);
    expect(again.headers.get('cache-control')).toBe('no-store');
    const key = await alice.post('/v2/keys/', undefined, { headers: { 'idempotency-key': 'key-once' } });
    const keyAgain = await alice.post('/v2/keys/', undefined, { headers: { 'idempotency-key': 'key-once' } });
    expect(keyAgain.body.data.pass_key).toBe(key.body.data.pass_key);
    expect(keyAgain.headers.get('cache-control')).toBe('no-store');
    expect((await alice.get('/v2/instances/ghost/')).headers.get('cache-control')).toBe('no-store');
  });

  it("a backup's download, the instance's data itself, answers no-store too", async () => {
    const id = (await alice.post('/v2/instances/r/backups/')).body.data.id;
    await expect
      .poll(async () => (await alice.get(`/v2/instances/r/backups/${id}/`)).body.data.state, { timeout: 10_000 })
      .toBe('COMPLETED');
    const res = await alice.get(`/v2/instances/r/backups/${id}/download`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('cache-control')).toBe('no-store');
    // its record, which carries no secret, is left alone
    expect((await alice.get(`/v2/instances/r/backups/${id}/`)).headers.get('cache-control')).toBeNull();
  });

  it('answers without a secret are left to the usual caching rules', async () => {
    const acls = await alice.get('/v2/instances/r/acls/');
    expect(acls.status).toBe(200);
    expect(bodyHasSecret(acls.body)).toBe(false);
    expect(acls.headers.get('cache-control')).toBeNull();
    expect((await alice.get('/v2/zones/')).headers.get('cache-control')).toBeNull();
  });
});
