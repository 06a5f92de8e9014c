import { join } from 'node:path';
import { runCeiling } from '../lib/ceiling.js';
import type { BenchContext, Figure } from '../lib/context.js';
import { BenchHangar } from '../lib/hangar.js';
import { httpLoad } from '../lib/http-load.js';
import { createBody } from '../lib/instances.js';
import { freshDatabase, reachable } from '../lib/postgres.js';
import { row, unavailable, type Row } from '../lib/result.js';

const ACCOUNT = 'store@bench.test';

/** Creates per second through the API, against raw inserts into the same kind of database. */
async function measure(ctx: BenchContext, dialect: 'sqlite' | 'postgres'): Promise<Row[]> {
  const creates = ctx.opts.quick ? 100 : 600;
  const rawRows = dialect === 'sqlite' ? 10_000 : 3_000;
  const db = dialect === 'postgres' ? await freshDatabase(ctx.procs, ctx.opts.databaseUrl) : undefined;
  // The emulated runtime runs no engine: a create costs what the API and the store cost.
  const hangar = await BenchHangar.start(ctx.procs, ctx.hangarStart({
    label: `store-${dialect}`, runtime: 'emulated', accounts: [ACCOUNT], portRange: '1100-65000', maxInstances: 1_000_000,
    ...(db ? { databaseUrl: db.url } : {}),
  }));
  const rawDir = ctx.procs.tempDir('raw');
  try {
    const api = await hangar.login(ACCOUNT);
    const hangarRates: number[] = [];
    const p99s: number[] = [];
    const rawRates: number[] = [];
    let serial = 0;
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const raw = await runCeiling<{ insertsPerSecond: number }>(ctx.procs, 'raw-inserts',
        dialect === 'sqlite' ? ['sqlite', join(rawDir, 'raw.sqlite'), String(rawRows)] : ['postgres', db!.url, String(rawRows), '10']);
      rawRates.push(raw.insertsPerSecond);
      const r = await httpLoad({
        url: `${api.url}/v2/instances/`, connections: 10, amount: creates, method: 'POST',
        headers: { ...api.headers, 'content-type': 'application/json' },
        body: () => JSON.stringify(createBody(`store-${serial++}`)),
      });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`store ${dialect}: ${r.non2xx} non-2xx and ${r.errors} errors out of ${r.total} creates`);
      hangarRates.push(r.reqPerSec);
      p99s.push(r.p99);
      ctx.log(`store ${dialect} round ${round}: ${Math.round(r.reqPerSec)} creates/s (p99 ${r.p99} ms), raw ${Math.round(raw.insertsPerSecond)} inserts/s`);
    }
    const label = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const what = dialect === 'sqlite'
      ? 'better-sqlite3 inserts of instance-sized rows, one commit each, WAL + synchronous=NORMAL'
      : 'pg inserts of instance-sized rows, pool of 10, 10 in flight, same database';
    return [
      row({ figure: 'store', metric: `${label}: creates, 10 connections`, unit: 'creates/s', hangar: hangarRates, ceiling: { what, values: rawRates },
        target: { kind: 'at-least', value: dialect === 'sqlite' ? 2000 : 1000 },
        note: dialect === 'sqlite' ? 'POST /v2/instances/ on the emulated runtime (no engine): validation, quota and name checks, port choice, one transaction (instance, ports), audit event; the reconciler records BUILDING and ACTIVE meanwhile' : undefined }),
      row({ figure: 'store', metric: `${label}: create p99`, unit: 'ms', hangar: p99s, target: { kind: 'below', value: 20 } }),
    ];
  } finally {
    await hangar.stop();
    await ctx.procs.removeDir(rawDir);
    await db?.drop();
  }
}

export const storeFigure: Figure = {
  name: 'store',
  title: 'store: creates per second through the API on SQLite and on PostgreSQL (emulated runtime)',
  ceiling: 'raw inserts into the same database',
  target: 'SQLite >= 2,000 creates/s, PostgreSQL >= 1,000 creates/s; p99 < 20 ms',
  async run(ctx) {
    await ctx.release();
    const rows = await measure(ctx, 'sqlite');
    if (!(await reachable(ctx.opts.databaseUrl))) {
      return [...rows, unavailable('store', 'PostgreSQL: creates', `PostgreSQL is not reachable at ${new URL(ctx.opts.databaseUrl).host} (--database-url)`)];
    }
    return [...rows, ...(await measure(ctx, 'postgres'))];
  },
};
