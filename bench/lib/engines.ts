import type { BenchHangar } from './hangar.js';
import type { RedisRecord } from './instances.js';
import { RespClient } from './resp.js';
import { until } from './time.js';

/**
 * Waits until both engines of the instance have written their first AOF (no rewrite running
 * or scheduled): a replica ignores SIGTERM before that, and an instance that served for a while
 * is what users delete.
 */
export async function waitEnginesSettled(hangar: BenchHangar, rec: RedisRecord): Promise<void> {
  for (const role of ['primary', 'replica'] as const) {
    const c = await RespClient.open(hangar.engine(rec.id, role).port, rec.password);
    try {
      await until(
        `${rec.name} ${role} AOF written`,
        async () => {
          const i = await c.info('persistence');
          return i.aof_rewrite_in_progress === '0' && i.aof_rewrite_scheduled === '0' ? true : undefined;
        },
        10_000,
        10,
      );
    } finally {
      c.close();
    }
  }
}
