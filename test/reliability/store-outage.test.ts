import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable, portOf, type RedisRecord } from '../e2e/helpers/hangar-process.js';
import { eventually, pingOutcome } from '../e2e/helpers/redis.js';
import { expectApiMatchesWhatRuns } from '../e2e/helpers/what-runs.js';
import { PrivatePostgres, privatePostgresAvailable } from './helpers/private-postgres.js';

/**
 * The store gone: the PostgreSQL server of this test stopped for 30 s under a running hangar
 * (local runtime). Requests get a 503 with a message at once, never a hang; hangar does not
 * crash; engines and the edge serve on; when the store returns hangar recovers by itself:
 * requests, readiness, the runtime lease and the reconcile passes.
 */

const OUTAGE_MS = 30_000;

interface Sample {
  readonly what: string;
  readonly status: number;
  readonly ms: number;
  readonly body: any;
}

describe.runIf(enginesAvailable() && privatePostgresAvailable())('PostgreSQL stopped for 30 s under a running hangar', () => {
  let pg: PrivatePostgres;
  let h: HangarProcess;
  let before: RedisRecord;

  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    h = await HangarProcess.start({ databaseUrl: pg.url });
    before = await h.createRedis('before', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
    pg?.destroy();
  });

  /** What hangar logged at level error: a 500 in a failure message says what broke. */
  const errorsLogged = () =>
    h.log
      .split('\n')
      .filter((l) => /"level":[56]0/.test(l))
      .map((l) => l.slice(0, 1500))
      .join('\n');

  /** One request, timed; a connection failure is status 0. */
  async function sample(what: string, request: () => Promise<{ status: number; body: any }>): Promise<Sample> {
    const t = Date.now();
    try {
      const r = await request();
      return { what, status: r.status, ms: Date.now() - t, body: r.body };
    } catch (err) {
      return { what, status: 0, ms: Date.now() - t, body: String(err) };
    }
  }

  it('answers 503 with a message quickly and keeps running while the store is gone, then recovers by itself', async () => {
    const samples: Sample[] = [];
    const readiness: { status: number; problems: string[] }[] = [];
    const serving: string[] = [];
    pg.stop();
    const outageStart = Date.now();
    while (Date.now() - outageStart < OUTAGE_MS) {
      samples.push(
        ...(await Promise.all([
          sample('list', () => h.get('/v2/instances/')),
          sample('get', () => h.get('/v2/instances/before/')),
          sample('create', () => h.post('/v2/instances/', h.redisBody('during'))),
          sample('acl add', () => h.post('/v2/instances/before/acls/', { cidr_mask: '192.0.2.9', description: 'during' })),
          sample('metrics', () => h.get('/v2/redis/before/maxClients/')),
        ])),
      );
      if (!h.running) throw new Error(`hangar exited during the outage; its log ends:\n${h.log.split('\n').slice(-15).join('\n')}`);
      readiness.push(await h.readyz());
      serving.push(await pingOutcome(portOf(before.public_connect_string), before.password));
      expect(h.running, 'hangar is still running').toBe(true);
      expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 2000));
    }

    // every request got a 503 saying why, none hung
    for (const s of samples) {
      expect(s.status, `${s.what}: ${JSON.stringify(s.body)}\n${errorsLogged()}`).toBe(503);
      expect(s.body, s.what).toEqual({ code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/store is unavailable/) });
    }
    const slowest = Math.max(...samples.map((s) => s.ms));
    console.info(`${samples.length} requests during the outage, slowest answered in ${slowest} ms`);
    expect(slowest).toBeLessThan(6000);
    for (const r of readiness) expect(r.status).toBe(503);
    expect(readiness.every((r) => r.problems.some((p) => /store/.test(p)))).toBe(true);
    // the engines and the edge do not need the store
    expect(new Set(serving)).toEqual(new Set(['PONG']));

    pg.start();
    const back = Date.now();
    await eventually('requests answered again', async () => (await h.get('/v2/instances/')).status === 200, 15_000);
    await eventually('ready again', async () => (await h.readyz()).status === 200, 15_000);
    console.info(`requests answered again ${Date.now() - back} ms after the store came back`);
    // the runtime lease was let go while the store was away (its renewal failed), and is taken again
    expect(h.log).toContain('"msg":"this replica no longer owns the runtime"');
    await eventually('the runtime owned again', () => h.log.split('"msg":"local runtime supervising"').length - 1 >= 2, 15_000);
    // passes run again: a new instance is built, an ACL change is applied
    const after = await h.createRedis('after');
    expect(after.state).toBe('ACTIVE');
    expect((await h.post('/v2/instances/after/acls/', { cidr_mask: '127.0.0.1', description: 'this machine' })).status).toBe(200);
    await eventually(
      'the ACL is enforced',
      async () => (await pingOutcome(portOf(after.public_connect_string), after.password)) === 'PONG',
      5000,
    );
    console.info(`reconciling again ${Date.now() - back} ms after the store came back`);
    await expectApiMatchesWhatRuns(h);
  }, 120_000);

  it("answers 503 within the pool's timeouts while the store hangs (no answer at all), then recovers", async () => {
    // A frozen server accepts connections and never answers: only hangar's own timeouts (5 s to
    // connect or wait for a connection, 5 s per query) keep a request from hanging.
    pg.freeze();
    let samples: Sample[];
    try {
      samples = await Promise.all([
        sample('list', () => h.get('/v2/instances/')),
        sample('create', () => h.post('/v2/instances/', h.redisBody('frozen'))),
        sample('readyz', async () => {
          const r = await h.readyz();
          return { status: r.status, body: r.problems };
        }),
      ]);
    } finally {
      pg.thaw();
    }
    for (const s of samples) {
      expect(s.status, `${s.what}: ${JSON.stringify(s.body)}\n${errorsLogged()}`).toBe(503);
      expect(s.ms, s.what).toBeLessThan(12_000);
    }
    console.info(`answers while the store hung: ${samples.map((s) => `${s.what} ${s.ms} ms`).join(', ')}`);
    await eventually('requests answered again', async () => (await h.get('/v2/instances/')).status === 200, 15_000);
    expect((await h.createRedis('thawed')).state).toBe('ACTIVE');
  }, 60_000);
});
