import { readFileSync } from 'node:fs';
import { PORT_RANGES, type BenchContext, type Figure } from '../lib/context.js';
import { BenchHangar } from '../lib/hangar.js';
import { createActive } from '../lib/instances.js';
import { row, type Row } from '../lib/result.js';
import { sleep } from '../lib/time.js';

const ACCOUNT = 'idle@bench.test';

/** Resident memory of a process, in MB. */
function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;
}

/** The ceiling: a bare node process of the same binary, idle (what any Node server starts from). */
async function bareNodeRss(ctx: BenchContext): Promise<number> {
  const child = ctx.procs.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await sleep(500);
    return rssMb(child.pid!);
  } finally {
    await ctx.procs.stop(child);
  }
}

/** hangar started afresh, one instance created and ACTIVE, then left idle: its RSS. */
async function idleRss(ctx: BenchContext, runtime: 'emulated' | 'local'): Promise<number> {
  const hangar = await BenchHangar.start(
    ctx.procs,
    ctx.hangarStart({ label: `idle-${runtime}`, runtime, accounts: [ACCOUNT], portRange: PORT_RANGES.ops }),
  );
  try {
    const api = await hangar.login(ACCOUNT);
    await createActive(api, ['idle-one']);
    await sleep(2000);
    return hangar.rssMb();
  } finally {
    await hangar.stop();
  }
}

export const idleFigure: Figure = {
  name: 'idle',
  title: 'idle hangar RSS: started, one instance created and ACTIVE, then idle (emulated and local runtimes)',
  ceiling: 'a bare node process, idle',
  target: 'RSS < 100 MB on both runtimes',
  async run(ctx) {
    await ctx.release();
    const bare: number[] = [];
    const byRuntime = { emulated: [] as number[], local: [] as number[] };
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      bare.push(await bareNodeRss(ctx));
      for (const runtime of ['emulated', 'local'] as const) byRuntime[runtime].push(await idleRss(ctx, runtime));
      ctx.log(
        `idle round ${round}: emulated ${byRuntime.emulated.at(-1)!.toFixed(0)} MB, local ${byRuntime.local.at(-1)!.toFixed(0)} MB, bare node ${bare.at(-1)!.toFixed(0)} MB`,
      );
    }
    const what = 'a bare node process, idle';
    const rows: Row[] = (['emulated', 'local'] as const).map((runtime) =>
      row({
        figure: 'idle',
        metric: `${runtime}, one instance: hangar RSS`,
        unit: 'MB',
        hangar: byRuntime[runtime],
        ceiling: { what, values: bare },
        target: { kind: 'below', value: 100 },
      }),
    );
    return rows;
  },
};
