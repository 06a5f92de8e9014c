import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCeilingServer } from './ceiling.js';
import type { BenchContext } from './context.js';
import { httpLoad, type HttpLoad } from './http-load.js';
import { row, type Row, type Target } from './result.js';

export interface HttpComparison {
  readonly figure: string;
  /** hangar's URL and the headers it needs (the token). */
  readonly hangarUrl: string;
  readonly headers: Record<string, string>;
  /** Path on the bare server answering the same body. */
  readonly barePath: '/list' | '/one';
  /** What the bare server answers: the records hangar answered. */
  readonly records: { readonly list: readonly unknown[]; readonly one: unknown };
  readonly connections: readonly number[];
  readonly reqPerSecTarget: Target;
}

/**
 * hangar's answer to a GET against the bare server answering the same body, interleaved
 * round by round: requests per second, p50 and p99 at each number of connections.
 */
export async function compareHttp(ctx: BenchContext, c: HttpComparison): Promise<Row[]> {
  const dir = ctx.procs.tempDir(`${c.figure}-bare`);
  const file = join(dir, 'records.json');
  writeFileSync(file, JSON.stringify(c.records));
  const server = await startCeilingServer(ctx.procs, 'bare-fastify', [file]);
  const bareUrl = `http://127.0.0.1:${server.port}${c.barePath}`;
  const durationS = ctx.opts.quick ? 2 : 3;
  try {
    // Warm both up (JIT, connection pools, caches) before anything counts.
    await httpLoad({ url: bareUrl, connections: 10, durationS: 1 });
    await httpLoad({ url: c.hangarUrl, connections: 10, durationS: 1, headers: c.headers });
    const hangar = new Map<number, HttpLoad[]>();
    const bare = new Map<number, HttpLoad[]>();
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      for (const connections of c.connections) {
        const b = await httpLoad({ url: bareUrl, connections, durationS });
        const h = await httpLoad({ url: c.hangarUrl, connections, durationS, headers: c.headers });
        if (h.non2xx > 0 || h.errors > 0)
          throw new Error(`${c.figure}: hangar answered ${h.non2xx} non-2xx and ${h.errors} errors out of ${h.total}`);
        bare.set(connections, [...(bare.get(connections) ?? []), b]);
        hangar.set(connections, [...(hangar.get(connections) ?? []), h]);
        ctx.log(
          `${c.figure} round ${round}, ${connections} connections: hangar ${Math.round(h.reqPerSec)} req/s, bare ${Math.round(b.reqPerSec)} req/s`,
        );
      }
    }
    const rows: Row[] = [];
    for (const connections of c.connections) {
      const h = hangar.get(connections)!;
      const b = bare.get(connections)!;
      const what = `bare Fastify, same body, JSON.stringify`;
      rows.push(
        row({
          figure: c.figure,
          metric: `${connections} conn: throughput`,
          unit: 'req/s',
          hangar: h.map((x) => x.reqPerSec),
          ceiling: { what, values: b.map((x) => x.reqPerSec) },
          target: c.reqPerSecTarget,
        }),
        row({
          figure: c.figure,
          metric: `${connections} conn: p50`,
          unit: 'ms',
          hangar: h.map((x) => x.p50),
          ceiling: { what, values: b.map((x) => x.p50) },
        }),
        row({
          figure: c.figure,
          metric: `${connections} conn: p99`,
          unit: 'ms',
          hangar: h.map((x) => x.p99),
          ceiling: { what, values: b.map((x) => x.p99) },
        }),
      );
    }
    return rows;
  } finally {
    await ctx.procs.stop(server.child);
    await ctx.procs.removeDir(dir);
  }
}
