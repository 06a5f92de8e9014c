import { readFileSync } from 'node:fs';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import type { Services } from '../../src/http/context.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { type Account, Client, PASSWORD, type Reply, type TestHangar, startTestHangar } from '../helpers/hangar.js';

// CommonJS default exports, as NodeNext sees them.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
/** Routes left out of the document on purpose. */
const HIDDEN = (url: string) =>
  ['/healthz', '/readyz', '/metrics', '/', '/console/'].includes(url) ||
  url === '/docs' ||
  url.startsWith('/docs/') ||
  url.startsWith('/console/assets/');

/** `/v2/instances/:instance_name/` -> `/v2/instances/{instance_name}/` */
const templateOf = (fastifyUrl: string) => fastifyUrl.replace(/:(\w+)/g, '{$1}');
const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

type Doc = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, any>; securitySchemes: Record<string, any> };
  security: Record<string, string[]>[];
};

/**
 * Validates real answers against the response schemas of the served document and records
 * which statuses of which operations were seen.
 */
class Conformance {
  readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly doc: Doc) {
    addFormats(this.ajv);
    this.ajv.addSchema(doc as object, 'doc');
  }

  /** The validator of the schema at a JSON pointer into the document. */
  validator(path: string) {
    const v = this.ajv.getSchema(`doc#${path}`);
    if (!v) throw new Error(`no schema at ${path}`);
    return v;
  }

  check(method: string, template: string, res: Reply): Reply {
    const m = method.toLowerCase();
    const op = this.doc.paths[template]?.[m];
    expect(op, `${method} ${template} is in the document`).toBeDefined();
    const response = op.responses[String(res.status)];
    expect(response, `${method} ${template} documents status ${res.status} (answer: ${JSON.stringify(res.body)})`).toBeDefined();
    if (response.content['application/json']) {
      const v = this.validator(`/paths/${pointer(template)}/${m}/responses/${res.status}/content/application~1json/schema`);
      expect(v(res.body), `${method} ${template} ${res.status}: ${JSON.stringify(v.errors)} in ${JSON.stringify(res.body)}`).toBe(true);
    } else if (response.content['application/x-pem-file']) {
      // a certificate (the deployment's CA): documented as PEM text, answered as PEM
      expect(response.content['application/x-pem-file'].schema).toEqual({ type: 'string' });
      expect(res.headers.get('content-type')).toBe('application/x-pem-file');
      expect(res.body).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
    } else {
      // a file (a backup's download): documented as bytes, answered as bytes
      expect(response.content['application/octet-stream']?.schema).toEqual({ type: 'string', format: 'binary' });
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
    }
    const key = `${m} ${template}`;
    this.seen.set(key, (this.seen.get(key) ?? new Set()).add(res.status));
    return res;
  }
}

describe('the OpenAPI document', () => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  let doc: Doc;
  let c: Conformance;
  let m: any;

  /** One request as `who`, checked against the document. `params` fill the template. */
  const call = async (
    who: Client,
    method: string,
    template: string,
    params: Record<string, string> = {},
    body?: unknown,
    headers?: Record<string, string>,
  ) => {
    const path = template.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? `missing-${k}`));
    const res = await who.request(
      method,
      path,
      body === undefined ? { headers } : typeof body === 'string' ? { rawBody: body, headers } : { body, headers },
    );
    return c.check(method, template, res);
  };

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    bob = await th.signup();
    const res = await th.anonymous().get('/v2/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
    c = new Conformance(doc);
    await alice.ready(redisBody('r'));
    m = await alice.ready(mongoBody('m'));
    await alice.ready(esBody('e'));
  });
  afterAll(() => th?.close());

  it('is OpenAPI 3.1 with info, paths, components and both auth schemes', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: 'hangar API', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(Object.keys(doc.paths).length).toBeGreaterThan(10);
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        'Error',
        'Instance',
        'CreatedInstance',
        'Acl',
        'AclExtended',
        'MongodbUser',
        'Operation',
        'Event',
        'Webhook',
        'WebhookDelivery',
      ]),
    );
    expect(doc.components.securitySchemes).toEqual({
      token: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Auth-Token' }),
      basic: expect.objectContaining({ type: 'http', scheme: 'basic' }),
    });
    expect(doc.security).toEqual([{ token: [] }, { basic: [] }]);
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path).toMatch(/^\/v2\//);
      for (const [method, op] of Object.entries(item)) {
        expect(METHODS).toContain(method);
        expect(op.summary, `${method} ${path} has a summary`).toEqual(expect.any(String));
        expect(
          Object.keys(op.responses).some((s) => s.startsWith('2')),
          `${method} ${path} has a success response`,
        ).toBe(true);
        for (const [status, r] of Object.entries<any>(op.responses)) {
          expect(r.description, `${method} ${path} ${status} has a description`).toEqual(expect.any(String));
          // The event stream's success is Server-Sent Events, a backup's download a file, the CA a
          // PEM certificate; every other answer is JSON.
          const type =
            status !== '200'
              ? 'application/json'
              : path === '/v2/events/stream'
                ? 'text/event-stream'
                : path.endsWith('/download')
                  ? 'application/octet-stream'
                  : path === '/v2/tls/ca'
                    ? 'application/x-pem-file'
                    : 'application/json';
          expect(r.content?.[type]?.schema, `${method} ${path} ${status} has a ${type} body`).toBeDefined();
          if (status.startsWith('4') || status.startsWith('5'))
            expect(r.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
        }
      }
    }
  });

  it('says how each route authenticates: Basic only to log in, nothing to verify a token or read the document', () => {
    expect(doc.paths['/v2/tokens/']!.get.security).toEqual([{ basic: [] }]);
    expect(doc.paths['/v2/tokens/verify/']!.post.security).toEqual([]);
    expect(doc.paths['/v2/openapi.json']!.get.security).toEqual([]);
    expect(doc.paths['/v2/tls/ca']!.get.security).toEqual([]);
    expect(doc.paths['/v2/instances/']!.get.security).toBeUndefined();
  });

  it('documents every route the server has, and nothing else; health, metrics and docs are hidden', async () => {
    const routes: RouteOptions[] = [];
    // Routes are only registered here, never called: the services can stay out.
    const servicesNeverCalled = {} as Services;
    const app = await buildApp(
      {
        config: th.config,
        services: servicesNeverCalled,
        readiness: { check: async () => ({ problems: [], degraded: [] }) },
        now: Date.now,
      },
      undefined,
      { onRoute: (r) => routes.push(r) },
    );
    await app.ready();
    try {
      const operations = new Set<string>();
      for (const r of routes) {
        for (const method of [r.method].flat()) {
          if (method === 'HEAD') continue; // made by fastify for each GET
          const template = templateOf(r.url);
          if (HIDDEN(r.url)) {
            expect(doc.paths[template]?.[method.toLowerCase()], `${method} ${r.url} is hidden`).toBeUndefined();
            continue;
          }
          expect(doc.paths[template]?.[method.toLowerCase()], `${method} ${r.url} is documented`).toBeDefined();
          operations.add(`${method.toLowerCase()} ${template}`);
        }
      }
      const documented = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((meth) => `${meth} ${p}`));
      expect(documented.sort()).toEqual([...operations].sort());
      for (const hidden of ['/healthz', '/readyz', '/metrics', '/docs'])
        expect(
          routes.some((r) => r.url === hidden),
          hidden,
        ).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('every example validates against its schema', () => {
    let checked = 0;
    for (const [name, schema] of Object.entries<any>(doc.components.schemas)) {
      const v = c.validator(`/components/schemas/${pointer(name)}`);
      for (const ex of schema.examples ?? []) {
        expect(v(ex), `${name} example: ${JSON.stringify(v.errors)}`).toBe(true);
        checked++;
      }
    }
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const base = `/paths/${pointer(path)}/${method}`;
        // a file (a backup's download) has no example to give
        const media: [string, any][] = Object.entries<any>(op.responses).flatMap(([s, r]) =>
          Object.entries<any>(r.content)
            .filter(([type]) => type !== 'application/octet-stream')
            .map(([type, mt]): [string, any] => [`${base}/responses/${s}/content/${pointer(type)}`, mt]),
        );
        if (op.requestBody) media.push([`${base}/requestBody/content/application~1json`, op.requestBody.content['application/json']]);
        for (const [where, mt] of media) {
          const examples = [
            ...(mt.example !== undefined ? [mt.example] : []),
            ...Object.values<any>(mt.examples ?? {}).map((e) => e.value),
          ];
          expect(examples.length, `${where} has an example`).toBeGreaterThan(0);
          const v = c.validator(`${where}/schema`);
          for (const ex of examples) {
            expect(v(ex), `${where}: ${JSON.stringify(v.errors)} in ${JSON.stringify(ex)}`).toBe(true);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  describe('real answers match the document', () => {
    const anon = () => th.anonymous();

    // The checks above hold the event loop for seconds on a loaded machine (compiling every
    // schema), past the server's keep-alive timeout: let the connections it now closes close
    // before the first request here, which would otherwise be written on one (ECONNRESET).
    beforeAll(() => new Promise((resolve) => setTimeout(resolve, 200)));

    it('tokens', async () => {
      expect((await call(new Client(th.target, { basic: [alice.login, PASSWORD] }), 'GET', '/v2/tokens/')).status).toBe(200);
      expect((await call(new Client(th.target, { basic: [alice.login, 'wrong-password'] }), 'GET', '/v2/tokens/')).status).toBe(401);
      expect((await call(alice, 'GET', '/v2/tokens/')).status).toBe(401);
      const fresh = (await new Client(th.target, { basic: [alice.login, PASSWORD] }).get('/v2/tokens/')).body.data.token as string;
      expect((await call(anon(), 'POST', '/v2/tokens/verify/', {}, { token: fresh })).status).toBe(200);
      expect((await call(anon(), 'POST', '/v2/tokens/verify/', {}, { token: 'no-such-token' })).status).toBe(401);
      expect((await call(anon(), 'POST', '/v2/tokens/verify/', {}, { tok: fresh })).status).toBe(400);
      expect((await call(anon(), 'POST', '/v2/tokens/verify/', {}, 'token', { 'content-type': 'text/plain' })).status).toBe(415);
      expect((await call(new Client(th.target, { token: fresh }), 'DELETE', '/v2/tokens/')).status).toBe(200);
      expect((await call(new Client(th.target, { basic: [alice.login, PASSWORD] }), 'DELETE', '/v2/tokens/')).status).toBe(400);
      expect((await call(anon(), 'DELETE', '/v2/tokens/')).status).toBe(401);
    });

    it('instances', async () => {
      expect((await call(alice, 'GET', '/v2/instances/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/instances/')).status).toBe(401);
      for (const body of [
        redisBody('c1'),
        mongoBody('c2', 'mongodb_sharded', { encryption: true, storage_engine: 'wiredtiger' }),
        esBody('c3'),
      ]) {
        expect((await call(alice, 'POST', '/v2/instances/', {}, body)).status).toBe(200);
      }
      expect((await call(alice, 'POST', '/v2/instances/', {}, redisBody('c4', { service: 'mysql' }))).status).toBe(400);
      expect((await call(alice, 'POST', '/v2/instances/', {}, redisBody('c1'))).status).toBe(409);
      expect(
        (
          await call(alice, 'POST', '/v2/instances/', {}, JSON.stringify({ ...redisBody('c5'), pad: 'x'.repeat(70_000) }), {
            'content-type': 'application/json',
          })
        ).status,
      ).toBe(413);
      expect(
        (await call(alice, 'POST', '/v2/instances/', {}, JSON.stringify(redisBody('c6')), { 'content-type': 'text/plain' })).status,
      ).toBe(415);
      for (const name of ['r', 'm', 'e'])
        expect((await call(alice, 'GET', '/v2/instances/{instance_name}/', { instance_name: name })).status).toBe(200);
      expect((await call(alice, 'GET', '/v2/instances/{instance_name}/', { instance_name: 'nope' })).status).toBe(404);
      expect((await call(bob, 'GET', '/v2/instances/{instance_name}/', { instance_name: 'r' })).status).toBe(404);

      expect((await call(alice, 'POST', '/v2/instances/{instance_name}/rename/', { instance_name: 'c1' }, { name: 'c1b' })).status).toBe(
        200,
      );
      expect((await call(alice, 'POST', '/v2/instances/{instance_name}/rename/', { instance_name: 'c1b' }, { name: 'r' })).status).toBe(
        409,
      );
      expect(
        (await call(alice, 'POST', '/v2/instances/{instance_name}/rename/', { instance_name: 'c1b' }, { name: 'no spaces' })).status,
      ).toBe(400);
      expect((await call(alice, 'POST', '/v2/instances/{instance_name}/rename/', { instance_name: 'nope' }, { name: 'x' })).status).toBe(
        404,
      );

      expect((await call(alice, 'DELETE', '/v2/instances/{instance_name}/', { instance_name: 'c1b' })).status).toBe(200);
      // Deleting again: 409 while it is torn down, 404 once it is gone; both are documented.
      expect([404, 409]).toContain((await call(alice, 'DELETE', '/v2/instances/{instance_name}/', { instance_name: 'c1b' })).status);
      expect((await call(alice, 'DELETE', '/v2/instances/{instance_name}/', { instance_name: 'nope' })).status).toBe(404);
    });

    it('backups', async () => {
      const list = '/v2/instances/{instance_name}/backups/';
      const one = '/v2/instances/{instance_name}/backups/{backup_id}/';
      const download = '/v2/instances/{instance_name}/backups/{backup_id}/download';
      const policy = '/v2/instances/{instance_name}/backup-policy/';
      const created = await call(alice, 'POST', list, { instance_name: 'r' });
      expect(created.status).toBe(200);
      const id = created.body.data.id as string;
      // the answers that start a backup or a restore name their operation, as documented
      expect(created.headers.get('x-operation-id')).toBe(id);
      const started = { 'x-operation-id': { schema: { type: 'string' } }, location: { schema: { type: 'string' } } };
      expect(doc.paths['/v2/instances/{instance_name}/backups/']!.post.responses['200'].headers).toMatchObject(started);
      expect(doc.paths['/v2/instances/{instance_name}/restore/']!.post.responses['200'].headers).toMatchObject(started);
      expect((await call(alice, 'POST', list, { instance_name: 'r' })).status).toBe(409);
      expect((await call(alice, 'POST', list, { instance_name: 'nope' })).status).toBe(404);
      for (let i = 0; i < 200 && (await alice.get(`/v2/instances/r/backups/${id}/`)).body.data.state !== 'COMPLETED'; i++)
        await new Promise((r) => setTimeout(r, 25));
      expect((await call(alice, 'GET', list, { instance_name: 'r' })).status).toBe(200);
      expect((await call(alice, 'GET', list, { instance_name: 'nope' })).status).toBe(404);
      expect((await call(alice, 'GET', one, { instance_name: 'r', backup_id: id })).status).toBe(200);
      expect((await call(bob, 'GET', one, { instance_name: 'r', backup_id: id })).status).toBe(404);
      expect((await call(alice, 'GET', download, { instance_name: 'r', backup_id: id })).status).toBe(200);
      expect((await call(bob, 'GET', download, { instance_name: 'r', backup_id: id })).status).toBe(404);
      // two restores at once: one starts, the other is refused while it runs (one after the other,
      // the first may be over before the second is sent, and the second is then a new restore)
      const both = await Promise.all(
        [0, 1].map(() => call(alice, 'POST', '/v2/instances/{instance_name}/restore/', { instance_name: 'r' }, { backup_id: id })),
      );
      expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
      const restored = both.find((r) => r.status === 200)!;
      expect(restored.headers.get('location')).toBe(`/v2/operations/${restored.body.data.id}/`);
      expect((await call(alice, 'POST', '/v2/instances/{instance_name}/restore/', { instance_name: 'm' }, { backup_id: id })).status).toBe(
        400,
      );
      expect((await call(bob, 'POST', '/v2/instances/{instance_name}/restore/', { instance_name: 'r' }, { backup_id: id })).status).toBe(
        404,
      );
      await alice.waitFor('r', (r) => r?.state === 'ACTIVE');
      expect((await call(alice, 'GET', '/v2/instances/{instance_name}/restores/', { instance_name: 'r' })).status).toBe(200);
      expect((await call(bob, 'GET', '/v2/instances/{instance_name}/restores/', { instance_name: 'r' })).status).toBe(404);
      expect((await call(alice, 'GET', policy, { instance_name: 'r' })).status).toBe(200);
      expect((await call(bob, 'GET', policy, { instance_name: 'r' })).status).toBe(404);
      expect(
        (await call(alice, 'PUT', policy, { instance_name: 'r' }, { schedule: 'daily', daily_at: '03:00', keep_last: 7 })).status,
      ).toBe(200);
      expect((await call(alice, 'PUT', policy, { instance_name: 'r' }, { schedule: 'weekly' })).status).toBe(400);
      expect((await call(alice, 'DELETE', one, { instance_name: 'r', backup_id: id })).status).toBe(200);
      expect((await call(alice, 'DELETE', one, { instance_name: 'r', backup_id: id })).status).toBe(404);
    });

    it('ACLs', async () => {
      const list = '/v2/instances/{instance_name}/acls/';
      const one = '/v2/instances/{instance_name}/acls/{acl_id}/';
      const created = await call(alice, 'POST', list, { instance_name: 'r' }, { cidr_mask: '198.51.100.0/24', description: 'office' });
      expect(created.status).toBe(200);
      const id = created.body.data as string;
      expect(
        (await call(alice, 'POST', list, { instance_name: 'e' }, { cidr_mask: '198.51.100.9', description: 'es', transport: true })).status,
      ).toBe(200);
      expect((await call(alice, 'POST', list, { instance_name: 'r' }, { cidr_mask: '198.51.100.0/24', description: 'again' })).status).toBe(
        409,
      );
      expect((await call(alice, 'POST', list, { instance_name: 'r' }, { cidr_mask: '300.1.1.1', description: 'bad' })).status).toBe(400);
      expect((await call(alice, 'POST', list, { instance_name: 'nope' }, { cidr_mask: '198.51.100.1', description: 'x' })).status).toBe(
        404,
      );
      expect((await call(alice, 'GET', list, { instance_name: 'r' })).status).toBe(200);
      expect((await call(alice, 'GET', list, { instance_name: 'e' })).status).toBe(200);
      expect((await call(bob, 'GET', list, { instance_name: 'r' })).status).toBe(404);
      expect((await call(alice, 'GET', one, { instance_name: 'r', acl_id: id })).status).toBe(200);
      expect((await call(alice, 'GET', one, { instance_name: 'r', acl_id: '0'.repeat(24) })).status).toBe(404);
      expect((await call(alice, 'DELETE', one, { instance_name: 'r', acl_id: id })).status).toBe(200);
      expect((await call(alice, 'DELETE', one, { instance_name: 'r', acl_id: id })).status).toBe(404);
    });

    it('ACLs: expiry, check, effective rules, refused connections, bulk replace', async () => {
      const list = '/v2/instances/{instance_name}/acls/';
      const expiring = { cidr_mask: '198.51.100.77', description: 'a while', expires_at: new Date(Date.now() + 3_600_000).toISOString() };
      expect((await call(alice, 'POST', list, { instance_name: 'r' }, expiring)).status).toBe(200);
      expect((await call(alice, 'GET', list, { instance_name: 'r' })).status).toBe(200);
      expect((await call(alice, 'POST', list, { instance_name: 'r' }, { ...expiring, expires_at: '2001-01-01T00:00:00Z' })).status).toBe(
        400,
      );
      const check = '/v2/instances/{instance_name}/acls/check';
      expect((await call(alice, 'POST', check, { instance_name: 'r' }, { ip: '198.51.100.77' })).status).toBe(200);
      expect((await call(alice, 'POST', check, { instance_name: 'r' }, { ip: '192.0.2.1' })).status).toBe(200);
      expect((await call(alice, 'POST', check, { instance_name: 'r' }, { ip: '192.0.2.0/24' })).status).toBe(400);
      expect((await call(bob, 'POST', check, { instance_name: 'r' }, { ip: '192.0.2.1' })).status).toBe(404);
      const effective = '/v2/instances/{instance_name}/acls/effective';
      expect((await call(alice, 'GET', effective, { instance_name: 'r' })).status).toBe(200);
      expect((await call(bob, 'GET', effective, { instance_name: 'r' })).status).toBe(404);
      const denied = '/v2/instances/{instance_name}/acls/denied';
      th.runtime.connect((await alice.get('/v2/instances/r/')).body.data.id, '192.0.2.200');
      expect((await call(alice, 'GET', denied, { instance_name: 'r' })).status).toBe(200);
      expect((await call(bob, 'GET', denied, { instance_name: 'r' })).status).toBe(404);
      const etag = (await alice.get('/v2/instances/r/acls/')).headers.get('etag')!;
      const body = [{ cidr_mask: '198.51.100.77', description: 'kept' }];
      expect((await call(alice, 'PUT', list, { instance_name: 'r' }, body, { 'if-match': etag })).status).toBe(200);
      expect((await call(alice, 'PUT', list, { instance_name: 'r' }, body, { 'if-match': etag })).status).toBe(412);
      expect((await call(alice, 'PUT', list, { instance_name: 'r' }, [{ cidr_mask: 'nope', description: 'x' }])).status).toBe(400);
      expect((await call(bob, 'PUT', list, { instance_name: 'r' }, [])).status).toBe(404);
    });

    it('redis', async () => {
      for (const metric of ['connectedSlaves', 'connectedClients', 'spaceUsage', 'maxMemoryPolicy', 'maxClients']) {
        const t = `/v2/redis/{instance_name}/${metric}/`;
        expect((await call(alice, 'GET', t, { instance_name: 'r' })).status).toBe(200);
        expect((await call(alice, 'GET', t, { instance_name: 'm' })).status).toBe(404);
      }
      const resize = '/v2/redis/{instance_name}/resize/';
      expect((await call(alice, 'POST', resize, { instance_name: 'r' }, { new_plan: 600 })).status).toBe(400);
      expect((await call(alice, 'POST', resize, { instance_name: 'nope' }, { new_plan: 1000 })).status).toBe(404);
      expect((await call(alice, 'POST', resize, { instance_name: 'r' }, { new_plan: 1000 })).status).toBe(200);
      await alice.waitFor('r', (rec) => rec?.state === 'ACTIVE' && rec.plan === 1000);

      // An instance still being built: its engine cannot be read, nor resized.
      const release = th.hold();
      try {
        expect((await alice.post('/v2/instances/', redisBody('b'))).status).toBe(200);
        expect((await call(alice, 'GET', '/v2/redis/{instance_name}/maxClients/', { instance_name: 'b' })).status).toBe(409);
        expect((await call(alice, 'POST', resize, { instance_name: 'b' }, { new_plan: 1000 })).status).toBe(409);
      } finally {
        release();
      }
    });

    it('elasticsearch: resize', async () => {
      const resize = '/v2/elasticsearch/{instance_name}/resize/';
      expect((await call(alice, 'POST', resize, { instance_name: 'e' }, { new_plan: 5 })).status).toBe(400);
      expect((await call(alice, 'POST', resize, { instance_name: 'r' }, { new_plan: 8 })).status).toBe(404);
      expect((await call(bob, 'POST', resize, { instance_name: 'e' }, { new_plan: 8 })).status).toBe(404);
      expect((await call(alice, 'POST', resize, { instance_name: 'e' }, { new_plan: 8 })).status).toBe(200);
      await alice.waitFor('e', (rec) => rec?.state === 'COMPLETED' && rec.plan === 8);
    });

    it('redis: settings, slow log, stats', async () => {
      const config = '/v2/redis/{instance_name}/config/';
      expect((await call(alice, 'GET', config, { instance_name: 'r' })).status).toBe(200);
      expect((await call(alice, 'GET', config, { instance_name: 'm' })).status).toBe(404);
      expect((await call(alice, 'PATCH', config, { instance_name: 'r' }, { 'maxmemory-policy': 'allkeys-lru', timeout: 300 })).status).toBe(
        200,
      );
      expect((await call(alice, 'PATCH', config, { instance_name: 'r' }, { 'maxmemory-policy': 'lru' })).status).toBe(400);
      expect((await call(bob, 'PATCH', config, { instance_name: 'r' }, { timeout: 1 })).status).toBe(404);
      for (const t of ['/v2/redis/{instance_name}/slowlog/', '/v2/redis/{instance_name}/stats/']) {
        expect((await call(alice, 'GET', t, { instance_name: 'r' })).status).toBe(200);
        expect((await call(bob, 'GET', t, { instance_name: 'r' })).status).toBe(404);
      }
    });

    it('redis users and password rotation', async () => {
      const users = '/v2/redis/{instance_name}/users/';
      const user = '/v2/redis/{instance_name}/users/{username}/';
      const at = { instance_name: 'r' };
      expect((await call(alice, 'POST', users, at, { username: 'app', keys: ['app:*'], commands: ['+@read'] })).status).toBe(200);
      expect((await call(alice, 'POST', users, at, { username: 'app' })).status).toBe(409);
      expect((await call(alice, 'POST', users, at, { username: 'bad', commands: ['+config'] })).status).toBe(400);
      expect((await call(alice, 'GET', users, at)).status).toBe(200);
      expect((await call(bob, 'GET', users, at)).status).toBe(404);
      expect((await call(alice, 'GET', user, { ...at, username: 'app' })).status).toBe(200);
      expect((await call(alice, 'GET', user, { ...at, username: 'nobody' })).status).toBe(404);
      expect((await call(alice, 'PATCH', user, { ...at, username: 'app' }, { channels: ['news.*'] })).status).toBe(200);
      expect((await call(alice, 'PATCH', user, { ...at, username: 'app' }, {})).status).toBe(400);
      const rotate = '/v2/redis/{instance_name}/users/{username}/rotate-password';
      expect((await call(alice, 'POST', rotate, { ...at, username: 'app' })).status).toBe(200);
      expect((await call(alice, 'POST', rotate, { ...at, username: 'app' })).status).toBe(409);
      expect((await call(alice, 'POST', `${rotate}/finish`, { ...at, username: 'app' })).status).toBe(200);
      expect((await call(alice, 'POST', `${rotate}/finish`, { ...at, username: 'nobody' })).status).toBe(404);
      expect((await call(alice, 'DELETE', user, { ...at, username: 'app' })).status).toBe(200);
      expect((await call(alice, 'DELETE', user, { ...at, username: 'app' })).status).toBe(404);
      const instanceRotate = '/v2/instances/{instance_name}/rotate-password';
      expect((await call(alice, 'POST', instanceRotate, at)).status).toBe(200);
      expect((await call(alice, 'POST', instanceRotate, at)).status).toBe(409);
      expect((await call(alice, 'POST', `${instanceRotate}/finish`, at)).status).toBe(200);
      expect((await call(bob, 'POST', `${instanceRotate}/finish`, at)).status).toBe(404);
    });

    it('MongoDB users', async () => {
      const users = '/v2/mongodb/{instance_id}/databases/{database_name}/users';
      const user = `${users}/{username}`;
      const at = { instance_id: m.id, database_name: 'app' };
      const body = { username: 'u1', password: 'password-1', roles: [{ role: 'readWrite', db: 'app' }] };
      expect((await call(alice, 'POST', users, at, body)).status).toBe(200);
      expect((await call(alice, 'POST', users, at, body)).status).toBe(409);
      expect((await call(alice, 'POST', users, at, { ...body, username: 'u2', password: 'short' })).status).toBe(400);
      expect((await call(alice, 'POST', users, { ...at, instance_id: 'nope' }, body)).status).toBe(404);
      expect((await call(alice, 'GET', users, at)).status).toBe(200);
      expect((await call(alice, 'GET', users, { ...at, database_name: 'a.b' })).status).toBe(400);
      expect((await call(bob, 'GET', users, at)).status).toBe(404);
      expect((await call(alice, 'PATCH', user, { ...at, username: 'u1' }, { roles: [{ role: 'read', db: 'app' }] })).status).toBe(200);
      expect((await call(alice, 'PATCH', user, { ...at, username: 'u1' }, {})).status).toBe(400);
      expect((await call(alice, 'PATCH', user, { ...at, username: 'nobody' }, { password: 'password-2' })).status).toBe(404);
      expect((await call(alice, 'DELETE', user, { ...at, username: 'u1' })).status).toBe(200);
      expect((await call(alice, 'DELETE', user, { ...at, username: 'nobody' })).status).toBe(404);
    });

    it('zones', async () => {
      expect((await call(alice, 'GET', '/v2/zones/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/zones/')).status).toBe(401);
    });

    it("the API's front door: GET /v2/ without credentials, hangar's version and where the rest is", async () => {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
      const res = await call(anon(), 'GET', '/v2/');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        name: 'hangar',
        version: pkg.version,
        api: 'ObjectRocket API v2',
        links: { docs: '/docs', openapi: '/v2/openapi.json', console: expect.anything() },
      });
      expect((await anon().get('/v2')).body).toEqual(res.body);
      expect((await alice.get('/v2/')).body).toEqual(res.body);
      // every link answers
      const { docs, openapi, console: page } = res.body.data.links;
      for (const path of [docs, openapi, ...(page === null ? [] : [page])])
        expect((await fetch(`${th.url}${path}`)).status, path).toBe(200);
    });

    it('engines and instance shells', async () => {
      expect((await call(alice, 'GET', '/v2/engines/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/engines/')).status).toBe(401);
      const shell = '/v2/instances/{instance_name}/shell';
      expect((await call(alice, 'GET', shell, { instance_name: 'r' })).status).toBe(200);
      expect((await call(alice, 'GET', shell, { instance_name: 'e' })).status).toBe(200);
      expect((await c.check('GET', shell, await alice.get('/v2/instances/r/shell?servicenet=perhaps'))).status).toBe(400);
      expect((await call(bob, 'GET', shell, { instance_name: 'r' })).status).toBe(404);
    });

    it('events and the document itself', async () => {
      expect((await c.check('GET', '/v2/events/', await alice.get('/v2/events/?limit=5'))).status).toBe(200);
      expect((await c.check('GET', '/v2/events/', await alice.get('/v2/events/?limit=many'))).status).toBe(400);
      expect((await call(anon(), 'GET', '/v2/openapi.json')).status).toBe(200);
    });

    it('operations', async () => {
      const created = await call(alice, 'POST', '/v2/instances/', {}, redisBody('op-doc'));
      const id = created.headers.get('x-operation-id')!;
      expect(doc.paths['/v2/instances/']!.post.responses['200'].headers).toMatchObject({
        'x-operation-id': { schema: { type: 'string' } },
        location: { schema: { type: 'string' } },
      });
      expect((await call(alice, 'GET', '/v2/operations/')).status).toBe(200);
      expect((await call(alice, 'GET', '/v2/operations/', {}, undefined)).body.data.length).toBeGreaterThan(0);
      expect((await c.check('GET', '/v2/operations/', await alice.get('/v2/operations/?state=DONE'))).status).toBe(400);
      expect((await call(alice, 'GET', '/v2/operations/{operation_id}/', { operation_id: id })).status).toBe(200);
      expect((await call(bob, 'GET', '/v2/operations/{operation_id}/', { operation_id: id })).status).toBe(404);
      const cancel = '/v2/operations/{operation_id}/cancel';
      const backup = await th.hangar.operations.start({
        kind: 'backup',
        instance: null,
        account: (await alice.get('/v2/whoami/')).body.data.account_id,
      });
      expect((await call(alice, 'POST', cancel, { operation_id: backup.id })).status).toBe(200);
      expect((await call(alice, 'POST', cancel, { operation_id: backup.id })).status).toBe(409);
      expect((await call(bob, 'POST', cancel, { operation_id: id })).status).toBe(404);
    });

    it('the event stream', async () => {
      const stream = await fetch(`${th.url}/v2/events/stream`, { headers: { 'x-auth-token': (alice.auth as { token: string }).token } });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(doc.paths['/v2/events/stream']!.get.responses['200'].content['text/event-stream']).toBeDefined();
      await stream.body!.cancel();
      c.seen.set('get /v2/events/stream', new Set([200]));
      expect((await c.check('GET', '/v2/events/stream', await alice.get('/v2/events/stream?kinds=nope'))).status).toBe(400);
      expect((await c.check('GET', '/v2/events/stream', await alice.get('/v2/events/stream?instance=nope'))).status).toBe(404);
    });

    it('webhooks', async () => {
      const created = await call(alice, 'POST', '/v2/webhooks/', {}, { url: 'https://93.184.215.14/hook', kinds: ['operation'] });
      expect(created.status).toBe(200);
      const at = { webhook_id: created.body.data.id };
      expect((await call(alice, 'POST', '/v2/webhooks/', {}, { url: 'https://10.0.0.7/hook' })).status).toBe(400);
      expect((await call(alice, 'GET', '/v2/webhooks/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/webhooks/')).status).toBe(401);
      expect((await call(alice, 'GET', '/v2/webhooks/{webhook_id}/', at)).status).toBe(200);
      expect((await call(bob, 'GET', '/v2/webhooks/{webhook_id}/', at)).status).toBe(404);
      expect((await call(alice, 'POST', '/v2/webhooks/{webhook_id}/rotate-secret', at)).status).toBe(200);
      expect((await call(bob, 'POST', '/v2/webhooks/{webhook_id}/rotate-secret', at)).status).toBe(404);
      expect((await call(alice, 'GET', '/v2/webhooks/{webhook_id}/deliveries', at)).status).toBe(200);
      expect(
        (
          await c.check(
            'GET',
            '/v2/webhooks/{webhook_id}/deliveries',
            await alice.get(`/v2/webhooks/${at.webhook_id}/deliveries?state=LOST`),
          )
        ).status,
      ).toBe(400);
      expect((await call(alice, 'DELETE', '/v2/webhooks/{webhook_id}/', at)).status).toBe(200);
      expect((await call(alice, 'DELETE', '/v2/webhooks/{webhook_id}/', at)).status).toBe(404);
    });

    it('API keys and whoami', async () => {
      const key = (await call(alice, 'POST', '/v2/keys/')).body.data;
      expect((await call(alice, 'POST', '/v2/keys/', {}, { name: 'x' })).status).toBe(400);
      expect((await call(alice, 'GET', '/v2/keys/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/keys/')).status).toBe(401);
      expect((await call(bob, 'DELETE', '/v2/keys/{key_id}/', { key_id: key.id })).status).toBe(404);
      expect((await call(alice, 'DELETE', '/v2/keys/{key_id}/', { key_id: key.id })).status).toBe(200);
      expect((await call(alice, 'GET', '/v2/whoami/')).status).toBe(200);
      expect((await call(anon(), 'GET', '/v2/whoami/')).status).toBe(401);
    });

    it('TLS: the CA, instance certificates, client certificates', async () => {
      expect((await call(anon(), 'GET', '/v2/tls/ca')).status).toBe(200);
      const at = { instance_name: 'r' };
      expect((await call(alice, 'GET', '/v2/instances/{instance_name}/tls/', at)).status).toBe(200);
      expect((await call(bob, 'GET', '/v2/instances/{instance_name}/tls/', at)).status).toBe(404);
      const certs = '/v2/instances/{instance_name}/tls/client-certs';
      const made = await call(alice, 'POST', certs, at, { common_name: 'app' });
      expect(made.status).toBe(200);
      expect((await call(alice, 'POST', certs, at, { common_name: 'a/b' })).status).toBe(400);
      expect((await call(bob, 'POST', certs, at, { common_name: 'app' })).status).toBe(404);
      expect((await call(alice, 'GET', certs, at)).status).toBe(200);
      expect((await call(bob, 'GET', certs, at)).status).toBe(404);
      expect((await call(alice, 'DELETE', `${certs}/{serial}`, { ...at, serial: made.body.data.serial })).status).toBe(200);
      expect((await call(alice, 'DELETE', `${certs}/{serial}`, { ...at, serial: '0'.repeat(32) })).status).toBe(404);
    });

    it('every operation was seen answering a success and an error', () => {
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of Object.keys(item)) {
          const statuses = [...(c.seen.get(`${method} ${path}`) ?? [])];
          expect(
            statuses.some((s) => s < 300),
            `${method} ${path} success seen (${statuses})`,
          ).toBe(true);
          // The document, the CA certificate and the front door take no input and no credentials: they have no error to provoke.
          if (path !== '/v2/openapi.json' && path !== '/v2/tls/ca' && path !== '/v2/')
            expect(
              statuses.some((s) => s >= 400),
              `${method} ${path} error seen (${statuses})`,
            ).toBe(true);
        }
      }
    });
  });
});

describe('the docs page', () => {
  let th: TestHangar;
  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
  });
  afterAll(() => th?.close());

  it('is served by hangar, assets included, without authentication and without any other host', async () => {
    const page = await fetch(`${th.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((x) => x[1]!);
    expect(assets.length).toBeGreaterThan(3);
    for (const a of assets) {
      expect(a).toMatch(/^\/docs\/static\//);
      expect((await fetch(`${th.url}${a}`)).status, a).toBe(200);
    }
    const init = await (await fetch(`${th.url}/docs/static/swagger-initializer.js`)).text();
    // The page reads the document from hangar and asks no validator service.
    expect(init).toContain("url: resolveUrl('./json')");
    expect(init).toContain('validatorUrl: null');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const json = await fetch(`${th.url}/docs/json`);
    expect(json.status).toBe(200);
    expect(((await json.json()) as Doc).openapi).toMatch(/^3\.1\./);
  });
});
