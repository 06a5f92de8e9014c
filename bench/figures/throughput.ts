import type { Figure } from '../lib/context.js';
import { deleteAll } from '../lib/instances.js';
import { hasRedisBenchmark, redisBenchmark } from '../lib/redis-benchmark.js';
import { redisTarget } from '../lib/redis-target.js';
import { row, unavailable, type Row } from '../lib/result.js';

export const throughputFigure: Figure = {
  name: 'throughput',
  title: 'redis throughput through the edge: redis-benchmark SET and GET, 50 clients, pipelined (16) and not',
  ceiling: 'the same engine, direct (its own port, no edge)',
  target: 'ratio >= 0.6',
  async run(ctx) {
    if (!(await hasRedisBenchmark()))
      return [unavailable('throughput', 'SET/GET', 'redis-benchmark is missing: apt-get install redis-tools')];
    const d = await ctx.opsDeployment();
    const t = await redisTarget(d, 'throughput');
    const variants = [
      { pipeline: 1, requests: ctx.opts.quick ? 20_000 : 60_000 },
      { pipeline: 16, requests: ctx.opts.quick ? 100_000 : 300_000 },
    ];
    const edge = new Map<string, number[]>();
    const direct = new Map<string, number[]>();
    const add = (m: Map<string, number[]>, key: string, v: number | undefined) => m.set(key, [...(m.get(key) ?? []), v ?? Number.NaN]);
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      for (const v of variants) {
        const common = { password: t.password, clients: 50, requests: v.requests, tests: 'set,get', pipeline: v.pipeline };
        const dr = await redisBenchmark(ctx.procs, { ...common, port: t.directPort });
        const er = await redisBenchmark(ctx.procs, { ...common, port: t.edgePort });
        for (const test of ['SET', 'GET']) {
          add(direct, `${test}|${v.pipeline}`, dr[test]);
          add(edge, `${test}|${v.pipeline}`, er[test]);
        }
        ctx.log(`throughput round ${round}, pipeline ${v.pipeline}: edge SET ${er.SET} GET ${er.GET}, direct SET ${dr.SET} GET ${dr.GET}`);
      }
    }
    await deleteAll(d.api, [t.name]);
    const rows: Row[] = [];
    for (const v of variants) {
      for (const test of ['SET', 'GET']) {
        const key = `${test}|${v.pipeline}`;
        rows.push(
          row({
            figure: 'throughput',
            metric: `${test}, 50 clients${v.pipeline > 1 ? `, pipeline ${v.pipeline}` : ''}`,
            unit: 'req/s',
            hangar: edge.get(key)!,
            ceiling: { what: 'redis-benchmark against the same redis-server directly', values: direct.get(key)! },
            target: { kind: 'ratio-at-least', value: 0.6 },
          }),
        );
      }
    }
    return rows;
  },
};
