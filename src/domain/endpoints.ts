import type { PortMap } from './model.js';
import type { AccessRule } from './units.js';

/**
 * The ports an instance owns are named by role. Roles are the contract between the API (connection
 * strings) and every runtime (what listens where), and each product says its own (`portRoles`):
 * - `public*` / `servicenet*` / `ssl` roles are edge listeners that clients connect to;
 * - `engine.*` roles are loopback ports of the engine processes behind the edge.
 */

/** Which allow-list an edge listener obeys: ACLs apply to `main` unless flagged transport/kibana. */
export type AccessGroup = 'main' | 'transport' | 'kibana';

/** An answer the edge gives itself, without forwarding: a status with a JSON body (and a page for browsers). */
export interface EdgeReply {
  readonly status: number;
  /** The body for programs (`application/json`). */
  readonly json: string;
  /** A page for browsers (a request whose `Accept` names `text/html`); absent: the JSON body for them too. */
  readonly html?: string;
}

/** Requests an HTTP listener refuses: by method (any when absent) and by URL-decoded path. */
export interface RefusedRequests {
  readonly methods?: readonly string[];
  /** A regular expression (PCRE) of the path, decoded, without the query string. */
  readonly path: string;
  /** What the edge answers them (a 403 saying why). */
  readonly reply: EdgeReply;
}

/**
 * An edge listener that speaks HTTP rather than forwarding bytes: it reads each request, so that
 * it can refuse some (what the engine behind it would let anyone do, having no users of its own)
 * or answer every one itself (a listener with nothing behind it yet). Access is still by source
 * first: a source outside the ACLs gets no answer at all, as on a TCP listener.
 */
export interface HttpPolicy {
  /** Refused requests, first match wins; the others are forwarded. */
  readonly refuse: readonly RefusedRequests[];
  /** Every request (that `refuse` lets through) answered with this instead of forwarded. */
  readonly answer?: EdgeReply;
}

export interface EdgeRoute {
  /** The edge role (key in the port map). */
  readonly role: string;
  readonly port: number;
  /** The engine role it forwards to. */
  readonly target: string;
  readonly targetPort: number;
  /** The edge terminates TLS on this listener. */
  readonly tls: boolean;
  readonly group: AccessGroup;
  /**
   * The instance's own processes reach each other through this listener (replica-set members,
   * which announce the edge's addresses): the edge admits connections from the host itself
   * (its advertised address) whatever the ACLs. Absent: only the ACLs and hangar's probes.
   */
  readonly peers?: boolean;
  /** The listener reads HTTP and applies this; absent: it forwards bytes (TCP). */
  readonly http?: HttpPolicy;
}

/** A route that the instance's own processes use to reach each other (see `EdgeRoute.peers`). */
export const peerRoute = (route: EdgeRoute): EdgeRoute => ({ ...route, peers: true });

/** The route of edge role `role` to engine role `target` of an instance's ports. */
export function edgeRoute(ports: PortMap, role: string, target: string, tls = false, group: AccessGroup = 'main'): EdgeRoute {
  return { role, port: need(ports, role), target, targetPort: need(ports, target), tls, group };
}

function need(ports: PortMap, role: string): number {
  const p = ports[role];
  if (p === undefined) throw new Error(`instance has no port for role ${role}`);
  return p;
}

/** The port shown in ACL records: the instance's public port. */
export function publicPort(ports: PortMap): number {
  return ports.public ?? ports['public.0'] ?? ports['public.http'] ?? 0;
}

/** Which ACLs apply to which listeners: `transport` ones also to the transport port, `kibana` ones to Kibana only. */
export function accessGroups(routes: readonly EdgeRoute[], rules: readonly AccessRule[]): Map<AccessGroup, string[]> {
  const groups = new Map<AccessGroup, string[]>();
  for (const r of routes) {
    const admitted = rules.filter((a) => (r.group === 'main' ? !a.kibana : r.group === 'transport' ? a.transport : a.kibana));
    groups.set(
      r.group,
      admitted.map((a) => a.cidr),
    );
  }
  return groups;
}
