import { runCeiling } from '../lib/ceiling.js';
import type { Figure } from '../lib/context.js';
import { createActive, deleteAll, waitOne } from '../lib/instances.js';
import { RespClient } from '../lib/resp.js';
import { row } from '../lib/result.js';
import { median } from '../lib/stats.js';
import { now, until } from '../lib/time.js';
import type { PairCeiling } from './create.js';

const LADDER = [1000, 2500, 5000, 10000, 20000];
const MB = 1024 * 1024;

export const resizeFigure: Figure = {
  name: 'resize',
  title: 'resize until `CONFIG GET maxmemory` on the primary shows the new plan',
  ceiling: 'one CONFIG SET maxmemory on a redis-server',
  target: '<= 50 ms median',
  async run(ctx) {
    const { hangar, api } = await ctx.opsDeployment();
    const steps = ctx.opts.quick ? 2 : 4;
    const applied: number[] = [];
    const active: number[] = [];
    const ceiling: number[] = [];
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const dir = ctx.procs.tempDir('pair');
      const c = await runCeiling<PairCeiling>(ctx.procs, 'redis-pair', [dir, String(steps), '0']);
      await ctx.procs.removeDir(dir);
      ceiling.push(median(c.sequential.configSetMs));

      const name = `resize-${round}`;
      const [rec] = await createActive(api, [name]);
      const engine = await RespClient.open(hangar.engine(rec!.id, 'primary').port, rec!.password);
      const seen: number[] = [];
      const activeAgain: number[] = [];
      try {
        for (const plan of LADDER.slice(0, steps)) {
          const bytes = String(plan * MB);
          const t0 = now();
          await api.ok('POST', `/v2/redis/${name}/resize/`, { new_plan: plan });
          await until(
            `maxmemory ${plan} MB`,
            async () => {
              const r = (await engine.call('CONFIG', 'GET', 'maxmemory')) as string[];
              return r[1] === bytes ? true : undefined;
            },
            30_000,
            1,
          );
          seen.push(now() - t0);
          activeAgain.push((await waitOne(api, name, 'ACTIVE', 30_000, 5)) - t0);
        }
      } finally {
        engine.close();
      }
      applied.push(median(seen));
      active.push(median(activeAgain));
      ctx.log(
        `resize round ${round}: maxmemory after ${median(seen).toFixed(1)} ms, ACTIVE after ${median(activeAgain).toFixed(1)} ms (CONFIG SET ${median(c.sequential.configSetMs).toFixed(2)} ms)`,
      );
      await deleteAll(api, [name]);
    }
    const what = 'one CONFIG SET maxmemory on a redis-server, answered';
    return [
      row({
        figure: 'resize',
        metric: 'request -> maxmemory shows the plan',
        unit: 'ms',
        hangar: applied,
        ceiling: { what, values: ceiling },
        target: { kind: 'at-most', value: 50 },
      }),
      row({ figure: 'resize', metric: 'request -> ACTIVE again', unit: 'ms', hangar: active, ceiling: { what, values: ceiling } }),
    ];
  },
};
