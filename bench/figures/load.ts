import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, type LoadResult } from '../load.js';
import type { Figure } from '../lib/context.js';
import { childDataDirs, killUnder } from '../lib/processes.js';
import { row, type Row } from '../lib/result.js';

function rowsOf(r: LoadResult): Row[] {
  const f = 'load';
  const label = `${r.clients} clients, ${r.durationS} s, ${r.instances} instances`;
  const ms = (metric: string, v: number) => row({ figure: f, metric, unit: 'ms', hangar: [v] });
  const writes = Object.entries(r.writes)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  return [
    row({
      figure: f,
      metric: `${label}: 5xx answers`,
      unit: 'requests',
      hangar: [r.fiveXx],
      target: { kind: 'equals', value: 0 },
      note: `${r.requests} requests (${Math.round(r.requestsPerSecond)}/s), ${r.transportErrors} without an answer; writes answered 200: ${writes || 'none'}`,
    }),
    row({
      figure: f,
      metric: `${label}: lost writes`,
      unit: 'requests',
      hangar: [r.lostWrites],
      target: { kind: 'equals', value: 0 },
      ...(r.lost.length > 0 ? { note: `first lost: ${r.lost.slice(0, 3).join('; ')}` } : {}),
    }),
    row({
      figure: f,
      metric: 'requests per second',
      unit: 'req/s',
      hangar: [r.requestsPerSecond],
      target: { kind: 'at-least', value: 3000 },
    }),
    ms('latency p50', r.latencyMs.p50),
    ms('latency p90', r.latencyMs.p90),
    ms('latency p99', r.latencyMs.p99),
    ms('latency max', r.latencyMs.max),
    row({ figure: f, metric: 'reads p99', unit: 'ms', hangar: [r.byKind.read.p99], target: { kind: 'below', value: 20 } }),
    row({
      figure: f,
      metric: 'writes p99',
      unit: 'ms',
      hangar: [r.byKind.write.p99],
      target: { kind: 'below', value: 100 },
      note: `p50 / p99 by kind: ${Object.entries(r.byWrite)
        .map(([k, l]) => `${k} ${l.p50} / ${l.p99}`)
        .join(', ')}`,
    }),
  ];
}

export const loadFigure: Figure = {
  name: 'load',
  title: '200 concurrent clients for 60 s, reads and writes over 100 instances (bench/load.ts)',
  ceiling: 'none',
  target: '0 5xx, 0 lost writes; >= 3,000 req/s; reads p99 < 20 ms; writes p99 < 100 ms',
  async run(ctx) {
    await ctx.release();
    // runLoad stops its hangar and engines itself; should the run be cut short (Ctrl-C), the
    // hangar it started (our child, with its data dir under hangar-load-*) and what runs under
    // that dir are stopped here instead.
    // (Noted while it runs: on Ctrl-C the terminal stops that hangar too, but not its engines.)
    const dirs = new Set<string>();
    const note = () => {
      for (const d of childDataDirs(join(tmpdir(), 'hangar-load-'))) dirs.add(d);
    };
    const watch = setInterval(note, 500);
    const guard = ctx.procs.defer(async () => {
      note();
      for (const dir of dirs) {
        await killUnder(dir);
        rmSync(dir, { recursive: true, force: true });
      }
    });
    try {
      const result = await runLoad({
        quick: ctx.opts.quick,
        clients: 200,
        durationS: ctx.opts.quick ? 10 : 60,
        instances: ctx.opts.quick ? 20 : 100,
        bin: ctx.opts.bin,
        ...(ctx.opts.profileDir ? { profileDir: ctx.opts.profileDir } : {}),
        log: (m) => ctx.log(`load: ${m}`),
      });
      return rowsOf(result);
    } finally {
      clearInterval(watch);
      guard.dismiss();
    }
  },
};
