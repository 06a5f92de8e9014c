import { join } from 'node:path';
import { runCeiling } from '../lib/ceiling.js';
import type { BenchContext, Figure } from '../lib/context.js';
import { BenchHangar, type Api } from '../lib/hangar.js';
import { httpLoad } from '../lib/http-load.js';
import { createBody } from '../lib/instances.js';
import { freshDatabase, reachable } from '../lib/postgres.js';
import { row, unavailable, type Row } from '../lib/result.js';
import { SQLITE_WAL_AUTOCHECKPOINT } from '../../src/store/database.js';

const ACCOUNT = 'store@bench.test';

/** What hangar's /metrics says it has sent to its store so far (hangar_store_statements_total). */
async function statementsSent(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^hangar_store_statements_total (\d+)/m.exec(text);
  if (!m) throw new Error('hangar_store_statements_total is not in /metrics');
  return Number(m[1]);
}

/**
 * Until the reconciler has no pass queued or running (hangar_reconcile_queue_depth 0, twice in a
 * row); says how many scrapes that took.
 */
async function settled(url: string): Promise<number> {
  let zero = 0;
  let scrapes = 0;
  while (scrapes < 600 && zero < 2) {
    const text = await (await fetch(`${url}/metrics`)).text();
    scrapes++;
    zero = /^hangar_reconcile_queue_depth 0$/m.test(text) ? zero + 1 : 0;
    await new Promise((r) => setTimeout(r, 50));
  }
  return scrapes;
}

/**
 * Statements per request, read from hangar's counter around each kind of request made one at a
 * time (an ACL change answers once its pass has enforced it, so that pass is counted with it;
 * creates are counted until their passes are over). A scrape's own statements are measured and
 * taken off for each scrape made; the background work of the seconds this takes (lease renewals,
 * polls, the periodic sweep's passes over every instance) is not: this runs before the rounds
 * fill the store with instances.
 */
async function statementsPerRequest(api: Api, serial: () => number): Promise<Record<string, number>> {
  const { url } = api;
  // nothing of what ran before (the start, the login) is still to pass
  await settled(url);
  const a = await statementsSent(url);
  const scrape = (await statementsSent(url)) - a;
  const per = async (n: number, fn: (i: number) => Promise<void>, after?: () => Promise<number>) => {
    const before = await statementsSent(url);
    for (let i = 0; i < n; i++) await fn(i);
    const scrapes = 1 + (after ? await after() : 0);
    return ((await statementsSent(url)) - before - scrapes * scrape) / n;
  };
  const name = `stmt-${serial()}`;
  const out: Record<string, number> = {};
  out['create (request and its passes, until ACTIVE)'] = await per(
    20,
    async (i) => {
      await api.ok('POST', '/v2/instances/', createBody(i === 0 ? name : `stmt-${serial()}`));
    },
    () => settled(url),
  );
  out['GET one instance'] = await per(200, async () => {
    await api.ok('GET', `/v2/instances/${name}/`);
  });
  out['GET the list'] = await per(100, async () => {
    await api.ok('GET', '/v2/instances/');
  });
  out['ACL add or delete (request and its pass)'] =
    (await per(100, async (i) => {
      const add = await api.ok('POST', `/v2/instances/${name}/acls/`, {
        cidr_mask: `10.9.${i >> 8}.${i & 255}`,
        description: 'statements',
      });
      await api.ok('DELETE', `/v2/instances/${name}/acls/${add.body.data}/`);
    })) / 2;
  return out;
}

/** Creates per second through the API, against raw inserts into the same kind of database. */
async function measure(ctx: BenchContext, dialect: 'sqlite' | 'postgres'): Promise<Row[]> {
  const creates = ctx.opts.quick ? 100 : 400;
  const rawRows = dialect === 'sqlite' ? 10_000 : 3_000;
  const db = dialect === 'postgres' ? await freshDatabase(ctx.procs, ctx.opts.databaseUrl) : undefined;
  // The emulated runtime runs no engine: a create costs what the API and the store cost.
  const hangar = await BenchHangar.start(
    ctx.procs,
    ctx.hangarStart({
      label: `store-${dialect}`,
      runtime: 'emulated',
      accounts: [ACCOUNT],
      portRange: '1100-65000',
      maxInstances: 1_000_000,
      ...(db ? { databaseUrl: db.url } : {}),
    }),
  );
  const rawDir = ctx.procs.tempDir('raw');
  try {
    const api = await hangar.login(ACCOUNT);
    const hangarRates: number[] = [];
    const p99s: number[] = [];
    const rawRates: number[] = [];
    let serial = 0;
    // first, on a store that holds only these few instances: the periodic sweep's passes over the
    // rounds' hundreds of instances would be counted with the requests
    const counted = await statementsPerRequest(api, () => serial++);
    ctx.log(
      `store ${dialect}: statements per request: ${Object.entries(counted)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ')}`,
    );
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const raw = await runCeiling<{ insertsPerSecond: number }>(
        ctx.procs,
        'raw-inserts',
        dialect === 'sqlite' ? ['sqlite', join(rawDir, 'raw.sqlite'), String(rawRows)] : ['postgres', db!.url, String(rawRows), '10'],
      );
      rawRates.push(raw.insertsPerSecond);
      const r = await httpLoad({
        url: `${api.url}/v2/instances/`,
        connections: 10,
        amount: creates,
        method: 'POST',
        headers: { ...api.headers, 'content-type': 'application/json' },
        body: () => JSON.stringify(createBody(`store-${serial++}`)),
      });
      if (r.non2xx > 0 || r.errors > 0)
        throw new Error(`store ${dialect}: ${r.non2xx} non-2xx and ${r.errors} errors out of ${r.total} creates`);
      hangarRates.push(r.reqPerSec);
      p99s.push(r.p99);
      ctx.log(
        `store ${dialect} round ${round}: ${Math.round(r.reqPerSec)} creates/s (p99 ${r.p99} ms), raw ${Math.round(raw.insertsPerSecond)} inserts/s`,
      );
    }
    const label = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const what =
      dialect === 'sqlite'
        ? `better-sqlite3 inserts of instance-sized rows, one commit each, WAL + synchronous=NORMAL, checkpoints every ${SQLITE_WAL_AUTOCHECKPOINT.toLocaleString('en-US')} pages (as hangar's store)`
        : 'pg inserts of instance-sized rows, pool of 10, 10 in flight, same database';
    return [
      row({
        figure: 'store',
        metric: `${label}: creates, 10 connections`,
        unit: 'creates/s',
        hangar: hangarRates,
        ceiling: { what, values: rawRates },
        target: { kind: 'at-least', value: dialect === 'sqlite' ? 2000 : 1000 },
        note:
          dialect === 'sqlite'
            ? 'POST /v2/instances/ on the emulated runtime (no engine): validation, quota and name checks, port choice, one transaction (instance, ports), audit event; the reconciler records BUILDING and ACTIVE meanwhile'
            : undefined,
      }),
      row({ figure: 'store', metric: `${label}: create p99`, unit: 'ms', hangar: p99s, target: { kind: 'below', value: 20 } }),
      ...Object.entries(counted).map(([what, n]) =>
        row({
          figure: 'store',
          metric: `${label}: statements per ${what}`,
          unit: 'statements',
          hangar: [Math.round(n * 10) / 10],
          ...(what.startsWith('create')
            ? {
                note: "statements: read off hangar_store_statements_total around requests made one at a time (BEGIN and COMMIT count), a scrape's own taken off",
              }
            : {}),
        }),
      ),
    ];
  } finally {
    await hangar.stop();
    await ctx.procs.removeDir(rawDir);
    await db?.drop();
  }
}

export const storeFigure: Figure = {
  name: 'store',
  title: 'store: creates per second through the API on SQLite and on PostgreSQL, and statements per request (emulated runtime)',
  ceiling: 'raw inserts into the same database',
  target: 'SQLite >= 2,000 creates/s, PostgreSQL >= 1,000 creates/s; p99 < 20 ms',
  async run(ctx) {
    await ctx.release();
    const rows = await measure(ctx, 'sqlite');
    if (!(await reachable(ctx.opts.databaseUrl))) {
      return [
        ...rows,
        unavailable(
          'store',
          'PostgreSQL: creates',
          `PostgreSQL is not reachable at ${new URL(ctx.opts.databaseUrl).host} (--database-url)`,
        ),
      ];
    }
    return [...rows, ...(await measure(ctx, 'postgres'))];
  },
};
