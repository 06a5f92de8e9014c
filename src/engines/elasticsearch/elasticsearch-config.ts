import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { compareVersions } from '../../lib/versions.js';
import { join } from 'node:path';
import type { NodeFamily, SearchProduct } from './elasticsearch-versions.js';

/** The user hangar administers an Elasticsearch node as (`superuser`); clients never get it. */
export const ES_ADMIN_USER = 'hangar';
/** The user Kibana talks to Elasticsearch as (`kibana_system`: Kibana refuses a superuser). */
export const ES_KIBANA_USER = 'hangar_kibana';
/** The role clients get: they connect without credentials, as Elasticsearch's anonymous user. */
export const ES_CLIENT_ROLE = 'hangar_client';

/** Heap bounds: below 512 MB a node barely starts; above 31 GB the JVM loses compressed pointers. */
const MIN_HEAP_MB = 512;
const MAX_HEAP_MB = 31 * 1024;
/** Iterations of Elasticsearch's `{PBKDF2}` hashes at their default cost. */
const PBKDF2_ITERATIONS = 10_000;

/** Files of a node's configuration directory (the unit's directory). */
export const nodeConfigFile = (product: SearchProduct): string => (product === 'opensearch' ? 'opensearch.yml' : 'elasticsearch.yml');
export const dashboardsConfigFile = (product: SearchProduct): string =>
  product === 'opensearch' ? 'opensearch_dashboards.yml' : 'kibana.yml';
/** Its logging configuration: logging.yml up to 2.x, log4j2.properties from 5.0. */
export const loggingFile = (family: NodeFamily): string => (family === 'es2' ? 'logging.yml' : 'log4j2.properties');
/** Where its temporary files go (a directory of the unit: none is left in /tmp when the instance goes). */
export const NODE_TMP_DIR = 'tmp';

/**
 * JVM heap of a node, in MB, from the plan. The plan is the instance's size in GB; the heap is an
 * eighth of it (the rest being the file system cache Lucene relies on), at least 512 MB and at
 * most 31 GB.
 */
export function heapMb(plan: number): number {
  return Math.min(MAX_HEAP_MB, Math.max(MIN_HEAP_MB, plan * 128));
}

/** A string as YAML reads it: JSON's double-quoted form is valid YAML. */
const yaml = (value: string): string => JSON.stringify(value);

export interface NodeConfigInput {
  readonly product: SearchProduct;
  readonly family: NodeFamily;
  /** `X.Y.Z` of the node binary: some settings only exist from a version on. */
  readonly version: string;
  readonly instanceId: string;
  /** The unit's directory: configuration, logs; data in `data/` below it (given on the command line). */
  readonly dir: string;
  readonly httpPort: number;
  readonly transportPort: number;
  /** Elasticsearch: whether hangar turns X-Pack security on (the node has it in its free license). */
  readonly security: boolean;
  /** OpenSearch: whether its security plugin is installed (it must then be told it is off). */
  readonly securityPlugin: boolean;
}

/** The name of the transport port setting: `transport.tcp.port` up to 6.6, `transport.port` from 6.7. */
function transportPortSetting(c: NodeConfigInput): string {
  const old = c.family === 'es2' || c.family === 'es5' || (c.family === 'es6' && compareVersions(c.version, '6.7.0') < 0);
  return old ? 'transport.tcp.port' : 'transport.port';
}

/**
 * elasticsearch.yml / opensearch.yml of a node. Pure: the same input gives the same text.
 *
 * One node that elects itself: `discovery.type: single-node` (5.4 on), or on 2.x zen discovery
 * pinging only its own transport port. Where the node has security (`security`), hangar and
 * Kibana have users of the file realm and clients are anonymous with the `hangar_client` role;
 * TLS is not configured on the node (the edge terminates it). Without security (2.x to 6.1, the
 * oss and integration-test distributions, OpenSearch, whose plugin hangar does not provision),
 * the edge refuses what clients may not do.
 */
export function renderNodeConfig(c: NodeConfigInput): string {
  const lines = [
    `# ${c.product} ${c.version} node of hangar instance ${c.instanceId}.`,
    '# Written by hangar from the instance record; hangar rewrites it, so edits here are lost.',
    '# path.data is on the command line: it names the unit directory, which is how hangar recognises the process.',
    `cluster.name: ${yaml(`hangar-${c.instanceId}`)}`,
    'node.name: "node-0"',
    `path.logs: ${yaml(c.dir)}`,
    '',
    '# Loopback only: clients come through the edge (HAProxy), which enforces the ACLs.',
    'network.host: "127.0.0.1"',
    `http.port: ${c.httpPort}`,
    `${transportPortSetting(c)}: ${c.transportPort}`,
  ];
  if (c.family === 'es2') {
    lines.push(
      '# 2.x has no single-node discovery: the node pings only itself, and a master of one elects itself.',
      `discovery.zen.ping.unicast.hosts: [${yaml(`127.0.0.1:${c.transportPort}`)}]`,
      'discovery.zen.minimum_master_nodes: 1',
      'discovery.zen.ping_timeout: "1s"',
    );
  } else {
    lines.push('discovery.type: "single-node"');
  }
  if (c.security) {
    lines.push(
      '',
      '# Authentication: hangar and Kibana have users of the file realm; clients are anonymous with a role',
      '# that reads and writes every index but cannot manage security or the cluster.',
      'xpack.security.enabled: true',
      'xpack.security.http.ssl.enabled: false',
      'xpack.security.transport.ssl.enabled: false',
      `xpack.security.authc.anonymous.roles: ${yaml(ES_CLIENT_ROLE)}`,
      'xpack.security.authc.anonymous.authz_exception: true',
      '# Machine learning runs a native process of its own beside the node, which hangar does not supervise.',
      'xpack.ml.enabled: false',
    );
    // 8.x would otherwise generate certificates and enrollment tokens on first start
    if (compareVersions(c.version, '8.0.0') >= 0) lines.push('xpack.security.enrollment.enabled: false');
    // no downloads from the node (7.14 on)
    if (compareVersions(c.version, '7.14.0') >= 0) lines.push('ingest.geoip.downloader.enabled: false');
  } else if (c.securityPlugin) {
    lines.push(
      '',
      '# The security plugin is installed but not provisioned by hangar: off, the edge admits by ACL.',
      'plugins.security.disabled: true',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A line of jvm.options that hangar sets itself: heap size, dump and crash file paths, temporary directory. */
const OWN_JVM_OPTION = /^(?:\d+-?\d*:)?-(?:Xm[sx]|XX:HeapDumpPath=|XX:ErrorFile=|Djava\.io\.tmpdir=)/;

/**
 * jvm.options of a node (5.x and later; 2.x takes its JVM options from the environment, see
 * `jvmEnvironment`): the distribution's own (`base`, from its home; its JDK-specific lines kept
 * for its own parser), with what hangar sets instead: the heap from the plan, heap dumps and
 * crash files in the unit's directory, temporary files in its `tmp/`.
 */
export function renderJvmOptions(family: NodeFamily, base: string | undefined, heap: number, dir: string): string {
  const kept = (base ?? '-XX:+UseG1GC\n-XX:+HeapDumpOnOutOfMemoryError\n')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !OWN_JVM_OPTION.test(l));
  // 6.x and later read ES_TMPDIR (OPENSEARCH_TMPDIR), which hangar sets to the unit's tmp/; 5.x has none
  const tmp = family === 'opensearch' ? '${OPENSEARCH_TMPDIR}' : family === 'es5' ? join(dir, NODE_TMP_DIR) : '${ES_TMPDIR}';
  return [
    "# Written by hangar: the distribution's options, with the heap from the plan and files in the unit's directory.",
    ...kept,
    `-Xms${heap}m`,
    `-Xmx${heap}m`,
    `-Djava.io.tmpdir=${tmp}`,
    `-XX:HeapDumpPath=${dir}`,
    `-XX:ErrorFile=${join(dir, 'hs_err_pid%p.log')}`,
    '',
  ].join('\n');
}

/** 2.x: its JVM options through the environment its start script reads (it has no jvm.options). */
export function jvmEnvironment(heap: number, dir: string): Record<string, string> {
  return {
    ES_HEAP_SIZE: `${heap}m`,
    // appended after the script's own options: the last of a flag wins
    ES_JAVA_OPTS: [
      `-Djava.io.tmpdir=${join(dir, NODE_TMP_DIR)}`,
      `-XX:HeapDumpPath=${dir}`,
      `-XX:ErrorFile=${join(dir, 'hs_err_pid%p.log')}`,
    ].join(' '),
  };
}

/** The logging configuration: everything to the console, which the runtime writes to the unit's log. */
export function renderLogging(family: NodeFamily): string {
  if (family === 'es2') {
    return [
      "# Written by hangar: everything to the console, which hangar writes to the unit's log.",
      'es.logger.level: INFO',
      'rootLogger: ${es.logger.level}, console',
      'appender:',
      '  console:',
      '    type: console',
      '    layout:',
      '      type: consolePattern',
      '      conversionPattern: "[%d{ISO8601}][%-5p][%-25c] %m%n"',
      '',
    ].join('\n');
  }
  return [
    'status = error',
    'appender.console.type = Console',
    'appender.console.name = console',
    'appender.console.layout.type = PatternLayout',
    'appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %marker%m%n',
    'rootLogger.level = info',
    'rootLogger.appenderRef.console.ref = console',
    '',
  ].join('\n');
}

/**
 * A password hash Elasticsearch's file realm reads: `{PBKDF2}<iterations>$<salt>$<key>`, the key
 * being PBKDF2-HMAC-SHA512 of the password, 32 bytes, with a salt of 32 bytes (base64 both).
 */
export function pbkdf2Hash(password: string, salt: Buffer, iterations = PBKDF2_ITERATIONS): string {
  const key = pbkdf2Sync(password, salt, iterations, 32, 'sha512');
  return `{PBKDF2}${iterations}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** The password of Kibana's user, derived from the instance's admin secret (so every pass writes the same files). */
export function kibanaPassword(adminSecret: string): string {
  return createHmac('sha256', adminSecret).update('hangar kibana user').digest('hex');
}

/** A salt per instance and user, derived rather than random so that the users file is stable. */
function saltFor(instanceId: string, user: string, adminSecret: string): Buffer {
  return createHash('sha256').update(`hangar es salt\0${instanceId}\0${user}\0${adminSecret}`).digest();
}

/** The file realm of an Elasticsearch node: `users` (hashes) and `users_roles`. */
export function renderFileRealm(instanceId: string, adminSecret: string): { users: string; usersRoles: string } {
  const hash = (user: string, password: string) => pbkdf2Hash(password, saltFor(instanceId, user, adminSecret));
  return {
    users: `${ES_ADMIN_USER}:${hash(ES_ADMIN_USER, adminSecret)}\n${ES_KIBANA_USER}:${hash(ES_KIBANA_USER, kibanaPassword(adminSecret))}\n`,
    usersRoles: `superuser:${ES_ADMIN_USER}\nkibana_system:${ES_KIBANA_USER}\n`,
  };
}

/**
 * roles.yml: the role of clients (anonymous). Every index except Elasticsearch's restricted
 * system ones, cluster monitoring, index templates and ingest pipelines, and Kibana's features;
 * not security, cluster settings, snapshots or node shutdown.
 */
export function renderRoles(): string {
  return [
    `${ES_CLIENT_ROLE}:`,
    '  cluster: ["monitor", "manage_index_templates", "manage_pipeline"]',
    '  indices:',
    '    - names: ["*"]',
    '      privileges: ["all"]',
    '      allow_restricted_indices: false',
    '  applications:',
    '    - application: "kibana-.kibana"',
    '      privileges: ["all"]',
    '      resources: ["*"]',
    '',
  ].join('\n');
}

export interface DashboardsConfigInput {
  readonly product: SearchProduct;
  readonly instanceId: string;
  readonly dir: string;
  readonly port: number;
  readonly httpPort: number;
  /** The instance's admin secret (Kibana's password derives from it). */
  readonly adminSecret: string;
  /** OpenSearch Dashboards: whether its security plugin is installed (it must then be told it is off). */
  readonly securityPlugin: boolean;
}

/**
 * kibana.yml / opensearch_dashboards.yml. Kibana talks to the node as `hangar_kibana` and lets
 * visitors in anonymously (with the clients' role), its login page still there for users an
 * operator adds; OpenSearch Dashboards talks to a node without security.
 */
export function renderDashboardsConfig(c: DashboardsConfigInput): string {
  const lines = [
    `# ${c.product === 'opensearch' ? 'OpenSearch Dashboards' : 'Kibana'} of hangar instance ${c.instanceId}; written by hangar, edits here are lost.`,
    'server.host: "127.0.0.1"',
    `server.port: ${c.port}`,
    `server.name: ${yaml(`hangar-${c.instanceId}`)}`,
    `path.data: ${yaml(c.dir)}`,
  ];
  if (c.product === 'opensearch') {
    lines.push(`opensearch.hosts: [${yaml(`http://127.0.0.1:${c.httpPort}`)}]`);
    if (c.securityPlugin) lines.push('opensearch_security.enabled: false');
  } else {
    lines.push(
      `elasticsearch.hosts: [${yaml(`http://127.0.0.1:${c.httpPort}`)}]`,
      `elasticsearch.username: ${yaml(ES_KIBANA_USER)}`,
      `elasticsearch.password: ${yaml(kibanaPassword(c.adminSecret))}`,
      'xpack.security.authc.providers:',
      '  anonymous.anonymous1:',
      '    order: 0',
      '    credentials: "elasticsearch_anonymous_user"',
      '  basic.basic1:',
      '    order: 1',
    );
  }
  return `${lines.join('\n')}\n`;
}
