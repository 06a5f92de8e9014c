import { createHash } from 'node:crypto';
import { nodeLostTolerations, type EdgeBackend, type KubeObject } from '../../domain/cluster.js';
import { openRoutes, type AccessGroup, type EdgeRoute } from '../../domain/endpoints.js';
import type { EdgeTls } from '../../domain/units.js';
import { NODE_LOST_AFTER_SECONDS, type KubernetesTarget } from '../../domain/zones.js';
import { parseCidr } from '../../lib/cidr.js';
import { clientAuthRule } from '../local/edge-tls.js';
import { DENIED_LOG_FORMAT, httpPolicyLines } from '../local/haproxy-config.js';

/** The edge's runtime API (HAProxy's stats socket, admin level), on TCP in the pod: hangar changes ACLs through it. */
export const EDGE_ADMIN_PORT = 9999;
/** Edge pods per instance: two, on different nodes where there are several. */
export const EDGE_REPLICAS = 2;
/** Memory of an edge container, in MB. */
export const EDGE_MEMORY_MB = 128;
const CONFIG_DIR = '/etc/hangar-edge';
const ACL_DIR = '/etc/hangar-edge/acl';
const TLS_DIR = '/etc/hangar-edge/tls';

/**
 * The TLS files of an edge pod (from the instance's TLS Secret): the certificate with its key
 * (`crt`), and for mutual TLS the CA and its CRL. The runtime API names them by these paths
 * (`set ssl cert /etc/hangar-edge/tls/server.pem`).
 */
export const EDGE_TLS_FILES = { cert: `${TLS_DIR}/server.pem`, ca: `${TLS_DIR}/ca.pem`, crl: `${TLS_DIR}/crl.pem` } as const;

export const edgeNames = (id: string) => ({
  config: `h-${id}-edge`,
  acl: `h-${id}-edge-acl`,
  tls: `h-${id}-edge-tls`,
  deployment: `h-${id}-edge`,
  service: `h-${id}-edge`,
  engines: `h-${id}-engines`,
  policy: `h-${id}-edge`,
});

/** The allow list file of an access group, as the edge loads it (and as `add acl` names it). */
export const aclFile = (group: AccessGroup) => `${ACL_DIR}/${group}.lst`;
/** The file of the sources hangar probes from, admitted whatever the ACLs say. */
export const HANGAR_SOURCES_FILE = `${CONFIG_DIR}/hangar.lst`;

/**
 * A Service port name (an IANA service name: at most 15 characters, `public.0` -> `public-0`),
 * also the edge's frontend and backend names. A longer role is cut and given a digest of itself,
 * so that no two share one (`servicenet.http` and `servicenet.https`).
 */
export function portName(role: string): string {
  const name = role.replace(/[^a-z0-9-]/g, '-');
  if (name.length <= 15) return name;
  return `${name.slice(0, 10).replace(/-+$/, '')}-${createHash('sha256').update(role).digest('hex').slice(0, 4)}`;
}

/** A word of haproxy.cfg: spaces and backslashes escaped (the check lines carry them). */
const cfgWord = (s: string) => s.replace(/\\/g, '\\\\').replace(/ /g, '\\ ');

/** The frontend name of a route, as `show sess` and `show stat` name it. */
export const frontendOf = (role: string) => `f_${portName(role)}`;

/** The ring (in the edge's memory, 32 KiB: some 400 lines) that keeps the last refused connections; read with `show events`. */
export const DENIED_RING = 'denied';

/**
 * The edge's haproxy.cfg: one frontend per client port, admitting hangar's probe sources and the
 * ACL sources of its group (from files that the runtime API changes live), forwarding to the
 * servers of its backend, of which the check picks the one that serves (the primary). Refused
 * connections (content rules: HAProxy logs none a connection rule rejects) are logged, and
 * nothing else, to a ring in the edge's memory. TLS listeners terminate TLS with the instance's
 * certificate (EDGE_TLS_FILES); with `clientAuth` they ask for a client certificate of the
 * instance. A closed listener (a plain one when TLS is required) admits hangar's probes only.
 */
export function renderEdgeConfig(
  id: string,
  routes: readonly EdgeRoute[],
  backends: readonly EdgeBackend[],
  proxyProtocol: boolean,
  clientAuth = false,
): string {
  const lines = [
    `# Edge of hangar instance ${id}. Written by hangar: ACLs change through the runtime API.`,
    'global',
    '  maxconn 4096',
    `  stats socket ipv4@0.0.0.0:${EDGE_ADMIN_PORT} level admin`,
    '  stats timeout 10s',
    `ring ${DENIED_RING}`,
    '  size 32768',
    'defaults',
    '  mode tcp',
    `  log ring@${DENIED_RING} local0 info`,
    `  log-format "${DENIED_LOG_FORMAT}"`,
    '  option dontlog-normal',
    '  timeout connect 5s',
    '  timeout client 24h',
    '  timeout server 24h',
    '  timeout check 2s',
  ];
  for (const route of routes) {
    const backend = backends.find((b) => b.role === route.role);
    // TLS listeners are terminated here: HTTP is read on them as on the plain ones
    const http = route.http;
    // a listener the edge answers itself needs nothing behind it
    if (!backend && !http?.answer) continue;
    const mode = http ? ['  mode http'] : [];
    const mutual = route.tls && clientAuth;
    const tls = route.tls
      ? ` ssl crt ${EDGE_TLS_FILES.cert}${mutual ? ` verify required ca-file ${EDGE_TLS_FILES.ca} crl-file ${EDGE_TLS_FILES.crl}` : ''}`
      : '';
    lines.push(
      `frontend ${frontendOf(route.role)}`,
      `  bind :${route.port}${proxyProtocol ? ' accept-proxy' : ''}${tls}`,
      ...mode,
      ...(route.closed
        ? [`  tcp-request connection reject unless { src -f ${HANGAR_SOURCES_FILE} }`]
        : [
            ...(mutual ? [`  ${clientAuthRule(id)}`] : []),
            `  tcp-request content accept if { src -f ${HANGAR_SOURCES_FILE} }`,
            `  tcp-request content reject unless { src -f ${aclFile(route.group)} }`,
            ...(http ? httpPolicyLines(http).map((l) => `  ${l}`) : []),
          ]),
    );
    if (!backend) continue;
    lines.push(`  default_backend b_${portName(route.role)}`, `backend b_${portName(route.role)}`, ...mode);
    if (backend.check) {
      lines.push('  option tcp-check', '  tcp-check connect');
      for (const step of backend.check) {
        lines.push('send' in step ? `  tcp-check send ${cfgWord(step.send)}\\r\\n` : `  tcp-check expect string ${cfgWord(step.expect)}`);
      }
    }
    // A server that stops serving (a primary demoted) loses its clients at once: they reconnect to the new one.
    lines.push('  default-server inter 500 fall 1 rise 1 on-marked-down shutdown-sessions');
    for (const s of backend.servers) lines.push(`  server ${s.name} ${s.address}:${s.port} check`);
  }
  return `${lines.join('\n')}\n`;
}

/** CIDRs of an allow list, normalised, sorted and without duplicates. */
export function normaliseSources(cidrs: readonly string[]): string[] {
  return [...new Set(cidrs.map((c) => parseCidr(c)?.text ?? c))].sort();
}

/** An address or range as a NetworkPolicy ipBlock wants it: always with a prefix length. */
const ipBlock = (cidr: string) => (cidr.includes('/') ? cidr : cidr.includes(':') ? `${cidr}/128` : `${cidr}/32`);

export interface EdgeInput {
  readonly id: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly target: KubernetesTarget;
  readonly image: string;
  readonly routes: readonly EdgeRoute[];
  readonly backends: readonly EdgeBackend[];
  /** Allowed sources per access group. */
  readonly access: ReadonlyMap<AccessGroup, readonly string[]>;
  /** Addresses hangar probes and administers from. */
  readonly hangarSources: readonly string[];
  /** What the TLS listeners present and check; required when a route has `tls`. */
  readonly tls?: EdgeTls;
}

/** What the access objects of an edge are made from: no backends (the engines do not matter to them). */
export type EdgeAccessInput = Omit<EdgeInput, 'image' | 'backends' | 'tls'>;

const edgeLabelsOf = (labels: Readonly<Record<string, string>>) => ({ ...labels, 'app.kubernetes.io/component': 'edge' });

const hangarPeers = (hangarSources: readonly string[]) => [
  { namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'hangar' } } },
  ...hangarSources.map((s) => ({ ipBlock: { cidr: ipBlock(s) } })),
];

/**
 * The objects of an edge that say who is admitted, and nothing else: the allow lists (what an
 * edge pod loads when it starts; the runtime API changes the running ones), the Service (its
 * `loadBalancerSourceRanges`) and the edge's NetworkPolicy. An ACL change applies these alone.
 */
export function edgeAccessObjects(e: EdgeAccessInput): KubeObject[] {
  const n = edgeNames(e.id);
  const edgeLabels = edgeLabelsOf(e.labels);
  const allAllowed = normaliseSources([...e.access.values()].flat());
  const keepsSource = e.target.serviceType !== 'ClusterIP' && e.target.sourceAddress === 'local';
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: n.acl, labels: { ...e.labels } },
      type: 'Opaque',
      stringData: Object.fromEntries(
        [...e.access].map(([group, list]) => [
          `${group}.lst`,
          normaliseSources(list)
            .map((s) => `${s}\n`)
            .join(''),
        ]),
      ),
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: n.service, labels: { ...e.labels } },
      spec: {
        type: e.target.serviceType,
        selector: edgeLabels,
        ports: e.routes.map((r) => ({
          name: portName(r.role),
          port: r.port,
          targetPort: r.port,
          protocol: 'TCP',
          ...(e.target.serviceType === 'NodePort' ? { nodePort: r.port } : {}),
        })),
        ...(keepsSource ? { externalTrafficPolicy: 'Local' } : {}),
        ...(e.target.serviceType === 'LoadBalancer' && allAllowed.length > 0 ? { loadBalancerSourceRanges: allAllowed.map(ipBlock) } : {}),
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: n.policy, labels: { ...e.labels } },
      spec: {
        podSelector: { matchLabels: edgeLabels },
        policyTypes: ['Ingress'],
        ingress: [
          { from: hangarPeers(e.hangarSources) },
          // No rule without sources: a rule with no `from` would admit everyone. A closed listener admits hangar only.
          ...openRoutes(e.routes).flatMap((r) => {
            const allowed = normaliseSources(e.access.get(r.group) ?? []);
            return allowed.length === 0
              ? []
              : [{ from: allowed.map((c) => ({ ipBlock: { cidr: ipBlock(c) } })), ports: [{ port: r.port, protocol: 'TCP' }] }];
          }),
        ],
      },
    },
  ];
}

/**
 * The objects of an instance's edge: its configuration (a Secret: the checks carry hangar's
 * credential), two HAProxy pods, a NetworkPolicy that admits the engines' pods from their own
 * pods, the edge and hangar only, and the access objects (edgeAccessObjects): allow lists, the
 * Service clients reach (of the zone's type, keeping the client's address), the edge's NetworkPolicy.
 */
export function edgeObjects(e: EdgeInput): KubeObject[] {
  const n = edgeNames(e.id);
  const edgeLabels = edgeLabelsOf(e.labels);
  const secure = e.routes.some((r) => r.tls);
  if (secure && !e.tls) throw new Error('the instance has TLS listeners but no certificate for them');
  const clientAuth = secure && e.tls?.clientAuth !== undefined;
  const config = renderEdgeConfig(e.id, e.routes, e.backends, e.target.sourceAddress === 'proxy-protocol', clientAuth);
  const nodeSelector = {
    ...e.target.nodeSelector,
    ...(e.target.topologyZone ? { 'topology.kubernetes.io/zone': e.target.topologyZone } : {}),
  };
  const [aclSecret, service, edgePolicy] = edgeAccessObjects(e) as [KubeObject, KubeObject, KubeObject];
  const objects: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: n.config, labels: { ...e.labels } },
      type: 'Opaque',
      stringData: {
        'haproxy.cfg': config,
        'hangar.lst': normaliseSources(e.hangarSources)
          .map((s) => `${s}\n`)
          .join(''),
      },
    },
    aclSecret,
    // The TLS files: a Secret of their own, out of the configuration's hash, so that a new
    // certificate or CRL does not roll the pods (the runtime API gives it to each pod live; a pod
    // started later reads it from here).
    ...(secure && e.tls
      ? [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: n.tls, labels: { ...e.labels } },
            type: 'Opaque',
            stringData: {
              'server.pem': e.tls.pem,
              ...(e.tls.clientAuth ? { 'ca.pem': e.tls.clientAuth.caPem, 'crl.pem': e.tls.clientAuth.crlPem } : {}),
            },
          },
        ]
      : []),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: n.deployment, labels: edgeLabels },
      spec: {
        replicas: EDGE_REPLICAS,
        selector: { matchLabels: edgeLabels },
        template: {
          // A new configuration rolls the pods; allow lists do not (the runtime API changes them live).
          metadata: { labels: edgeLabels, annotations: { 'hangar.io/config-sha256': createHash('sha256').update(config).digest('hex') } },
          spec: {
            ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector } : {}),
            tolerations: nodeLostTolerations(e.target.nodeLostAfterSeconds ?? NODE_LOST_AFTER_SECONDS),
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: edgeLabels } } },
                ],
              },
            },
            terminationGracePeriodSeconds: 5,
            containers: [
              {
                name: 'haproxy',
                image: e.image,
                imagePullPolicy: 'IfNotPresent',
                command: ['haproxy', '-W', '-db', '-f', `${CONFIG_DIR}/haproxy.cfg`],
                ports: [
                  ...e.routes.map((r) => ({ name: portName(r.role), containerPort: r.port })),
                  { name: 'admin', containerPort: EDGE_ADMIN_PORT },
                ],
                readinessProbe: { tcpSocket: { port: EDGE_ADMIN_PORT }, periodSeconds: 2 },
                resources: { requests: { memory: `${EDGE_MEMORY_MB}Mi`, cpu: '50m' }, limits: { memory: `${EDGE_MEMORY_MB}Mi` } },
                volumeMounts: [
                  { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
                  { name: 'acl', mountPath: ACL_DIR, readOnly: true },
                  ...(secure ? [{ name: 'tls', mountPath: TLS_DIR, readOnly: true }] : []),
                ],
              },
            ],
            volumes: [
              { name: 'config', secret: { secretName: n.config, defaultMode: 0o400 } },
              { name: 'acl', secret: { secretName: n.acl, defaultMode: 0o400 } },
              ...(secure ? [{ name: 'tls', secret: { secretName: n.tls, defaultMode: 0o400 } }] : []),
            ],
          },
        },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: n.deployment, labels: { ...e.labels } },
      spec: { minAvailable: 1, selector: { matchLabels: edgeLabels } },
    },
    service,
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: n.engines, labels: { ...e.labels } },
      spec: {
        // Every pod of the instance but its edge: reached by its own pods (replication, Sentinel), its edge and hangar.
        podSelector: {
          matchLabels: { ...e.labels },
          matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'NotIn', values: ['edge'] }],
        },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: { matchLabels: { ...e.labels } } }, ...hangarPeers(e.hangarSources)] }],
      },
    },
    edgePolicy,
  ];
  return objects;
}
