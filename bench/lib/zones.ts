import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The zone every figure creates its instances in (`createBody`), and the memory it may promise.
 *
 * A Redis instance promises twice its plan (maxmemory of the primary and of the replica), so 100
 * instances on plan 500 promise 100 GB: more than this machine has, and hangar refuses them
 * (409 CAPACITY_EXCEEDED) when the zone shares the host's memory. An idle redis-server holds a
 * few MB whatever its maxmemory, so the benchmark gives its zone a capacity of its own, large
 * enough for every figure (1,000 instances on plan 1000), in a zones file beside the data dir.
 */
export const BENCH_ZONE = 'US-Dallas';
export const BENCH_ZONE_CAPACITY_MB = 4_000_000;

/** Writes the zones file of a bench hangar into `dir`; returns its path (for `--zones`). */
export function writeZonesFile(dir: string, runtime: 'local' | 'emulated'): string {
  const file = join(dir, 'zones.json');
  writeFileSync(file, `${JSON.stringify({ [BENCH_ZONE]: { runtime, capacity_mb: BENCH_ZONE_CAPACITY_MB } })}\n`);
  return file;
}
