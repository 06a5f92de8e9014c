import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { sendRequest } from '../helpers/raw-http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { enginePid, eventually, pingOutcome } from './helpers/redis.js';
import { expectApiMatchesWhatRuns } from './helpers/what-runs.js';

/**
 * SIGTERM while work is under way: the requests in flight get their answers, the worker stops
 * between steps (a pass waiting on the edge is cut short rather than waited for), the process
 * exits with code 0, and the engines and the edge keep serving without it.
 */
describe.runIf(enginesAvailable())('SIGTERM on the local runtime', () => {
  let h: HangarProcess;
  let a: RedisRecord;

  beforeAll(async () => {
    h = await HangarProcess.start();
    a = await h.createRedis('a', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
  });

  it('finishes the requests in flight, stops the worker between steps and exits 0 within 10 s; engines and edge keep serving', async () => {
    const edge = Number(readFileSync(join(h.dataDir, 'edge', 'process.pid'), 'utf8').trim());
    const engines = [enginePid(h.dataDir, a.id, 'primary'), enginePid(h.dataDir, a.id, 'replica')];
    // A paused edge (its whole process group) holds the passes in their longest waits: a new
    // instance waits for the edge to reload, an ACL change for the edge to answer.
    process.kill(-edge, 'SIGSTOP');
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    let stopMs: number;
    let aclAdd: Promise<{ status: number; body: any }>;
    try {
      expect((await h.post('/v2/instances/', h.redisBody('b'))).status).toBe(200);
      await h.waitFor('b', (r) => r?.state === 'BUILDING');
      // a request in flight when the signal comes: it waits for its pass to apply the ACL
      aclAdd = h.post('/v2/instances/a/acls/', { cidr_mask: '192.0.2.0/24', description: 'in flight' });
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      process.kill(h.pid, 'SIGTERM');
      exit = await h.waitExit(15_000);
      stopMs = Date.now() - t0;
    } finally {
      process.kill(-edge, 'SIGCONT');
    }
    const answered = await aclAdd;
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(exit, h.log.slice(-3000)).toEqual({ code: 0, signal: null });
    // Within 10 s; and in less than the 8 s the worker gives a pass to end: the passes waiting
    // on the edge were cut short at their next step rather than waited for.
    expect(stopMs).toBeLessThan(8000);
    console.info(`hangar stopped ${stopMs} ms after SIGTERM`);

    // the engines and the edge outlive hangar
    expect(await pingOutcome(portOf(a.public_connect_string), a.password)).toBe('PONG');
    expect([enginePid(h.dataDir, a.id, 'primary'), enginePid(h.dataDir, a.id, 'replica')]).toEqual(engines);
    expect(Number(readFileSync(join(h.dataDir, 'edge', 'process.pid'), 'utf8').trim())).toBe(edge);

    // started again, it finishes the work: b is built, the ACL answered before the stop is there
    await h.serve();
    await h.waitFor('b', (r) => r?.state === 'ACTIVE');
    await h.waitFor('a', (r) => r?.state === 'ACTIVE');
    const acls = (await h.get('/v2/instances/a/acls/')).body.data.map((x: any) => x.cidr_mask).sort();
    expect(acls).toEqual(['127.0.0.1', '192.0.2.0/24']);
    await eventually(
      'what the API lists runs',
      async () => {
        try {
          await expectApiMatchesWhatRuns(h);
          return true;
        } catch {
          return false;
        }
      },
      10_000,
    );
    await expectApiMatchesWhatRuns(h);
  });
});

/** One request of the load, as the client saw it. */
interface Seen {
  /** Sent after /readyz was seen answering 503 (so hangar was stopping when it took it). */
  readonly afterNotReady: boolean;
  readonly status: number;
  readonly connection: string | undefined;
  readonly body: unknown;
}

/**
 * A graceful stop under load, with clients that keep their connections alive: on SIGTERM
 * /readyz turns 503 first; for the drain period (HANGAR_DRAIN_PERIOD) requests are still served,
 * each answer telling its client `Connection: close`; then the listener closes and the requests
 * in flight finish. No answer is a 5xx, and every error a client gets is hangar's own
 * `{"message", "code"}` (never the framework's `{"error", "statusCode"}` 503).
 */
describe('SIGTERM under load with keep-alive clients (emulated runtime)', () => {
  let h: HangarProcess;
  beforeAll(async () => {
    h = await HangarProcess.start({ runtime: 'emulated', env: { HANGAR_DRAIN_PERIOD: '2' } });
    expect((await h.post('/v2/instances/', h.redisBody('a', { version: '7.0.15' }))).status).toBe(200);
    await h.waitFor('a', (r) => r?.state === 'ACTIVE');
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('/readyz turns 503 first, requests are served through the drain with Connection: close, no 5xx, exit 0', async () => {
    const basic = `Basic ${Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64')}`;
    const token = (
      (await sendRequest(h.url, 'GET', '/v2/tokens/', { headers: { authorization: basic } })).json as { data: { token: string } }
    ).data.token;
    const seen: Seen[] = [];
    const failures: string[] = [];
    let notReady: unknown;
    let exited = false;
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

    // clients that keep their connection alive, each on one socket
    const client = async (i: number) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const headers = { 'x-auth-token': token, 'content-type': 'application/json' };
      for (let n = 0; !exited; n++) {
        const afterNotReady = notReady !== undefined;
        const [method, path, body] =
          n % 3 === 0
            ? ['GET', '/v2/instances/']
            : n % 3 === 1
              ? ['GET', '/v2/instances/a/']
              : ['POST', '/v2/instances/a/acls/', JSON.stringify({ cidr_mask: `10.${i}.${n % 250}.0/24`, description: 'load' })];
        try {
          const res = await sendRequest(h.url, method!, path!, { headers, agent, ...(body ? { body } : {}) });
          const connection = res.headers.connection;
          seen.push({
            afterNotReady,
            status: res.status,
            connection: typeof connection === 'string' ? connection : undefined,
            body: res.json ?? res.text,
          });
        } catch (err) {
          // once the listener is closed: refused, or a kept-alive connection closed as the request went out
          failures.push((err as NodeJS.ErrnoException).code ?? (err as Error).message);
          await pause(10);
        }
      }
      agent.destroy();
    };
    // /readyz on a connection of its own each time, as a load balancer probes
    const probe = async () => {
      while (!exited && notReady === undefined) {
        try {
          const res = await sendRequest(h.url, 'GET', '/readyz', { agent: new Agent({ keepAlive: false }) });
          if (res.status === 503) notReady = res.json;
        } catch {
          /* the listener is gone */
        }
        await pause(20);
      }
    };

    const load = Array.from({ length: 8 }, (_, i) => client(i));
    const until = Date.now() + 20_000;
    while (seen.length < 200 && Date.now() < until) await pause(20);
    expect(seen.length, 'the load runs before the stop').toBeGreaterThanOrEqual(200);
    const probing = probe();
    process.kill(h.pid, 'SIGTERM');
    const exit = await h.waitExit(30_000);
    exited = true;
    await Promise.all([...load, probing]);

    expect(exit, h.log.slice(-3000)).toEqual({ code: 0, signal: null });
    expect(notReady, '/readyz answered 503 while stopping').toEqual({ status: 'not ready', problems: ['hangar is stopping'] });
    // no 5xx, and every error in hangar's own shape
    expect(seen.filter((x) => x.status >= 500)).toEqual([]);
    for (const x of seen.filter((y) => y.status >= 400)) {
      expect(x.body).toMatchObject({ message: expect.any(String), code: expect.any(String) });
      expect(Object.keys(x.body as object).every((k) => ['message', 'code', 'field', 'allowed', 'errors'].includes(k))).toBe(true);
    }
    // requests sent once /readyz said so were still served during the drain, each closing its connection
    const draining = seen.filter((x) => x.afterNotReady);
    expect(draining.filter((x) => x.status === 200).length, 'answers during the drain').toBeGreaterThan(0);
    expect(draining.filter((x) => x.connection !== 'close')).toEqual([]);
    expect(
      failures.every((f) => ['ECONNREFUSED', 'ECONNRESET', 'socket hang up', 'EPIPE'].includes(f)),
      failures.join(', '),
    ).toBe(true);
    console.info(
      `${seen.length} answers (${draining.length} during the drain), ${failures.length} refused connections after the listener closed`,
    );
  });
});
