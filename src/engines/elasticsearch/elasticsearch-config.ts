import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { compareVersions } from '../../lib/versions.js';
import type { SearchProduct } from './elasticsearch-versions.js';

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

/** Files of a node's configuration directory (ES_PATH_CONF / OPENSEARCH_PATH_CONF: the unit's directory). */
export const nodeConfigFile = (product: SearchProduct): string => (product === 'opensearch' ? 'opensearch.yml' : 'elasticsearch.yml');
export const dashboardsConfigFile = (product: SearchProduct): string =>
  product === 'opensearch' ? 'opensearch_dashboards.yml' : 'kibana.yml';
/** The variable the start script reads the configuration directory from. */
export const confDirVariable = (product: SearchProduct): string => (product === 'opensearch' ? 'OPENSEARCH_PATH_CONF' : 'ES_PATH_CONF');

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
  /** `X.Y.Z` of the node binary: some settings only exist from a version on. */
  readonly version: string;
  readonly instanceId: string;
  /** The unit's directory: configuration, logs; data in `data/` below it (given on the command line). */
  readonly dir: string;
  readonly httpPort: number;
  readonly transportPort: number;
  /** OpenSearch: whether its security plugin is installed (it must then be told it is off). */
  readonly securityPlugin: boolean;
}

/**
 * elasticsearch.yml / opensearch.yml of a node. Pure: the same input gives the same text.
 *
 * Elasticsearch: security is on (file realm for hangar's and Kibana's users, anonymous access
 * with the `hangar_client` role for clients, who get no credentials from the API). TLS is not
 * configured on the node: the edge terminates it. OpenSearch: its security plugin needs transport
 * certificates and a bcrypt user database, which hangar does not provision; it runs without
 * authentication, behind the edge's ACLs.
 */
export function renderNodeConfig(c: NodeConfigInput): string {
  const es = c.product === 'elasticsearch';
  const lines = [
    `# ${c.product} node of hangar instance ${c.instanceId}.`,
    '# Written by hangar from the instance record; hangar rewrites it, so edits here are lost.',
    '# path.data is on the command line: it names the unit directory, which is how hangar recognises the process.',
    `cluster.name: ${yaml(`hangar-${c.instanceId}`)}`,
    'node.name: "node-0"',
    `path.logs: ${yaml(c.dir)}`,
    '',
    '# Loopback only: clients come through the edge (HAProxy), which enforces the ACLs.',
    'network.host: "127.0.0.1"',
    `http.port: ${c.httpPort}`,
    `transport.port: ${c.transportPort}`,
    'discovery.type: "single-node"',
  ];
  if (es) {
    lines.push(
      '',
      '# Authentication: hangar and Kibana have users of the file realm; clients are anonymous with a role',
      '# that reads and writes every index but cannot manage security or the cluster.',
      'xpack.security.enabled: true',
      'xpack.security.http.ssl.enabled: false',
      'xpack.security.transport.ssl.enabled: false',
      `xpack.security.authc.anonymous.roles: ${yaml(ES_CLIENT_ROLE)}`,
      'xpack.security.authc.anonymous.authz_exception: true',
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

/** jvm.options of a node: the heap from the plan, dumps and crash files in the unit directory. */
export function renderJvmOptions(product: SearchProduct, heap: number, dir: string): string {
  const tmp = product === 'opensearch' ? '${OPENSEARCH_TMPDIR}' : '${ES_TMPDIR}';
  return [
    '# Written by hangar: the heap comes from the plan.',
    `-Xms${heap}m`,
    `-Xmx${heap}m`,
    '-XX:+UseG1GC',
    `-Djava.io.tmpdir=${tmp}`,
    '-XX:+HeapDumpOnOutOfMemoryError',
    `-XX:HeapDumpPath=${dir}`,
    `-XX:ErrorFile=${dir}/hs_err_pid%p.log`,
    '',
  ].join('\n');
}

/** log4j2.properties: everything to the console, which the runtime writes to the unit's log. */
export function renderLog4j2(): string {
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
