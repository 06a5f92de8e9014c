import { describe, expect, it } from 'vitest';
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

  const redisTls = { ...ports(20000), 'public.tls': 20004, 'servicenet.tls': 20005 };
  const redis = firstProductOf('redis');

  it('gives a redis instance in `preferred` a TLS listener beside each plain one, obeying the same allow list', () => {
    const text = renderHaproxyConfig(
      input({ instances: [{ id: A, routes: redis.edgeRoutes('redis_ha_instance', redisTls, 'preferred') }] }),
    );
    for (const [role, port] of [
      ['public.tls', 20004],
      ['servicenet.tls', 20005],
    ] as const) {
      const fe = section(text, `frontend ${frontendName(A, role)}`);
      expect(fe).toContain(`bind 127.0.0.1:${port} ssl crt "/data/edge/tls/${A}.pem"`);
      expect(fe).toContain(`tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`);
      expect(fe).toContain(`default_backend e-${A}-engine.primary`);
      expect(fe.join('\n')).not.toContain('verify');
    }
    expect(section(text, `frontend ${frontendName(A, 'public')}`)).toContain(
      `tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`,
    );
    // off: the plain listeners alone
    const off = renderHaproxyConfig(input({ instances: [{ id: A, routes: redis.edgeRoutes('redis_ha_instance', redisTls, 'off') }] }));
    expect(off).not.toContain('ssl crt');
    expect(section(off, `frontend ${frontendName(A, 'public')}`)).toContain('bind 127.0.0.1:20000');
  });

  it('with TLS required, keeps the plain listeners bound but refuses every client there before a byte is read (the probe source aside)', () => {
    const text = renderHaproxyConfig(
      input({ instances: [{ id: A, routes: redis.edgeRoutes('redis_ha_instance', redisTls, 'required') }] }),
    );
    for (const role of ['public', 'servicenet']) {
      const fe = section(text, `frontend ${frontendName(A, role)}`);
      expect(fe).toContain('tcp-request connection reject unless { src 127.77.0.1 }');
      expect(fe.join('\n')).not.toContain('tcp-request content');
    }
    expect(section(text, `frontend ${frontendName(A, 'public.tls')}`)).toContain(
      `tcp-request content reject unless { src -f "${allowListFile('/data/edge', A, 'main')}" }`,
    );
  });

  it("with mutual TLS, asks for a client certificate of the CA, checks its CRL and the instance's OU", () => {
    const routes = redis.edgeRoutes('redis_ha_instance', redisTls, 'preferred');
    const text = renderHaproxyConfig(input({ instances: [{ id: A, routes, clientAuth: true }] }));
    const fe = section(text, `frontend ${frontendName(A, 'public.tls')}`);
    expect(fe).toContain(
      `bind 127.0.0.1:20004 ssl crt "/data/edge/tls/${A}.pem" verify required ca-file "/data/edge/tls/${A}.ca.pem" crl-file "/data/edge/tls/${A}.crl.pem"`,
    );
    const ou = fe.indexOf(`tcp-request session reject unless { ssl_c_s_dn(OU) -m str ${A} }`);
    expect(ou).toBeGreaterThanOrEqual(0);
    expect(fe.indexOf('tcp-request content accept if { src 127.77.0.1 }')).toBeGreaterThan(ou);
    // the plain listeners ask for nothing
    expect(section(text, `frontend ${frontendName(A, 'public')}`).join('\n')).not.toMatch(/verify|ssl_c/);
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
    // a TLS listener's frontend is logged with a `~`
    expect(parseDeniedLine(`hangar-edge 127.0.0.2 i-${A}-public.tls~ 1795677093.240 PR`)).toEqual({
      source: '127.0.0.2',
      frontend: `i-${A}-public.tls`,
      at: 1795677093240,
    });
    // an admitted connection cut by the client or the server is logged too, and is not a refusal
    expect(parseDeniedLine(`hangar-edge 127.0.0.1 i-${A}-public 1795677093.240 CD`)).toBeUndefined();
    expect(parseDeniedLine('[ALERT] something else')).toBeUndefined();
  });
});
