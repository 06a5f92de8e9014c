import { readFileSync } from 'node:fs';
import { PORT_RANGES, type BenchContext, type Figure } from '../lib/context.js';
import { BenchHangar, type Api } from '../lib/hangar.js';
import { httpLoad } from '../lib/http-load.js';
import { createActive, requestRedis, waitAll } from '../lib/instances.js';
import { pidsUnder } from '../lib/processes.js';
import { row } from '../lib/result.js';
import { now, sleep } from '../lib/time.js';

const PER_ACCOUNT = 100;
/** Instances requested at once, ACTIVE before the next ones are requested. */
const WAVE = 25;
/**
 * How long the figure creates instances: no new wave is requested past it, so that the whole
 * benchmark keeps to its 10 minutes on a small machine; the figures are then measured at the
 * count reached, and a row says how many that was.
 */
const CREATE_BUDGET_S = 90;
/** How long one wave may take to turn ACTIVE. */
const WAVE_TIMEOUT_MS = 120_000;

/** Proportional set size of the processes (shared pages split between them), in MB. */
function pssMb(pids: readonly number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* exited */
    }
  }
  return kb / 1024;
}

/** hangar's CPU use over a quiet window, in % of one core. */
async function idleCpu(hangar: BenchHangar, windowMs: number): Promise<number> {
  const c0 = hangar.cpuMs();
  const t0 = now();
  await sleep(windowMs);
  return ((hangar.cpuMs() - c0) / (now() - t0)) * 100;
}

interface ApiSample {
  readonly oneP99: number;
  readonly listP99?: number;
  readonly rss: number;
}

async function sampleApi(ctx: BenchContext, hangar: BenchHangar, api: Api, one: string, listApi: Api | undefined): Promise<ApiSample> {
  const durationS = ctx.opts.quick ? 2 : 3;
  const oneRun = await httpLoad({ url: `${api.url}/v2/instances/${one}/`, connections: 10, durationS, headers: api.headers });
  const listRun = listApi
    ? await httpLoad({ url: `${listApi.url}/v2/instances/`, connections: 10, durationS, headers: listApi.headers })
    : undefined;
  for (const r of [oneRun, listRun])
    if (r && (r.non2xx > 0 || r.errors > 0)) throw new Error(`density: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { oneP99: oneRun.p99, ...(listRun ? { listP99: listRun.p99 } : {}), rss: hangar.rssMb() };
}

export const densityFigure: Figure = {
  name: 'density',
  title: 'density: 1,000 idle redis_ha_instances on the machine, then the API p99, hangar RSS and idle CPU',
  ceiling: 'an idle hangar (one instance)',
  target: 'API p99 < 50 ms (GET one and list); hangar RSS < 150 MB; idle CPU < 2 % of a core',
  async run(ctx) {
    await ctx.release();
    const count = ctx.opts.quick ? 30 : 1000;
    const accounts = Array.from({ length: Math.ceil(count / PER_ACCOUNT) }, (_, i) => `density-${i}@bench.test`);
    const hangar = await BenchHangar.start(
      ctx.procs,
      ctx.hangarStart({
        label: 'density',
        runtime: 'local',
        accounts,
        portRange: PORT_RANGES.density,
        maxInstances: PER_ACCOUNT + 10,
      }),
    );
    try {
      const apis = await Promise.all(accounts.map((a) => hangar.login(a)));
      const first = apis[0]!;
      await createActive(first, ['probe']);
      await sleep(1000);
      // Half a resync period: the periodic sweep is spread over most of its 30 s, so half of it
      // holds half the sweep's passes.
      const windowMs = ctx.opts.quick ? 3000 : 15_000;
      const idle: ApiSample[] = [];
      for (let round = 1; round <= ctx.opts.rounds; round++) idle.push(await sampleApi(ctx, hangar, first, 'probe', undefined));
      const idleCpuPct = await idleCpu(hangar, windowMs);
      ctx.log(
        `density idle: GET p99 ${idle.map((s) => s.oneP99).join(', ')} ms, RSS ${idle.map((s) => s.rss.toFixed(0)).join(', ')} MB, CPU ${idleCpuPct.toFixed(1)} %`,
      );

      // The other instances, PER_ACCOUNT per account, in waves of WAVE requested at once (10
      // requests in flight), each wave ACTIVE before the next: what is measured is hangar holding
      // many instances, not a burst (a burst of hundreds queues behind the workers).
      const t0 = now();
      const jobs = apis.flatMap((api, a) =>
        Array.from({ length: Math.min(PER_ACCOUNT, count - a * PER_ACCOUNT) - (a === 0 ? 1 : 0) }, (_, i) => ({
          api,
          name: `d-${a}-${i}`,
        })),
      );
      const failed: string[] = [];
      let requested = 1;
      let lastWaveMs = 0;
      for (let w = 0; w < jobs.length; w += WAVE) {
        // no wave that would end past the budget, had it taken as long as the one before
        if (!ctx.opts.quick && now() - t0 + lastWaveMs > CREATE_BUDGET_S * 1000) {
          ctx.log(`density: the creation budget (${CREATE_BUDGET_S} s) is spent: measuring at ${requested} instances`);
          break;
        }
        const w0 = now();
        const wave = jobs.slice(w, w + WAVE);
        requested += wave.length;
        const queue = [...wave];
        await Promise.all(
          Array.from({ length: 10 }, async () => {
            for (let job = queue.shift(); job; job = queue.shift()) await requestRedis(job.api, job.name);
          }),
        );
        let late = false;
        for (const api of new Set(wave.map((j) => j.api))) {
          try {
            const r = await waitAll(
              api,
              wave.filter((j) => j.api === api).map((j) => j.name),
              'ACTIVE',
              WAVE_TIMEOUT_MS,
              100,
              { tolerateFailed: true },
            );
            failed.push(...r.failed);
          } catch (err) {
            ctx.log(`density: ${(err as Error).message}; no more waves`);
            late = true;
          }
        }
        if (late) break;
        lastWaveMs = now() - w0;
        if ((w / WAVE) % 4 === 3) ctx.log(`density: ${1 + w + wave.length} instances after ${((now() - t0) / 1000).toFixed(0)} s`);
      }
      const allActiveS = (now() - t0) / 1000;
      let active = 0;
      for (const api of apis)
        active += (await api.ok<{ data: { state: string }[] }>('GET', '/v2/instances/')).body.data.filter(
          (i) => i.state === 'ACTIVE',
        ).length;
      ctx.log(
        `density: ${requested} instances requested, ${active} ACTIVE after ${allActiveS.toFixed(1)} s${failed.length ? `; FAILED: ${failed.join(', ')}` : ''}`,
      );
      await sleep(2000);

      const listApi = requested >= 2 * PER_ACCOUNT ? apis[1] : undefined;
      const loaded: ApiSample[] = [];
      for (let round = 1; round <= ctx.opts.rounds; round++) loaded.push(await sampleApi(ctx, hangar, first, 'probe', listApi));
      const loadedCpuPct = await idleCpu(hangar, windowMs);
      const engines = pidsUnder(hangar.dataDir);
      const enginesMb = pssMb(engines);
      ctx.log(
        `density ${active}: GET p99 ${loaded.map((s) => s.oneP99).join(', ')} ms, RSS ${loaded.map((s) => s.rss.toFixed(0)).join(', ')} MB, CPU ${loadedCpuPct.toFixed(1)} %, ${engines.length} engine/edge processes, ${enginesMb.toFixed(0)} MB PSS`,
      );

      const f = 'density';
      const idleWhat = 'the same hangar with one instance, before the others were created';
      return [
        row({
          figure: f,
          metric: 'idle redis_ha_instances ACTIVE',
          unit: 'instances',
          hangar: [active],
          target: { kind: 'at-least', value: count },
          note: `${requested} requested, ${WAVE} at a time, within a creation budget of ${CREATE_BUDGET_S} s (no wave is requested that would end past it at the pace of the one before); the rows below are measured at that count`,
        }),
        row({
          figure: f,
          metric: `${active} instances: API p99, GET one, 10 conn`,
          unit: 'ms',
          hangar: loaded.map((s) => s.oneP99),
          ceiling: { what: idleWhat, values: idle.map((s) => s.oneP99) },
          target: { kind: 'below', value: 50 },
        }),
        ...(listApi
          ? [
              row({
                figure: f,
                metric: `${active} instances: API p99, list of ${PER_ACCOUNT}, 10 conn`,
                unit: 'ms',
                hangar: loaded.map((s) => s.listP99!),
                target: { kind: 'below', value: 50 },
              }),
            ]
          : []),
        row({
          figure: f,
          metric: `${active} instances: hangar RSS`,
          unit: 'MB',
          hangar: loaded.map((s) => s.rss),
          ceiling: { what: idleWhat, values: idle.map((s) => s.rss) },
          target: { kind: 'below', value: 150 },
        }),
        row({
          figure: f,
          metric: `${active} instances: hangar CPU, idle`,
          unit: '% core',
          hangar: [loadedCpuPct],
          ceiling: { what: idleWhat, values: [idleCpuPct] },
          target: { kind: 'below', value: 2 },
          note: `CPU over ${windowMs / 1000} s with no request (a resync sweep every 30 s, spread over 24 s)`,
        }),
        row({
          figure: f,
          metric: `${active} instances: engines + edge memory (PSS)`,
          unit: 'MB',
          hangar: [enginesMb],
          note: `${engines.length} processes`,
        }),
        row({
          figure: f,
          metric: `${active} instances: created, ${WAVE} at a time`,
          unit: 's',
          hangar: [allActiveS],
          ...(failed.length ? { note: `${failed.length} instance(s) FAILED while created: ${failed.slice(0, 5).join(', ')}` } : {}),
        }),
      ];
    } catch (err) {
      // The data dir goes with the hangar: what it logged last is kept in the benchmark's output.
      const alive = (() => {
        try {
          process.kill(hangar.pid, 0);
          return true;
        } catch {
          return false;
        }
      })();
      ctx.log(`density: hangar ${alive ? 'still runs' : 'is gone'}; the end of its log:\n${hangar.log.slice(-4000)}`);
      throw err;
    } finally {
      ctx.log('density: stopping hangar and its engines');
      await hangar.stop();
    }
  },
};
