import type { Deployment } from './context.js';
import { addAcl, createActive, portOf } from './instances.js';

/** An ACTIVE instance reachable from 127.0.0.1 through the edge, and its primary engine's own port. */
export interface RedisTarget {
  readonly name: string;
  readonly password: string;
  /** The edge's public listener. */
  readonly edgePort: number;
  /** The primary redis-server, directly. */
  readonly directPort: number;
  /** The replica redis-server, directly (same configuration, read-only). */
  readonly replicaPort: number;
  /** The edge's public TLS listener, where the instance has one. */
  readonly edgeTlsPort?: number;
}

export async function redisTarget(d: Deployment, name: string): Promise<RedisTarget> {
  const [rec] = await createActive(d.api, [name]);
  // redis-benchmark connects from 127.0.0.1: admit it at the edge.
  await addAcl(d.api, name, '127.0.0.1');
  return {
    name,
    password: rec!.password,
    edgePort: portOf(rec!.connect_string),
    directPort: d.hangar.engine(rec!.id, 'primary').port,
    replicaPort: d.hangar.engine(rec!.id, 'replica').port,
    ...(rec!.tls_connect_string ? { edgeTlsPort: portOf(rec!.tls_connect_string) } : {}),
  };
}
