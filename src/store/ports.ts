import type { Config } from '../config.js';
import type { Db } from './database.js';
import { listUsedPorts } from './instance-repository.js';
import { errors } from '../domain/errors.js';

/**
 * `count` ports of the configured range that no instance of this host holds in the store and
 * nothing listens on, starting at a random place (so that creates at once rarely collide; the
 * store's port table settles those that do).
 */
export async function pickFreePorts(db: Db, config: Config, ports: { portIsFree(port: number): Promise<boolean> }, count: number): Promise<number[]> {
  const { first, last } = config.portRange;
  const used = await listUsedPorts(db, config.hostId);
  const size = last - first + 1;
  const start = Math.floor(Math.random() * size);
  const out: number[] = [];
  for (let n = 0; n < size && out.length < count; n++) {
    const port = first + ((start + n) % size);
    if (used.has(port) || !(await ports.portIsFree(port))) continue;
    out.push(port);
  }
  if (out.length < count) throw errors.capacityExhausted(`no free port left in HANGAR_PORT_RANGE ${first}-${last}`);
  return out;
}
