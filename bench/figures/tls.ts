import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Figure } from '../lib/context.js';
import { freePort } from '../lib/free-port.js';
import { deleteAll } from '../lib/instances.js';
import type { Processes } from '../lib/processes.js';
import { hasRedisBenchmark, redisBenchmark, redisBenchmarkHasTls } from '../lib/redis-benchmark.js';
import { redisTarget } from '../lib/redis-target.js';
import { row, unavailable, type Row } from '../lib/result.js';
import { timeWaitSockets, waitTimeWaitBelow } from '../lib/time-wait.js';
import { sleep } from '../lib/time.js';

const PASSWORD = 'ceiling-password';

/**
 * A redis-server with a TLS port only, configured as hangar configures an engine (AOF every
 * second, no RDB snapshots), presenting a certificate of a CA made here of the same kind as the
 * deployment's (EC P-256, a leaf for 127.0.0.1 signed by the CA). Returns its port and the CA file.
 */
async function directTlsServer(procs: Processes, dir: string): Promise<{ port: number; caFile: string }> {
  const f = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', '-new', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=bench direct TLS CA');
  openssl('req', '-new', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  openssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.pem'),
    '-days',
    '2',
    '-extfile',
    f('server.ext'),
  );
  const port = await freePort();
  writeFileSync(
    f('redis.conf'),
    [
      'bind 127.0.0.1',
      'port 0',
      `tls-port ${port}`,
      `tls-cert-file "${f('server.pem')}"`,
      `tls-key-file "${f('server.key')}"`,
      `tls-ca-cert-file "${f('ca.pem')}"`,
      'tls-auth-clients no',
      'daemonize no',
      'logfile ""',
      `dir "${dir}"`,
      `requirepass "${PASSWORD}"`,
      'maxmemory 500mb',
      'appendonly yes',
      'appendfsync everysec',
      'save ""',
    ].join('\n'),
  );
  procs.spawn('redis-server', [f('redis.conf')], { stdio: 'ignore', cwd: dir });
  // up once a TLS client is answered
  for (let attempt = 0; ; attempt++) {
    try {
      await redisBenchmark(procs, { port, password: PASSWORD, clients: 1, requests: 1, tests: 'ping_mbulk', caFile: f('ca.pem') });
      return { port, caFile: f('ca.pem') };
    } catch (err) {
      if (attempt >= 100) throw err;
      await sleep(50);
    }
  }
}

type Path = 'tls-edge' | 'plain-edge' | 'tls-direct';

export const tlsFigure: Figure = {
  name: 'tls',
  title:
    'redis over TLS through the edge: SET and GET (redis-benchmark --tls, 50 clients) and new connections per second (-k 0), against plain through the edge and TLS direct to redis-server',
  ceiling: 'plain through the same edge; TLS direct to a redis-server configured alike (its own certificate of the same kind)',
  target: 'reported (ratios)',
  async run(ctx) {
    if (!(await hasRedisBenchmark())) return [unavailable('tls', 'SET/GET', 'redis-benchmark is missing: apt-get install redis-tools')];
    if (!(await redisBenchmarkHasTls())) return [unavailable('tls', 'SET/GET', 'this redis-benchmark has no TLS (--tls)')];
    const d = await ctx.opsDeployment();
    const t = await redisTarget(d, 'tls');
    if (t.edgeTlsPort === undefined) return [unavailable('tls', 'SET/GET', 'the instance has no TLS listener (HANGAR_INSTANCE_TLS=off?)')];
    const dir = ctx.procs.tempDir('tls');
    // what a client trusts: the deployment's CA, as any client fetches it
    const hangarCa = join(dir, 'hangar-ca.pem');
    writeFileSync(hangarCa, await (await fetch(`${d.api.url}/v2/tls/ca`)).text());
    const direct = await directTlsServer(ctx.procs, dir);
    const target: Record<Path, { port: number; password: string; caFile?: string }> = {
      'tls-edge': { port: t.edgeTlsPort, password: t.password, caFile: hangarCa },
      'plain-edge': { port: t.edgePort, password: t.password },
      'tls-direct': { port: direct.port, password: PASSWORD, caFile: direct.caFile },
    };
    const requests = ctx.opts.quick ? 20_000 : 60_000;
    const connections = ctx.opts.quick ? 2_000 : 4_000;
    const values = new Map<string, number[]>();
    const add = (key: string, v: number | undefined) => values.set(key, [...(values.get(key) ?? []), v ?? Number.NaN]);
    const tw: number[] = [];
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      for (const path of ['tls-direct', 'plain-edge', 'tls-edge'] as const) {
        const r = await redisBenchmark(ctx.procs, { ...target[path], clients: 50, requests, tests: 'set,get' });
        add(`SET|${path}`, r.SET);
        add(`GET|${path}`, r.GET);
      }
      tw.push(await waitTimeWaitBelow(10_000, ctx.opts.quick ? 5_000 : 20_000));
      for (const path of ['tls-direct', 'plain-edge', 'tls-edge'] as const) {
        const r = await redisBenchmark(ctx.procs, {
          ...target[path],
          clients: 50,
          requests: connections,
          tests: 'ping_mbulk',
          keepAlive: false,
        });
        add(`CONN|${path}`, r.PING_MBULK);
      }
      const line = (k: string) =>
        (['tls-edge', 'plain-edge', 'tls-direct'] as const).map((p) => `${p} ${values.get(`${k}|${p}`)!.at(-1)}`).join(', ');
      ctx.log(`tls round ${round}: SET ${line('SET')}; GET ${line('GET')}; new connections/s ${line('CONN')}`);
    }
    await deleteAll(d.api, [t.name]);
    await ctx.procs.removeDir(dir);
    const rows: Row[] = [];
    const metrics = [
      { key: 'SET', metric: 'SET, 50 clients', unit: 'req/s' },
      { key: 'GET', metric: 'GET, 50 clients', unit: 'req/s' },
      { key: 'CONN', metric: 'new connections, 50 clients', unit: 'conn/s' },
    ];
    for (const m of metrics) {
      rows.push(
        row({
          figure: 'tls',
          metric: `${m.metric}: TLS through the edge / plain through the edge`,
          unit: m.unit,
          hangar: values.get(`${m.key}|tls-edge`)!,
          ceiling: {
            what: 'redis-benchmark, plain, through the same edge to the same instance',
            values: values.get(`${m.key}|plain-edge`)!,
          },
        }),
        row({
          figure: 'tls',
          metric: `${m.metric}: TLS through the edge / TLS direct`,
          unit: m.unit,
          hangar: values.get(`${m.key}|tls-edge`)!,
          ceiling: {
            what: 'redis-benchmark --tls against a redis-server with its own TLS port',
            values: values.get(`${m.key}|tls-direct`)!,
          },
          ...(m.key === 'CONN'
            ? {
                note: `${connections} connections per run; TIME_WAIT sockets on the machine before each round: ${tw.join(', ')}; now ${timeWaitSockets()}`,
              }
            : {}),
        }),
      );
    }
    return rows;
  },
};
