import type { InstanceType, Service } from './catalog.js';
import type { PortMap } from './model.js';
import type { AccessRule } from './units.js';

/**
 * The ports an instance owns, by role. Roles are the contract between the API (connection
 * strings) and every runtime (what listens where):
 * - `public*` / `servicenet*` / `ssl` roles are edge listeners that clients connect to;
 * - `engine.*` roles are loopback ports of the engine processes behind the edge.
 */
export function portRoles(service: Service, type: InstanceType): readonly string[] {
  switch (service) {
    case 'redis':
      return ['public', 'servicenet', 'engine.primary', 'engine.replica'];
    case 'mongodb':
      switch (type) {
        case 'mongodb_singledb':
          return ['public', 'engine.0'];
        case 'mongodb_sharded':
          return ['public', 'ssl', 'engine.config', 'engine.shard', 'engine.mongos'];
        default:
          return ['public.0', 'public.1', 'public.2', 'engine.0', 'engine.1', 'engine.2'];
      }
    case 'elasticsearch':
      return [
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
      ];
  }
}

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
}

/** The edge listeners of an instance and the engine port each forwards to. */
export function edgeRoutes(service: Service, type: InstanceType, ports: PortMap): EdgeRoute[] {
  const route = (role: string, target: string, tls = false, group: AccessGroup = 'main'): EdgeRoute => ({
    role,
    port: need(ports, role),
    target,
    targetPort: need(ports, target),
    tls,
    group,
  });
  switch (service) {
    case 'redis':
      return [route('public', 'engine.primary'), route('servicenet', 'engine.primary')];
    case 'mongodb':
      if (type === 'mongodb_singledb') return [route('public', 'engine.0')];
      if (type === 'mongodb_sharded') return [route('public', 'engine.mongos'), route('ssl', 'engine.mongos', true)];
      return [0, 1, 2].map((i) => route(`public.${i}`, `engine.${i}`));
    case 'elasticsearch':
      return [
        route('public.http', 'engine.http'),
        route('public.https', 'engine.http', true),
        route('public.transport', 'engine.transport', false, 'transport'),
        route('public.kibana_http', 'engine.kibana', false, 'kibana'),
        route('public.kibana_https', 'engine.kibana', true, 'kibana'),
        route('servicenet.http', 'engine.http'),
        route('servicenet.https', 'engine.http', true),
        route('servicenet.transport', 'engine.transport', false, 'transport'),
      ];
  }
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
