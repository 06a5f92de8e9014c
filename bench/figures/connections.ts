import type { Figure } from '../lib/context.js';
import { deleteAll } from '../lib/instances.js';
import { hasRedisBenchmark, redisBenchmark } from '../lib/redis-benchmark.js';
import { redisTarget } from '../lib/redis-target.js';
import { row, unavailable } from '../lib/result.js';
import { timeWaitSockets, waitTimeWaitBelow } from '../lib/time-wait.js';

/** Connections per run: with the ones through the edge (two ports each), three rounds stay well inside the ephemeral port range. */
const CONNECTIONS = 6_000;

export const connectionsFigure: Figure = {
  name: 'connections',
  title: 'new connections per second through the edge (redis-benchmark -k 0: connect, AUTH, PING, close; 50 clients)',
  ceiling: 'the same engine configuration, direct',
  target: 'ratio >= 0.75',
  async run(ctx) {
    if (!(await hasRedisBenchmark()))
      return [unavailable('connections', 'new connections', 'redis-benchmark is missing: apt-get install redis-tools')];
    const d = await ctx.opsDeployment();
    const t = await redisTarget(d, 'connections');
    // Direct connections go to the replica (same configuration, answers PING): had they gone to
    // the primary, their TIME_WAIT sockets would share addresses and port with the edge's own
    // connections to it, and slow those down rather than the direct ones.
    const directPort = t.replicaPort;
    const requests = ctx.opts.quick ? 4_000 : CONNECTIONS;
    const edge: number[] = [];
    const direct: number[] = [];
    const tw: number[] = [];
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      tw.push(await waitTimeWaitBelow(10_000, ctx.opts.quick ? 5_000 : 20_000));
      const common = { password: t.password, clients: 50, requests, tests: 'ping_mbulk', keepAlive: false };
      const dr = (await redisBenchmark(ctx.procs, { ...common, port: directPort })).PING_MBULK ?? Number.NaN;
      const er = (await redisBenchmark(ctx.procs, { ...common, port: t.edgePort })).PING_MBULK ?? Number.NaN;
      direct.push(dr);
      edge.push(er);
      ctx.log(
        `connections round ${round}: edge ${er}/s, direct ${dr}/s (${tw.at(-1)} sockets in TIME_WAIT before, ${timeWaitSockets()} after)`,
      );
    }
    await deleteAll(d.api, [t.name]);
    return [
      row({
        figure: 'connections',
        metric: 'new connections, 50 clients',
        unit: 'conn/s',
        hangar: edge,
        ceiling: { what: 'redis-benchmark -k 0 against a redis-server of the instance directly (its replica)', values: direct },
        target: { kind: 'ratio-at-least', value: 0.75 },
        note: `${requests} connections per run; TIME_WAIT sockets on the machine before each round: ${tw.join(', ')} (many of them slow new connections down)`,
      }),
    ];
  },
};
