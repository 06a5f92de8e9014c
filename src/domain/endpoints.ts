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
   * The listener refuses every client, whatever the ACLs: its instance requires TLS, and this is a
   * plain address. It stays bound, admitting hangar's own probes only (and keeping its port).
   */
  readonly closed?: boolean;
}

/** The route of edge role `role` to engine role `target` of an instance's ports. */
export function edgeRoute(ports: PortMap, role: string, target: string, tls = false, group: AccessGroup = 'main'): EdgeRoute {
  return { role, port: need(ports, role), target, targetPort: need(ports, target), tls, group };
}

/** The routes clients may use: those of `routes` that are not closed. */
export function openRoutes(routes: readonly EdgeRoute[]): EdgeRoute[] {
  return routes.filter((r) => r.closed !== true);
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
