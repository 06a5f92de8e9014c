import { runCeiling } from '../lib/ceiling.js';
import type { Figure } from '../lib/context.js';
import { waitEnginesSettled } from '../lib/engines.js';
import { createActive, portOf } from '../lib/instances.js';
import { accepts } from '../lib/probe.js';
import { isAlive } from '../lib/processes.js';
import { row } from '../lib/result.js';
import { median } from '../lib/stats.js';
import { now, until } from '../lib/time.js';
import type { PairCeiling } from './create.js';

export const deleteFigure: Figure = {
  name: 'delete',
  title: 'delete an instance until its ports refuse connections and none of its processes remains',
  ceiling: 'SIGTERM of redis-server (primary and replica) until both exited',
  target: '<= 500 ms median',
  async run(ctx) {
    const { hangar, api } = await ctx.opsDeployment();
    const n = ctx.opts.quick ? 3 : 10;
    const gone: number[] = [];
    const answered: number[] = [];
    const ceiling: number[] = [];
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const dir = ctx.procs.tempDir('pair');
      const c = await runCeiling<PairCeiling>(ctx.procs, 'redis-pair', [dir, String(n), '0']);
      await ctx.procs.removeDir(dir);
      ceiling.push(median(c.sequential.stopMs));

      const names = Array.from({ length: n }, (_, i) => `delete-${round}-${i}`);
      const records = await createActive(api, names, { concurrency: 5 });
      for (const rec of records) await waitEnginesSettled(hangar, rec);
      const times: number[] = [];
      const api200: number[] = [];
      for (const rec of records) {
        const engines = (['primary', 'replica'] as const).map((role) => hangar.engine(rec.id, role));
        const ports = [portOf(rec.connect_string), portOf(rec.servicenet_connect_string), ...engines.map((e) => e.port)];
        const pids = engines.map((e) => e.pid).filter((p): p is number => p !== undefined);
        const t0 = now();
        await api.ok('DELETE', `/v2/instances/${rec.name}/`);
        api200.push(now() - t0);
        await until(
          `${rec.name} torn down`,
          async () => {
            if (pids.some(isAlive)) return undefined;
            for (const p of ports) if (await accepts(p)) return undefined;
            return true;
          },
          30_000,
          2,
        );
        times.push(now() - t0);
      }
      gone.push(median(times));
      answered.push(median(api200));
      ctx.log(`delete round ${round}: ${median(times).toFixed(0)} ms (ceiling ${median(c.sequential.stopMs).toFixed(0)} ms)`);
    }
    const what = 'SIGTERM to a settled redis-server primary and replica until both exited';
    return [
      row({
        figure: 'delete',
        metric: 'until ports refuse, no process',
        unit: 'ms',
        hangar: gone,
        ceiling: { what, values: ceiling },
        target: { kind: 'at-most', value: 500 },
      }),
      row({ figure: 'delete', metric: 'API answer (DELETING)', unit: 'ms', hangar: answered }),
    ];
  },
};
