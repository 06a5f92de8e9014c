import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { edgeRoute, type EdgeRoute, type HttpPolicy } from '../../domain/endpoints.js';
import { findExecutable } from '../../lib/binaries.js';
import { ensureEdgeCertificate } from './edge-tls.js';
import { firstProductOf } from '../../engines/products.js';
import {
  DENIED_LOG_FORMAT,
  allowListFile,
  frontendName,
  instanceOfFrontend,
  parseDeniedLine,
  renderHaproxyConfig,
  roleOfFrontend,
  type EdgeConfigInput,
} from './haproxy-config.js';

const A = '65a1b2c3d4e5f60718293a4b';
const B = '65a1b2c3d4e5f60718293a4c';
const ports = (p: number) => ({ public: p, servicenet: p + 1, 'engine.primary': p + 2, 'engine.replica': p + 3 });

const input = (over: Partial<EdgeConfigInput> = {}): EdgeConfigInput => ({
  edgeDir: '/data/edge',
  bindAddress: '127.0.0.1',
  maxconn: 9000,
  probeSource: '127.77.0.1',
  instances: [{ id: A, routes: firstProductOf('redis').edgeRoutes('redis_ha_instance', ports(20000)) }],
  ...over,
});

/** The lines of one section (`frontend x`, `backend y`, `global`). */
function section(text: string, header: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(header);
  if (start < 0) return [];
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith('    ')) break;
    out.push(l.trim());
  }
  return out;
}

describe('renderHaproxyConfig', () => {
  it('gives each client address of an instance a listener that forwards to the primary', () => {
    const text = renderHaproxyConfig(input());
    for (const [role, port] of [
      ['public', 20000],
      ['servicenet', 20001],
    ] as const) {
      const fe = section(text, `frontend ${frontendName(A, role)}`);
      expect(fe).toContain(`bind 127.0.0.1:${port}`);
      expect(fe).toContain(`default_backend e-${A}-engine.primary`);
    }
    expect(section(text, `backend e-${A}-engine.primary`)).toEqual(['server engine 127.0.0.1:20002']);
  });

  it('admits the probe source, then rejects every source outside the allow list (default deny)', () => {
    const fe = section(renderHaproxyConfig(input()), `frontend ${frontendName(A, 'public')}`);
    const accept = fe.indexOf('tcp-request content accept if { src 127.77.0.1 }');
    const reject = fe.indexOf(`tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`);
    expect(accept).toBeGreaterThanOrEqual(0);
    expect(reject).toBeGreaterThan(accept);
  });

  it("admits the host's own address on the listeners replica-set members reach each other through, and on no other", () => {
    const mongo = {
      'public.0': 30001,
      'public.1': 30002,
      'public.2': 30003,
      'engine.0': 20001,
      'engine.1': 20002,
      'engine.2': 20003,
    };
    const text = renderHaproxyConfig(
      input({
        peerSource: '10.0.0.5',
        instances: [
          { id: A, routes: firstProductOf('redis').edgeRoutes('redis_ha_instance', ports(20000)) },
          { id: B, routes: firstProductOf('mongodb').edgeRoutes('mongodb_replica_set', mongo) },
        ],
      }),
    );
    for (const i of [0, 1, 2]) {
      const fe = section(text, `frontend ${frontendName(B, `public.${i}`)}`);
      const peer = fe.indexOf('tcp-request content accept if { src 10.0.0.5 }');
      expect(peer).toBeGreaterThanOrEqual(0);
      expect(fe.findIndex((l) => l.startsWith('tcp-request content reject'))).toBeGreaterThan(peer);
    }
    expect(section(text, `frontend ${frontendName(A, 'public')}`).join('\n')).not.toContain('10.0.0.5');
  });

  it('runs in master-worker mode with an admin socket that passes listeners on reload', () => {
    const global = section(renderHaproxyConfig(input({ maxconn: 4000 })), 'global');
    expect(global).toContain('master-worker');
    expect(global).toContain('stats socket "/data/edge/admin.sock" mode 600 level admin expose-fd listeners');
    expect(global).toContain('maxconn 4000');
  });

  it('logs refused connections only, to the log receiver when there is one', () => {
    const text = renderHaproxyConfig(input({ logAddress: '127.0.0.1:5514' }));
    expect(section(text, 'global')).toContain('log 127.0.0.1:5514 len 1024 local0 info');
    expect(section(text, 'defaults')).toEqual(
      expect.arrayContaining(['log global', `log-format "${DENIED_LOG_FORMAT}"`, 'option dontlog-normal']),
    );
    expect(renderHaproxyConfig(input())).not.toMatch(/^\s*log /m);
  });

  it('binds where it is told', () => {
    const text = renderHaproxyConfig(input({ bindAddress: '0.0.0.0' }));
    expect(section(text, `frontend ${frontendName(A, 'public')}`)).toContain('bind 0.0.0.0:20000');
  });

  it('is the same text whatever the order of instances and routes', () => {
    const a = { id: A, routes: firstProductOf('redis').edgeRoutes('redis_ha_instance', ports(20000)) };
    const b = { id: B, routes: firstProductOf('redis').edgeRoutes('redis_ha_instance', ports(20010)) };
    const reversed = { id: B, routes: [...b.routes].reverse() };
    expect(renderHaproxyConfig(input({ instances: [a, b] }))).toBe(renderHaproxyConfig(input({ instances: [reversed, a] })));
  });

  it('has no listener without instances', () => {
    expect(renderHaproxyConfig(input({ instances: [] }))).not.toMatch(/^frontend/m);
  });

  it('uses one allow list per access group', () => {
    const es = firstProductOf('elasticsearch').edgeRoutes(
      'elasticsearch',
      Object.fromEntries(
        [
          'public.http',
          'public.https',
          'public.transport',
          'public.kibana_http',
          'public.kibana_https',
          'servicenet.http',
          'servicenet.https',
          'servicenet.transport',
          'engine.http',
          'engine.transport',
          'engine.kibana',
        ].map((r, i) => [r, 21000 + i]),
      ),
    );
    const text = renderHaproxyConfig(input({ instances: [{ id: A, routes: es }] }));
    expect(section(text, `frontend ${frontendName(A, 'public.transport')}`).join('\n')).toContain(
      allowListFile('/data/edge', A, 'transport'),
    );
    expect(section(text, `frontend ${frontendName(A, 'public.kibana_http')}`).join('\n')).toContain(
      allowListFile('/data/edge', A, 'kibana'),
    );
    expect(section(text, `frontend ${frontendName(A, 'public.http')}`).join('\n')).toContain(allowListFile('/data/edge', A, 'main'));
    expect(section(text, `frontend ${frontendName(A, 'public.kibana_https')}`).join('\n')).toContain(
      allowListFile('/data/edge', A, 'kibana'),
    );
  });

  it("terminates TLS on TLS listeners with the instance's certificate, forwarding in plain to the same engine", () => {
    const routes = firstProductOf('mongodb').edgeRoutes('mongodb_sharded', {
      public: 1,
      ssl: 2,
      'engine.config': 3,
      'engine.shard': 4,
      'engine.mongos': 5,
    });
    const text = renderHaproxyConfig(input({ instances: [{ id: A, routes }] }));
    const ssl = section(text, `frontend ${frontendName(A, 'ssl')}`);
    expect(ssl).toContain(`bind 127.0.0.1:2 ssl crt "/data/edge/tls/${A}.pem"`);
    expect(ssl).toContain(`default_backend e-${A}-engine.mongos`);
    expect(ssl).toContain(`tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`);
    expect(section(text, `frontend ${frontendName(A, 'public')}`)).toContain('bind 127.0.0.1:1');
    expect(section(text, `backend e-${A}-engine.mongos`)).toEqual(['server engine 127.0.0.1:5']);
  });
});

describe('HTTP listeners', () => {
  const policy: HttpPolicy = {
    refuse: [
      {
        methods: ['PUT', 'POST'],
        path: '^/+_cluster/+settings/*$',
        reply: { status: 403, json: '{"reason":"the settings are hangar\'s, not $HOME\'s"}' },
      },
      { path: '^/+_snapshot(?:/|$)', reply: { status: 403, json: '{"reason":"no snapshots"}' } },
    ],
  };
  const p = {
    'public.http': 1,
    'public.https': 2,
    'public.transport': 3,
    'public.kibana_http': 4,
    'engine.http': 5,
    'engine.transport': 6,
    'engine.kibana': 7,
  };
  const routes: EdgeRoute[] = [
    { ...edgeRoute(p, 'public.http', 'engine.http'), http: policy },
    { ...edgeRoute(p, 'public.https', 'engine.http', true), http: policy },
    edgeRoute(p, 'public.transport', 'engine.transport', false, 'transport'),
    {
      ...edgeRoute(p, 'public.kibana_http', 'engine.kibana', false, 'kibana'),
      http: { refuse: [], answer: { status: 503, json: '{"error":"no Kibana"}', html: "<p>no Kibana, it's so</p>" } },
    },
  ];
  const text = renderHaproxyConfig(input({ instances: [{ id: A, routes }] }));

  it('read HTTP after the access rules, refuse by method and decoded path, answer with a literal body (no escapes, no $VAR)', () => {
    const fe = section(text, `frontend ${frontendName(A, 'public.http')}`);
    expect(fe.slice(1, 4)).toEqual([
      'mode http',
      'tcp-request content accept if { src 127.77.0.1 }',
      `tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`,
    ]);
    expect(fe).toContain("acl refused_0 path,url_dec -m reg '^/+_cluster/+settings/*$'");
    expect(fe).toContain(
      'http-request return status 403 content-type "application/json" string \'{"reason":"the settings are hangar\\u0027s, not $HOME\\u0027s"}\' if { method PUT POST } refused_0',
    );
    expect(fe).toContain(
      'http-request return status 403 content-type "application/json" string \'{"reason":"no snapshots"}\' if refused_1',
    );
    expect(section(text, `backend e-${A}-engine.http`)).toEqual(['mode http', 'server engine 127.0.0.1:5']);
    // transport stays TCP
    expect(section(text, `frontend ${frontendName(A, 'public.transport')}`)).not.toContain('mode http');
    expect(section(text, `backend e-${A}-engine.transport`)).toEqual(['server engine 127.0.0.1:6']);
  });

  it('answer every request of a listener with nothing behind it: a page for browsers, JSON otherwise', () => {
    const fe = section(text, `frontend ${frontendName(A, 'public.kibana_http')}`);
    expect(fe).toContain(
      'http-request return status 503 content-type "text/html; charset=utf-8" string \'<p>no Kibana, it&#39;s so</p>\' if { req.hdr(accept) -m sub text/html }',
    );
    expect(fe).toContain('http-request return status 503 content-type "application/json" string \'{"error":"no Kibana"}\'');
  });

  it('refuse to share a backend between an HTTP and a TCP listener', () => {
    const mixed = [routes[0]!, edgeRoute(p, 'public.https', 'engine.http', true)];
    expect(() => renderHaproxyConfig(input({ instances: [{ id: A, routes: mixed }] }))).toThrow(/mix HTTP and TCP/);
  });

  const haproxy = findExecutable('haproxy', process.env.PATH ?? '/usr/bin:/bin');
  it.runIf(haproxy !== undefined || process.env.CI === 'true')('is a configuration HAProxy accepts', async () => {
    const edgeDir = mkdtempSync(join(tmpdir(), 'hangar-edge-cfg-'));
    try {
      // the TLS listener names the instance's certificate, the listeners allow lists: HAProxy opens them when it checks
      await ensureEdgeCertificate({ edgeDir, instanceId: A, host: '127.0.0.1' });
      mkdirSync(join(edgeDir, 'allow'));
      for (const g of ['main', 'transport', 'kibana']) writeFileSync(allowListFile(edgeDir, A, g as 'main'), '127.0.0.1\n');
      const file = join(edgeDir, 'haproxy.cfg');
      writeFileSync(file, renderHaproxyConfig(input({ edgeDir, instances: [{ id: A, routes }] })));
      const check = spawnSync(haproxy!, ['-c', '-f', file], { encoding: 'utf8' });
      expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    } finally {
      rmSync(edgeDir, { recursive: true, force: true });
    }
  });
});

describe('frontend names', () => {
  it('name the instance they belong to', () => {
    expect(instanceOfFrontend(frontendName(A, 'public'))).toBe(A);
    expect(instanceOfFrontend(frontendName(A, 'public.kibana_http'))).toBe(A);
    expect(instanceOfFrontend('GLOBAL')).toBeUndefined();
    expect(roleOfFrontend(frontendName(A, 'public.kibana_http'))).toBe('public.kibana_http');
  });
});

describe('parseDeniedLine', () => {
  it('reads a refused connection, with or without the syslog header, and nothing else', () => {
    expect(parseDeniedLine(`<134>Nov 26 07:11:33 haproxy[26046]: hangar-edge 127.0.0.2 i-${A}-public 1795677093.240 PR`)).toEqual({
      source: '127.0.0.2',
      frontend: `i-${A}-public`,
      at: 1795677093240,
    });
    expect(parseDeniedLine('hangar-edge ::1 f_public 1795677093.005 PR\n')).toEqual({
      source: '::1',
      frontend: 'f_public',
      at: 1795677093005,
    });
    // an admitted connection cut by the client or the server is logged too, and is not a refusal
    expect(parseDeniedLine(`hangar-edge 127.0.0.1 i-${A}-public 1795677093.240 CD`)).toBeUndefined();
    expect(parseDeniedLine('[ALERT] something else')).toBeUndefined();
  });
});
