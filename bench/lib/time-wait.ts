import { readFileSync } from 'node:fs';
import { now, sleep } from './time.js';

/** TCP sockets in TIME_WAIT on the machine (every process's). */
export function timeWaitSockets(): number {
  try {
    return Number(/\btw (\d+)/.exec(readFileSync('/proc/net/sockstat', 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Waits (at most `maxMs`) until fewer than `below` sockets are in TIME_WAIT. A connection
 * benchmark leaves one per connection (two through a proxy) for 60 s; when they fill the
 * ephemeral port range, new connections get slow, and a figure measured then says more about
 * the runs before it than about the proxy.
 */
export async function waitTimeWaitBelow(below: number, maxMs: number): Promise<number> {
  const until = now() + maxMs;
  let n = timeWaitSockets();
  while (n >= below && now() < until) {
    await sleep(1000);
    n = timeWaitSockets();
  }
  return n;
}
