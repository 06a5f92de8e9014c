import { runCeiling } from '../lib/ceiling.js';
import type { Figure } from '../lib/context.js';
import { deleteAll, requestRedis, waitAll, waitOne } from '../lib/instances.js';
import { row } from '../lib/result.js';
import { median, percentile } from '../lib/stats.js';
import { now } from '../lib/time.js';

/** What the redis-pair ceiling prints. */
export interface PairCeiling {
  readonly sequential: { readonly syncMs: number[]; readonly configSetMs: number[]; readonly stopMs: number[] };
  readonly concurrent: { readonly syncMs: number[]; readonly allMs: number };
}

const CEILING = 'redis-server primary + replica spawned by hand until master_link_status:up';

export const createFigure: Figure = {
  name: 'create',
  title: 'create a redis_ha_instance until ACTIVE: median and p95 of 20, one after another and 20 at once',
  ceiling: 'spawning redis-server and a replica by hand until the replica is in sync',
  target: 'median sequential <= 100 ms and <= 1.5x the ceiling; 20 at once <= 4x the ceiling',
  async run(ctx) {
    const { api } = await ctx.opsDeployment();
    const n = ctx.opts.quick ? 5 : 20;
    const seq = { h50: [] as number[], h95: [] as number[], c50: [] as number[], c95: [] as number[], post: [] as number[] };
    const conc = {
      h50: [] as number[],
      h95: [] as number[],
      hAll: [] as number[],
      c50: [] as number[],
      c95: [] as number[],
      cAll: [] as number[],
    };
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const dir = ctx.procs.tempDir('pair');
      const ceiling = await runCeiling<PairCeiling>(ctx.procs, 'redis-pair', [dir, String(n), String(n)]);
      await ctx.procs.removeDir(dir);
      seq.c50.push(median(ceiling.sequential.syncMs));
      seq.c95.push(percentile(ceiling.sequential.syncMs, 95));
      conc.c50.push(median(ceiling.concurrent.syncMs));
      conc.c95.push(percentile(ceiling.concurrent.syncMs, 95));
      conc.cAll.push(ceiling.concurrent.allMs);

      // One after another: from sending the create to the first GET that shows ACTIVE.
      const times: number[] = [];
      const posts: number[] = [];
      const names: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = `create-${round}-s${i}`;
        names.push(name);
        const t0 = now();
        await requestRedis(api, name);
        posts.push(now() - t0);
        times.push((await waitOne(api, name, 'ACTIVE', 60_000, 5)) - t0);
      }
      seq.post.push(median(posts));
      seq.h50.push(median(times));
      seq.h95.push(percentile(times, 95));

      // All at once: each from the common start to the list that first shows it ACTIVE.
      const batch = Array.from({ length: n }, (_, i) => `create-${round}-c${i}`);
      names.push(...batch);
      const t0 = now();
      await Promise.all(batch.map((name) => requestRedis(api, name)));
      const seen = await waitAll(api, batch, 'ACTIVE', 120_000, 10);
      const each = [...seen.values()].map((t) => t - t0);
      conc.h50.push(median(each));
      conc.h95.push(percentile(each, 95));
      conc.hAll.push(Math.max(...each));
      ctx.log(
        `create round ${round}: sequential median ${median(times).toFixed(0)} ms (ceiling ${median(ceiling.sequential.syncMs).toFixed(0)}), ${n} at once median ${median(each).toFixed(0)} ms (ceiling ${median(ceiling.concurrent.syncMs).toFixed(0)})`,
      );
      // Back to an empty hangar, so that every round starts alike.
      await deleteAll(api, names);
    }
    const f = 'create';
    return [
      row({
        figure: f,
        metric: 'sequential: median',
        unit: 'ms',
        hangar: seq.h50,
        ceiling: { what: CEILING, values: seq.c50 },
        target: [
          { kind: 'at-most', value: 100 },
          { kind: 'ratio-at-most', value: 1.5 },
        ],
      }),
      row({ figure: f, metric: 'sequential: p95', unit: 'ms', hangar: seq.h95, ceiling: { what: CEILING, values: seq.c95 } }),
      row({
        figure: f,
        metric: `${n} at once: median`,
        unit: 'ms',
        hangar: conc.h50,
        ceiling: { what: CEILING, values: conc.c50 },
        target: { kind: 'ratio-at-most', value: 4 },
      }),
      row({ figure: f, metric: `${n} at once: p95`, unit: 'ms', hangar: conc.h95, ceiling: { what: CEILING, values: conc.c95 } }),
      row({ figure: f, metric: `${n} at once: all ACTIVE`, unit: 'ms', hangar: conc.hAll, ceiling: { what: CEILING, values: conc.cAll } }),
      row({
        figure: f,
        metric: 'sequential: API answer (REQUESTED)',
        unit: 'ms',
        hangar: seq.post,
        note: `ACTIVE as a client sees it: GET polled every 5 ms (the list every 10 ms for ${n} at once), so up to that much is polling`,
      }),
    ];
  },
};
