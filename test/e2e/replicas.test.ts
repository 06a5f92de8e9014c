import { afterEach, describe, expect, it } from 'vitest';
import { POSTGRES_URL, freshPostgres } from '../helpers/database.js';
import { HangarProcess, enginesAvailable, portOf } from './helpers/hangar-process.js';
import { eventually, pingOutcome } from './helpers/redis.js';
import { expectApiMatchesWhatRuns } from './helpers/what-runs.js';

/**
 * Several hangar replicas of one host on one PostgreSQL database and one data dir: they serve
 * the API together, one of them owns the host's engines and edge (the runtime lease), and when
 * it dies in the middle of creates another takes over within 10 s; every create converges, with
 * exactly one engine pair per instance and one edge.
 */

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];

describe.runIf(POSTGRES_URL !== undefined && enginesAvailable())('hangar replicas on one PostgreSQL', () => {
  const started: HangarProcess[] = [];
  let dropDb: (() => Promise<void>) | undefined;

  afterEach(async () => {
    // the first replica made the data dir: it goes last, with the engines
    for (const h of started.slice(1)) await h.destroy();
    await started[0]?.destroy();
    started.length = 0;
    await dropDb?.();
  });

  async function replicas(n: number, opts: { firstEnv?: Record<string, string>; leaseTtl?: number } = {}): Promise<HangarProcess[]> {
    const db = await freshPostgres();
    dropDb = () => db.drop();
    const first = await HangarProcess.start({
      databaseUrl: db.url,
      serveEnv: opts.firstEnv ?? {},
      ...(opts.leaseTtl ? { leaseTtl: opts.leaseTtl } : {}),
    });
    started.push(first);
    await first.waitSupervising();
    for (let i = 1; i < n; i++) started.push(await HangarProcess.replicaOf(first));
    return [...started];
  }

  /** The replica that owns the runtime now, among the living (it says so in its log). */
  async function owner(of: readonly HangarProcess[], ms = 10_000): Promise<HangarProcess> {
    let found: HangarProcess | undefined;
    await eventually(
      'a replica owns the runtime',
      () => {
        found = of.find((h) => h.running && h.supervising);
        return found !== undefined;
      },
      ms,
    );
    return found!;
  }

  /** Fires creates through `via`, all at once; resolves when the API has taken them all. */
  async function create(via: HangarProcess, names: readonly string[]): Promise<void> {
    const replies = await Promise.all(names.map((n) => via.post('/v2/instances/', via.redisBody(n, { acls: LOCAL }))));
    for (const r of replies) expect(r.status, JSON.stringify(r.body)).toBe(200);
  }

  /** Waits until one of `names` is being built, as seen through `via`. */
  async function midBuild(via: HangarProcess, names: readonly string[]): Promise<void> {
    await eventually(
      'a create is being built',
      async () => {
        const list = (await via.get('/v2/instances/')).body.data as any[];
        return list.some((r) => names.includes(r.name) && r.state === 'BUILDING');
      },
      10_000,
    );
  }

  /** Kills the owner and measures how long until another replica supervises the engines. */
  async function takeover(dead: HangarProcess, living: readonly HangarProcess[]): Promise<{ next: HangarProcess; ms: number }> {
    const t0 = Date.now();
    const next = await owner(
      living.filter((h) => h !== dead),
      10_000,
    );
    return { next, ms: Date.now() - t0 };
  }

  async function allActive(via: HangarProcess, names: readonly string[], ms = 30_000): Promise<void> {
    for (const n of names) {
      const rec = await via.waitFor(n, (r) => r?.state === 'ACTIVE', ms);
      await eventually(`${n} answers`, async () => (await pingOutcome(portOf(rec.public_connect_string), rec.password)) === 'PONG', 10_000);
    }
  }

  it('two replicas: the one without the engines serves the API, metrics included; the owner killed mid-create is taken over within 10 s', async () => {
    const [r1, r2] = await replicas(2);
    expect(r1!.supervising).toBe(true);
    expect(r2!.supervising).toBe(false);

    // the replica without the runtime serves every endpoint: creates, reads, redis metrics
    // (read from the engine over loopback), ACL changes (answered once carried out)
    const pre = await r2!.createRedis('pre');
    expect((await r2!.get('/v2/redis/pre/connectedSlaves/')).body).toEqual({ data: 1 });
    expect((await r2!.get('/v2/redis/pre/maxMemoryPolicy/')).body).toEqual({ data: 'noeviction' });
    expect((await r2!.post('/v2/instances/pre/acls/', LOCAL[0])).status).toBe(200);
    expect(await pingOutcome(portOf(pre.public_connect_string), pre.password)).toBe('PONG');

    const names = ['c0', 'c1', 'c2', 'c3'];
    await create(r2!, names);
    await midBuild(r2!, names);
    await r1!.kill();
    const { next, ms } = await takeover(r1!, [r2!]);
    console.info(`runtime taken over ${ms} ms after the owner was killed (2 replicas)`);
    expect(next).toBe(r2);
    expect(ms).toBeLessThan(10_000);
    await allActive(r2!, ['pre', ...names]);
    await expectApiMatchesWhatRuns(r2!);
  }, 120_000);

  it('three replicas with 30 s leases: two owners killed in turn in the middle of creates, each taken over at once (their process is gone); every create converges, one engine pair each', async () => {
    // The leases last 30 s: taking over within 10 s, and finishing the creates the dead owner
    // had claimed, shows that a lease of a dead replica of this host is not waited out. The
    // first owner dies at a step of its first build: in the middle of a create, for sure.
    const all = await replicas(3, { firstEnv: { HANGAR_TEST_DIE_AT: 'create:replica-started' }, leaseTtl: 30 });
    const [r1, r2, r3] = all as [HangarProcess, HangarProcess, HangarProcess];
    const first = ['a0', 'a1', 'a2', 'a3'];
    await create(r3, first);
    expect(await r1.waitExit(20_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const one = await takeover(r1, [r2, r3]);
    console.info(`runtime taken over ${one.ms} ms after the owner died (3 replicas, first)`);
    expect(one.ms).toBeLessThan(10_000);

    // the new owner is killed too, while it builds the next creates
    const survivor = one.next === r2 ? r3 : r2;
    const second = ['b0', 'b1', 'b2', 'b3'];
    await create(survivor, second);
    await midBuild(survivor, second);
    await one.next.kill();
    const two = await takeover(one.next, [survivor]);
    console.info(`runtime taken over ${two.ms} ms after the owner was killed (3 replicas, second)`);
    expect(two.next).toBe(survivor);
    expect(two.ms).toBeLessThan(10_000);

    await allActive(survivor, [...first, ...second], 15_000);
    await expectApiMatchesWhatRuns(survivor);
  }, 150_000);
});
