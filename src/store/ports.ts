import type { Db } from './database.js';
import { listUsedPortsBetween } from './instance-repository.js';
import { errors } from '../domain/errors.js';

/** Where ports are handed out: a scope (a host, a cluster's NodePorts) and its range. */
export interface PortPool {
  /** Ports are unique within a scope: this host's id, or `kubernetes:<zone>`. */
  readonly scope: string;
  readonly first: number;
  readonly last: number;
  /** The setting that sets the range, named when it is exhausted. */
  readonly setting: string;
  /** Whether nothing outside the store holds the port. */
  portIsFree(port: number): Promise<boolean>;
}

/**
 * `count` ports of the pool's range that no instance of its scope holds in the store and nothing
 * listens on, starting at a random place (so that creates at once rarely collide; the store's
 * port table settles those that do).
 */
export async function pickFreePorts(db: Db, pool: PortPool, count: number): Promise<number[]> {
  const { first, last } = pool;
  const size = last - first + 1;
  const start = Math.floor(Math.random() * size);
  const out: number[] = [];
  // The range is read in windows from the random start on, wrapping around once: a create reads
  // the few rows of one window, not the port of every instance (the primary key orders them).
  for (let n = 0; n < size && out.length < count; ) {
    const at = (start + n) % size;
    // a window ends at the top of the range, and covers no port twice
    const length = Math.min(PORT_WINDOW, size - at, size - n);
    const from = first + at;
    const to = from + length - 1;
    const used = await listUsedPortsBetween(db, pool.scope, from, to);
    for (let port = from; port <= to && out.length < count; port++) {
      if (used.has(port) || !(await pool.portIsFree(port))) continue;
      out.push(port);
    }
    n += length;
  }
  if (out.length < count) throw errors.capacityExhausted(`no free port left in ${pool.setting} ${first}-${last}`);
  return out;
}

/** Ports read from the store at a time while looking for free ones. */
const PORT_WINDOW = 64;
