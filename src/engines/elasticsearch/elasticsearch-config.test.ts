import { pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
// a real YAML parser (a devDependency) reads what hangar writes, as the products would
import { parse } from 'yaml';
import {
  ES_ADMIN_USER,
  ES_CLIENT_ROLE,
  ES_KIBANA_USER,
  heapMb,
  kibanaPassword,
  pbkdf2Hash,
  renderDashboardsConfig,
  renderFileRealm,
  jvmEnvironment,
  renderJvmOptions,
  renderLogging,
  renderNodeConfig,
  renderRoles,
  type NodeConfigInput,
} from './elasticsearch-config.js';

const ID = '65a1b2c3d4e5f60718293a4b';
const base: NodeConfigInput = {
  product: 'elasticsearch',
  family: 'es7',
  version: '8.11.1',
  instanceId: ID,
  dir: '/data/instances/x/node',
  httpPort: 21000,
  transportPort: 21001,
  security: true,
  securityPlugin: false,
};

/**
 * Checks a password against a `{PBKDF2}` hash the way Elasticsearch's file realm does
 * (Hasher.verifyPbkdf2Hash): iterations from the prefix, salt and key in base64, the key length
 * deduced from the stored key, PBKDF2 with HMAC-SHA512.
 */
function elasticsearchVerifies(password: string, stored: string): boolean {
  const m = /^\{PBKDF2\}(\d+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (!m) return false;
  const salt = Buffer.from(m[2]!, 'base64');
  const hashChars = m[3]!;
  const keyBits = Math.floor((hashChars.length * 3) / 64) * 128;
  if (keyBits <= 0 || keyBits % 128 !== 0 || salt.length < 8) return false;
  const computed = pbkdf2Sync(password, salt, Number(m[1]), keyBits / 8, 'sha512').toString('base64');
  return computed.length === hashChars.length && timingSafeEqual(Buffer.from(computed), Buffer.from(hashChars));
}

describe('renderNodeConfig', () => {
  it('names the cluster after the instance and binds loopback on the engine ports, single node', () => {
    const y = parse(renderNodeConfig(base));
    expect(y).toMatchObject({
      'cluster.name': `hangar-${ID}`,
      'network.host': '127.0.0.1',
      'http.port': 21000,
      'transport.port': 21001,
      'discovery.type': 'single-node',
      'path.logs': base.dir,
    });
    // path.data is given on the command line only (a setting in both places is ambiguous)
    expect(y['path.data']).toBeUndefined();
  });

  it('turns Elasticsearch security on, without TLS on the node (the edge terminates it), clients anonymous with their role', () => {
    const y = parse(renderNodeConfig(base));
    expect(y).toMatchObject({
      'xpack.security.enabled': true,
      'xpack.security.http.ssl.enabled': false,
      'xpack.security.transport.ssl.enabled': false,
      'xpack.security.authc.anonymous.roles': ES_CLIENT_ROLE,
      'xpack.security.enrollment.enabled': false,
      'ingest.geoip.downloader.enabled': false,
    });
  });

  it('writes only settings the version knows', () => {
    const y7 = parse(renderNodeConfig({ ...base, version: '7.10.2' }));
    expect(y7['xpack.security.enabled']).toBe(true);
    expect(y7).not.toHaveProperty('xpack.security.enrollment.enabled');
    expect(y7).not.toHaveProperty('ingest.geoip.downloader.enabled');
    expect(parse(renderNodeConfig({ ...base, version: '7.17.9' }))).not.toHaveProperty('xpack.security.enrollment.enabled');
  });

  it('turns no security on where the node has none (an xpack setting would stop it)', () => {
    const y = parse(renderNodeConfig({ ...base, version: '7.17.25', security: false }));
    expect(Object.keys(y).filter((k) => k.startsWith('xpack.') || k.startsWith('ingest.'))).toEqual([]);
  });

  it('6.8 with X-Pack: security on, machine learning (a native process of its own) off, transport.port', () => {
    const y = parse(renderNodeConfig({ ...base, family: 'es6', version: '6.8.23' }));
    expect(y).toMatchObject({
      'xpack.security.enabled': true,
      'xpack.ml.enabled': false,
      'transport.port': 21001,
      'discovery.type': 'single-node',
    });
    expect(y).not.toHaveProperty('ingest.geoip.downloader.enabled');
  });

  it('up to 6.6, transport.tcp.port; 5.x single node too', () => {
    for (const [family, version] of [
      ['es6', '6.1.2'],
      ['es5', '5.6.9'],
    ] as const) {
      const y = parse(renderNodeConfig({ ...base, family, version, security: false }));
      expect(y).toMatchObject({ 'transport.tcp.port': 21001, 'discovery.type': 'single-node', 'http.port': 21000 });
      expect(y).not.toHaveProperty('transport.port');
    }
  });

  it('2.x: no single-node discovery; the node pings only its own transport port and elects itself', () => {
    const y = parse(renderNodeConfig({ ...base, family: 'es2', version: '2.4.6', security: false }));
    expect(y).toMatchObject({
      'transport.tcp.port': 21001,
      'discovery.zen.ping.unicast.hosts': ['127.0.0.1:21001'],
      'discovery.zen.minimum_master_nodes': 1,
    });
    expect(y).not.toHaveProperty('discovery.type');
  });

  it('runs OpenSearch without xpack settings, turning its security plugin off only when it is installed', () => {
    const os = { ...base, product: 'opensearch' as const, family: 'opensearch' as const, version: '2.11.0', security: false };
    const plain = parse(renderNodeConfig(os));
    expect(plain).toMatchObject({
      'cluster.name': `hangar-${ID}`,
      'http.port': 21000,
      'transport.port': 21001,
      'discovery.type': 'single-node',
    });
    expect(Object.keys(plain).filter((k) => k.startsWith('xpack.') || k.startsWith('plugins.'))).toEqual([]);
    expect(parse(renderNodeConfig({ ...os, securityPlugin: true }))['plugins.security.disabled']).toBe(true);
  });

  it('is deterministic and quotes paths', () => {
    expect(renderNodeConfig(base)).toBe(renderNodeConfig({ ...base }));
    expect(parse(renderNodeConfig({ ...base, dir: '/data dir/"x": y' }))['path.logs']).toBe('/data dir/"x": y');
  });
});

describe('heap and JVM options', () => {
  it('gives an eighth of the plan (GB) as heap, between 512 MB and 31 GB', () => {
    expect([4, 8, 16, 32, 64, 128, 256, 512].map(heapMb)).toEqual([512, 1024, 2048, 4096, 8192, 16384, 31744, 31744]);
  });

  const DISTRIBUTION = [
    '## JVM configuration',
    '-Xms1g',
    '-Xmx1g',
    '8-13:-XX:+UseConcMarkSweepGC',
    '14-:-XX:+UseG1GC',
    '-Djava.io.tmpdir=${ES_TMPDIR}',
    '-XX:+HeapDumpOnOutOfMemoryError',
    '-XX:HeapDumpPath=data',
    '-XX:ErrorFile=logs/hs_err_pid%p.log',
    '9-:-Djava.locale.providers=COMPAT',
  ].join('\n');

  it("keeps the distribution's options (JDK-bound ones for its own parser) but sets the heap, dumps and temporary files", () => {
    const lines = renderJvmOptions('es6', DISTRIBUTION, 2048, '/d/node').split('\n');
    expect(lines).toEqual(
      expect.arrayContaining(['8-13:-XX:+UseConcMarkSweepGC', '14-:-XX:+UseG1GC', '9-:-Djava.locale.providers=COMPAT']),
    );
    expect(lines).toEqual(
      expect.arrayContaining(['-Xms2048m', '-Xmx2048m', '-XX:HeapDumpPath=/d/node', '-XX:ErrorFile=/d/node/hs_err_pid%p.log']),
    );
    expect(lines.filter((l) => /^-Xm[sx]|HeapDumpPath|ErrorFile|java\.io\.tmpdir/.test(l))).toEqual([
      '-Xms2048m',
      '-Xmx2048m',
      '-Djava.io.tmpdir=${ES_TMPDIR}',
      '-XX:HeapDumpPath=/d/node',
      '-XX:ErrorFile=/d/node/hs_err_pid%p.log',
    ]);
    expect(renderJvmOptions('opensearch', DISTRIBUTION, 512, '/d').split('\n')).toContain('-Djava.io.tmpdir=${OPENSEARCH_TMPDIR}');
    // 5.x has no ES_TMPDIR: the directory itself
    expect(renderJvmOptions('es5', DISTRIBUTION, 512, '/d').split('\n')).toContain('-Djava.io.tmpdir=/d/tmp');
    expect(renderJvmOptions('es7', undefined, 512, '/d').split('\n')).toEqual(expect.arrayContaining(['-XX:+UseG1GC', '-Xmx512m']));
  });

  it('2.x: heap and options in the environment its script reads', () => {
    expect(jvmEnvironment(1024, '/d/node')).toEqual({
      ES_HEAP_SIZE: '1024m',
      ES_JAVA_OPTS: '-Djava.io.tmpdir=/d/node/tmp -XX:HeapDumpPath=/d/node -XX:ErrorFile=/d/node/hs_err_pid%p.log',
    });
  });

  it('logs to the console only: log4j2 from 5.x, logging.yml on 2.x', () => {
    const text = renderLogging('es7');
    expect(text).toContain('appender.console.type = Console');
    expect(text).toContain('rootLogger.appenderRef.console.ref = console');
    expect(text).not.toMatch(/RollingFile|fileName/);
    const two = parse(renderLogging('es2'));
    expect(two).toMatchObject({ rootLogger: '${es.logger.level}, console', appender: { console: { type: 'console' } } });
  });
});

describe('file realm', () => {
  it('hashes passwords in the {PBKDF2} format Elasticsearch verifies', () => {
    const hash = pbkdf2Hash('correct horse', Buffer.alloc(32, 7));
    expect(hash).toMatch(/^\{PBKDF2\}10000\$[A-Za-z0-9+/]{43}=\$[A-Za-z0-9+/]{43}=$/);
    expect(elasticsearchVerifies('correct horse', hash)).toBe(true);
    expect(elasticsearchVerifies('correct horsf', hash)).toBe(false);
  });

  it("holds hangar's user (superuser) and Kibana's (kibana_system), with stable content", () => {
    const realm = renderFileRealm(ID, 'admin-secret-0123');
    const users = Object.fromEntries(
      realm.users
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
    );
    expect(Object.keys(users)).toEqual([ES_ADMIN_USER, ES_KIBANA_USER]);
    expect(elasticsearchVerifies('admin-secret-0123', users[ES_ADMIN_USER]!)).toBe(true);
    expect(elasticsearchVerifies(kibanaPassword('admin-secret-0123'), users[ES_KIBANA_USER]!)).toBe(true);
    expect(realm.usersRoles).toBe(`superuser:${ES_ADMIN_USER}\nkibana_system:${ES_KIBANA_USER}\n`);
    expect(renderFileRealm(ID, 'admin-secret-0123')).toEqual(realm);
    expect(realm.users).not.toContain('admin-secret-0123');
  });

  it('gives clients a role over every index but not security or the cluster', () => {
    const roles = parse(renderRoles()) as Record<
      string,
      { cluster: string[]; indices: { names: string[]; privileges: string[]; allow_restricted_indices: boolean }[] }
    >;
    const role = roles[ES_CLIENT_ROLE]!;
    expect(role.indices).toEqual([{ names: ['*'], privileges: ['all'], allow_restricted_indices: false }]);
    expect(role.cluster).toContain('monitor');
    expect(role.cluster).not.toContain('all');
    expect(role.cluster).not.toContain('manage_security');
    expect(role.cluster).not.toContain('manage');
  });
});

describe('renderDashboardsConfig', () => {
  const k = {
    product: 'elasticsearch' as const,
    instanceId: ID,
    dir: '/d/kibana',
    port: 21002,
    httpPort: 21000,
    adminSecret: 'admin-secret',
    securityPlugin: false,
  };

  it('runs Kibana on loopback, talking to the node as its own user, visitors anonymous', () => {
    const y = parse(renderDashboardsConfig(k));
    expect(y).toMatchObject({
      'server.host': '127.0.0.1',
      'server.port': 21002,
      'path.data': '/d/kibana',
      'elasticsearch.hosts': ['http://127.0.0.1:21000'],
      'elasticsearch.username': ES_KIBANA_USER,
      'elasticsearch.password': kibanaPassword('admin-secret'),
    });
    expect(y['xpack.security.authc.providers']).toEqual({
      'anonymous.anonymous1': { order: 0, credentials: 'elasticsearch_anonymous_user' },
      'basic.basic1': { order: 1 },
    });
  });

  it('runs OpenSearch Dashboards against the node, its security plugin off when installed', () => {
    const os = { ...k, product: 'opensearch' as const };
    const y = parse(renderDashboardsConfig(os));
    expect(y).toMatchObject({ 'server.port': 21002, 'opensearch.hosts': ['http://127.0.0.1:21000'] });
    expect(Object.keys(y).some((key) => key.startsWith('elasticsearch.') || key.startsWith('xpack.'))).toBe(false);
    expect(y).not.toHaveProperty('opensearch_security.enabled');
    expect(parse(renderDashboardsConfig({ ...os, securityPlugin: true }))['opensearch_security.enabled']).toBe(false);
  });
});
