import { join } from 'node:path';
import type { AccessGroup, EdgeReply, EdgeRoute, HttpPolicy } from '../../domain/endpoints.js';
import { tlsBindOptions } from './edge-tls.js';

/** The listeners of one instance at the edge. */
export interface EdgeInstance {
  readonly id: string;
  readonly routes: readonly EdgeRoute[];
}

export interface EdgeConfigInput {
  /** The edge's directory: sockets and allow lists live there. */
  readonly edgeDir: string;
  /** Address the listeners bind to. */
  readonly bindAddress: string;
  /** Connections at once over all listeners (each takes two file descriptors). */
  readonly maxconn: number;
  /** Source address of hangar's own probes: admitted on every listener, whatever the ACLs. */
  readonly probeSource: string;
  /** The host's own address (the advertised one): admitted on the listeners of `peers` routes, which the instance's processes use to reach each other. */
  readonly peerSource?: string;
  readonly instances: readonly EdgeInstance[];
  /** `host:port` of the UDP syslog receiver that gets one line per refused connection; absent: no log. */
  readonly logAddress?: string;
}

/**
 * The log line of a refused connection (`option dontlog-normal` keeps admitted ones out): the
 * client address, the frontend, the time (epoch seconds and milliseconds) and the termination
 * state, `PR` for a connection the ACL rule rejected. Shared with the edges of other runtimes.
 */
export const DENIED_LOG_FORMAT = 'hangar-edge %ci %ft %Ts.%ms %ts';

/** A refused connection, read back from a log line in DENIED_LOG_FORMAT. */
export interface DeniedLine {
  readonly source: string;
  readonly frontend: string;
  /** Epoch milliseconds. */
  readonly at: number;
}

/** Reads a log line of the edge; undefined for anything but a refused connection (`PR`). */
export function parseDeniedLine(line: string): DeniedLine | undefined {
  const m = /hangar-edge (\S+) (\S+) (\d+)\.(\d{3}) (\S+)/.exec(line);
  if (m?.[5] !== 'PR') return undefined;
  return { source: m[1]!, frontend: m[2]!, at: Number(m[3]) * 1000 + Number(m[4]) };
}

/** Files and sockets of the edge, by name. */
export const edgePaths = (edgeDir: string) => ({
  config: join(edgeDir, 'haproxy.cfg'),
  /** Runtime API of the current worker (ACL changes, sessions, counters). */
  adminSocket: join(edgeDir, 'admin.sock'),
  /** Master CLI: processes, old workers. */
  masterSocket: join(edgeDir, 'master.sock'),
  routesDir: join(edgeDir, 'routes'),
  allowDir: join(edgeDir, 'allow'),
});

/** The allow-list file of one access group of an instance: one address or CIDR range per line. */
export function allowListFile(edgeDir: string, instanceId: string, group: AccessGroup): string {
  return join(edgePaths(edgeDir).allowDir, `${instanceId}.${group}.lst`);
}

/** Frontend name of an instance's listener; `instanceOfFrontend` reads it back. */
export function frontendName(instanceId: string, role: string): string {
  return `i-${instanceId}-${role}`;
}

export function instanceOfFrontend(name: string): string | undefined {
  return /^i-([A-Za-z0-9_]+)-/.exec(name)?.[1];
}

/** The listener's role of a frontend name (`public`, `servicenet`, ...). */
export function roleOfFrontend(name: string): string | undefined {
  return /^i-[A-Za-z0-9_]+-(.+)$/.exec(name)?.[1];
}

function backendName(instanceId: string, target: string): string {
  return `e-${instanceId}-${target}`;
}

/** A string as HAProxy's configuration parser reads it: double quotes, `\` and `"` escaped. */
function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * A word of haproxy.cfg in single quotes: taken as it is (no escapes, no `$VAR` expansion, which
 * double quotes do). It cannot hold a single quote: JSON says `\u0027` instead, HTML `&#39;`.
 */
function literal(value: string, what: string): string {
  if (value.includes("'")) throw new Error(`${what} cannot hold a single quote: ${value}`);
  if (/[\r\n]/.test(value)) throw new Error(`${what} cannot span lines: ${value}`);
  return `'${value}'`;
}

/** `http-request return` lines of a reply: a page for browsers when it has one, JSON for everything else. */
function replyLines(reply: EdgeReply, condition: string): string[] {
  const ret = (type: string, body: string, cond: string) =>
    `http-request return status ${reply.status} content-type ${quote(type)} string ${literal(body, 'a reply')}${cond ? ` if ${cond}` : ''}`;
  return [
    ...(reply.html !== undefined
      ? [ret('text/html; charset=utf-8', reply.html.replace(/'/g, '&#39;'), `${condition} { req.hdr(accept) -m sub text/html }`.trim())]
      : []),
    // a quote can only be inside a JSON string, where \u0027 means the same
    ret('application/json', reply.json.replace(/'/g, '\\u0027'), condition),
  ];
}

/**
 * The lines of an HTTP listener's policy (after its access rules, which have let the source
 * through): each refused kind of request answered by the edge, then, if the listener has
 * nothing behind it, every other request answered too. Paths are matched decoded (`%5F` is `_`),
 * without the query string. Shared with the edges of other runtimes.
 */
export function httpPolicyLines(policy: HttpPolicy): string[] {
  const out = ['timeout http-request 30s'];
  policy.refuse.forEach((r, i) => {
    const methods = r.methods && r.methods.length > 0 ? `{ method ${r.methods.join(' ')} } ` : '';
    out.push(`acl refused_${i} path,url_dec -m reg ${literal(r.path, 'a path pattern')}`, ...replyLines(r.reply, `${methods}refused_${i}`));
  });
  if (policy.answer) out.push(...replyLines(policy.answer, ''));
  return out;
}

/** The mode of a backend: that of the listeners that forward to it, which must agree. */
function backendMode(routes: readonly EdgeRoute[], target: string): 'http' | 'tcp' {
  const modes = new Set(routes.filter((r) => r.target === target).map((r) => (r.http ? 'http' : 'tcp')));
  if (modes.size > 1) throw new Error(`listeners of ${target} mix HTTP and TCP: HAProxy cannot share a backend between them`);
  return modes.has('http') ? 'http' : 'tcp';
}

/**
 * The whole haproxy.cfg of the edge, from the routes of every instance. Pure and sorted, so the
 * same instances always give the same text: comparing texts tells whether a reload is needed.
 *
 * Each listener admits hangar's probe source, then rejects every connection whose source is not
 * in the instance's allow list (default deny); the list file is loaded at each (re)load and
 * changed in memory through the runtime API in between. The rules are content rules rather than
 * connection rules: HAProxy logs no connection a connection rule rejects, and each refused
 * attempt is to be logged (to `logAddress`), and nothing else (`dontlog-normal`).
 */
export function renderHaproxyConfig(input: EdgeConfigInput): string {
  const paths = edgePaths(input.edgeDir);
  const out = [
    '# The edge of hangar: one TCP listener per instance address (TLS ones decrypted with the',
    "# instance's certificate in tls/), admitting only the sources in the",
    "# instance's ACLs. Written by hangar from the instances it runs; edits here are lost.",
    'global',
    '    master-worker',
    `    stats socket ${quote(paths.adminSocket)} mode 600 level admin expose-fd listeners`,
    '    stats timeout 30s',
    `    maxconn ${input.maxconn}`,
    // A worker that still holds client connections stays after a reload; bound how many pile up.
    '    mworker-max-reloads 50',
    ...(input.logAddress ? [`    log ${input.logAddress} len 1024 local0 info`] : []),
    '',
    'defaults',
    '    mode tcp',
    ...(input.logAddress ? ['    log global', `    log-format ${quote(DENIED_LOG_FORMAT)}`, '    option dontlog-normal'] : []),
    '    timeout connect 5s',
    // Redis and MongoDB clients keep idle connections open for long: don't cut them early.
    '    timeout client 24h',
    '    timeout server 24h',
    '    option clitcpka',
    '    option srvtcpka',
  ];
  const instances = [...input.instances].sort((a, b) => a.id.localeCompare(b.id));
  for (const inst of instances) {
    const routes = [...inst.routes].sort((a, b) => a.role.localeCompare(b.role));
    const backends = new Map<string, number>();
    for (const r of routes) {
      backends.set(r.target, r.targetPort);
      out.push(
        '',
        `frontend ${frontendName(inst.id, r.role)}`,
        // TLS listeners (mongodb_sharded ssl, elasticsearch https) are decrypted here: the engine speaks plain TCP
        `    bind ${input.bindAddress}:${r.port}${r.tls ? ` ${tlsBindOptions(input.edgeDir, inst.id)}` : ''}`,
        ...(r.http ? ['    mode http'] : []),
        `    tcp-request content accept if { src ${input.probeSource} }`,
        ...(r.peers && input.peerSource ? [`    tcp-request content accept if { src ${input.peerSource} }`] : []),
        `    tcp-request content reject unless { src -f ${quote(allowListFile(input.edgeDir, inst.id, r.group))} }`,
        ...(r.http ? httpPolicyLines(r.http).map((l) => `    ${l}`) : []),
        `    default_backend ${backendName(inst.id, r.target)}`,
      );
    }
    for (const [target, port] of [...backends].sort(([a], [b]) => a.localeCompare(b))) {
      const mode = backendMode(routes, target) === 'http' ? ['    mode http'] : [];
      out.push('', `backend ${backendName(inst.id, target)}`, ...mode, `    server engine 127.0.0.1:${port}`);
    }
  }
  return `${out.join('\n')}\n`;
}
