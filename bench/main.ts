/**
 * `npm run bench`: hangar against the ceilings of its machine, in one run. Each figure is
 * measured beside the ceiling it cannot beat (measured in the same run, interleaved round by
 * round), as a ratio against a target; the table is printed at the end and the results are
 * written to bench/results.json with the machine they were measured on.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { FIGURES } from './figures/index.js';
import { type BenchOptions, parseBenchArgs, USAGE } from './lib/args.js';
import { BenchContext } from './lib/context.js';
import { describeMachine, machineLine } from './lib/machine.js';
import { Processes } from './lib/processes.js';
import { unavailable, type Row } from './lib/result.js';
import { renderNotes, renderTable } from './lib/table.js';
import { now } from './lib/time.js';

function figureList(): string {
  const width = Math.max(...FIGURES.map((f) => f.name.length));
  return FIGURES.map(
    (f) => `  ${f.name.padEnd(width)}  ${f.title}\n  ${' '.repeat(width)}  ceiling: ${f.ceiling}; target: ${f.target}`,
  ).join('\n');
}

async function main(): Promise<number> {
  let opts: BenchOptions;
  try {
    opts = parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${USAGE}\nFigures:\n${figureList()}\n`);
    return 0;
  }
  if (opts.list) {
    process.stdout.write(`${figureList()}\n`);
    return 0;
  }
  const unknown = opts.only.filter((n) => !FIGURES.some((f) => f.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`unknown figure ${unknown.join(', ')}; the figures are: ${FIGURES.map((f) => f.name).join(', ')}\n`);
    return 2;
  }
  const selected = opts.only.length > 0 ? FIGURES.filter((f) => opts.only.includes(f.name)) : FIGURES;

  const procs = new Processes();
  const ctx = new BenchContext(opts, procs);
  let interrupted = false;
  const onSignal = (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    ctx.log(`${signal}: stopping every process the benchmark started`);
    void procs.stopAll().finally(() => process.exit(130));
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  const startedAt = new Date();
  const t0 = now();
  const machine = await describeMachine(opts.databaseUrl, opts.bin);
  ctx.log(`machine: ${machineLine(machine)}`);
  ctx.log(`figures: ${selected.map((f) => f.name).join(', ')}; ${opts.rounds} round(s) each${opts.quick ? ', quick' : ''}`);
  const rows: Row[] = [];
  let failures = 0;
  try {
    for (const figure of selected) {
      ctx.log(`--- ${figure.name}: ${figure.title}`);
      const f0 = now();
      try {
        rows.push(...(await figure.run(ctx)));
      } catch (err) {
        if (interrupted) break;
        failures++;
        ctx.log(`${figure.name} failed: ${(err as Error).stack ?? String(err)}`);
        rows.push(unavailable(figure.name, 'failed', (err as Error).message.split('\n')[0]!.slice(0, 300)));
      }
      ctx.log(`${figure.name} took ${((now() - f0) / 1000).toFixed(0)} s`);
    }
  } finally {
    await ctx.release().catch(() => {});
    await procs.stopAll();
  }
  if (interrupted) return 130;
  machine.loadAtEnd = Math.round(loadavg()[0]! * 100) / 100;
  const seconds = Math.round((now() - t0) / 1000);

  const table = renderTable(rows);
  const notes = renderNotes(rows);
  process.stdout.write(
    `\nhangar benchmark, ${startedAt.toISOString()}, ${seconds} s, ${opts.rounds} round(s) per figure${opts.quick ? ' (--quick)' : ''}\n` +
      `machine: ${machineLine(machine)}\n` +
      'values: median over the rounds (min-max); ratio = hangar / ceiling of the medians; "wide spread": max/min of the rounds above 1.5\n\n' +
      `${table}\n\n${notes}\n`,
  );
  if (opts.out) {
    const results = {
      startedAt: startedAt.toISOString(),
      seconds,
      options: { quick: opts.quick, rounds: opts.rounds, only: opts.only, bin: opts.bin },
      machine,
      figures: selected.map((f) => ({ name: f.name, title: f.title, ceiling: f.ceiling, target: f.target })),
      rows,
      table,
    };
    writeFileSync(opts.out, `${JSON.stringify(results, null, 2)}\n`);
    ctx.log(`results written to ${opts.out}`);
  }
  return failures > 0 ? 1 : 0;
}

const code = await main();
process.exitCode = code;
// Keep-alive sockets of the HTTP clients may hold the event loop for a while after the last run.
setTimeout(() => process.exit(code), 200).unref();
