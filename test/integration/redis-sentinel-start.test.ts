import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_ADMIN_USER, renderRedisConfig, renderSentinelConfig } from '../../src/engines/redis/redis-config.js';
import { RedisAdmin } from '../../src/engines/redis/redis-admin.js';
import {
  REDIS_PORT,
  RedisClusterDriver,
  SENTINEL_MASTER,
  SENTINEL_PORT,
  redisNames,
  startEngineScript,
} from '../../src/engines/redis/redis-kubernetes.js';
import type { ClusterPlace } from '../../src/domain/cluster.js';
import type { InstanceSpec } from '../../src/domain/units.js';
import { enginesAvailable } from '../e2e/helpers/hangar-process.js';

/**
 * How a Redis engine of a Kubernetes instance starts (the script its container runs), on real
 * redis-server and real Redis Sentinels on this machine: each engine and sentinel on its own
 * loopback address with the ports the pods use, as the pods have their own addresses. The case
 * that matters: the primary's engine dies and starts again before Sentinel has seen it die (a pod
 * made again at once). It must not serve as a second primary beside the replica Sentinel
 * promotes (writes acknowledged there would be lost): the replica is promoted and the engine
 * follows it, and no moment shows two primaries. Sentinel is set as on the pods (three, quorum 2,
 * down-after 1 s).
 */
describe.runIf(enginesAvailable())('a Kubernetes Redis engine starting again (real redis-server and Sentinel)', () => {
  const secret = 'admin-secret-for-the-start-test';
  const password = 'client-password';
  const engines = ['127.0.0.2', '127.0.0.3'] as const;
  const sentinels = ['127.0.0.4', '127.0.0.5', '127.0.0.6'] as const;
  let dir = '';
  const conf = () => join(dir, 'conf');
  const running = new Map<string, ChildProcess>();
  const logs = new Map<string, string[]>();

  const cli = (host: string, port: number, ...args: string[]) =>
    spawnSync(
      'redis-cli',
      [
        '-h',
        host,
        '-p',
        String(port),
        ...(port === REDIS_PORT ? ['--user', REDIS_ADMIN_USER] : []),
        '--pass',
        secret,
        '--no-auth-warning',
        ...args,
      ],
      {
        encoding: 'utf8',
        timeout: 3000,
      },
    ).stdout ?? '';
  const roleOf = (i: number) => /role:(\w+)/.exec(cli(engines[i]!, REDIS_PORT, 'info', 'replication'))?.[1];
  const masterHostOf = (i: number) => /master_host:([\d.]+)/.exec(cli(engines[i]!, REDIS_PORT, 'info', 'replication'))?.[1];

  function run(name: string, command: string, args: string[], env: Record<string, string> = {}): ChildProcess {
    const child = spawn(command, args, { env: { ...process.env, HANGAR_ADMIN_SECRET: secret, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = logs.get(name) ?? [];
    logs.set(name, lines);
    for (const s of [child.stdout!, child.stderr!]) s.on('data', (b: Buffer) => lines.push(...b.toString().split('\n').filter(Boolean)));
    running.set(name, child);
    return child;
  }
  /** An engine's container: the start script with its pod's name, data and configuration. */
  const startEngine = (i: number) =>
    run(`engine-${i}`, 'sh', ['-c', startEngineScript({ data: join(dir, `data-${i}`), conf: conf() })], { HOSTNAME: `h-test-redis-${i}` });

  async function until(what: string, check: () => boolean, ms: number): Promise<number> {
    const start = Date.now();
    while (!check()) {
      if (Date.now() - start > ms)
        throw new Error(`${what}: not within ${ms} ms\n${[...logs].map(([k, v]) => `${k}:\n  ${v.slice(-12).join('\n  ')}`).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return Date.now() - start;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-sentinel-start-'));
    mkdirSync(conf());
    engines.forEach((address, i) => {
      mkdirSync(join(dir, `data-${i}`));
      writeFileSync(
        join(conf(), `redis-${i}.conf`),
        renderRedisConfig({
          instanceId: 'start-test',
          role: i === 0 ? 'primary' : 'replica',
          port: REDIS_PORT,
          dir: join(dir, `data-${i}`),
          password,
          adminSecret: secret,
          maxmemoryMb: 64,
          maxmemoryPolicy: 'noeviction',
          primaryPort: REDIS_PORT,
          network: { bind: address, announceIp: address, primaryHost: engines[0] },
        }),
      );
    });
    writeFileSync(join(conf(), 'sentinel-address'), sentinels[0]);
    startEngine(0);
    startEngine(1);
    await until('the replica in sync', () => cli(engines[1], REDIS_PORT, 'info', 'replication').includes('master_link_status:up'), 20_000);
    sentinels.forEach((address, i) => {
      const file = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        file,
        renderSentinelConfig({
          instanceId: 'start-test',
          masterName: SENTINEL_MASTER,
          primaryHost: engines[0],
          primaryPort: REDIS_PORT,
          port: SENTINEL_PORT,
          dir,
          adminSecret: secret,
          quorum: 2,
          downAfterMs: 1000,
          failoverTimeoutMs: 10_000,
        }),
      );
      appendFileSync(file, `bind ${address}\nsentinel announce-ip ${address}\n`);
      run(`sentinel-${i}`, 'redis-server', [file, '--sentinel']);
    });
    // every sentinel knows the replica and the other sentinels before the primary dies
    await until(
      'the sentinels ready',
      () =>
        sentinels.every((s) =>
          /num-slaves\n1\n[\s\S]*num-other-sentinels\n2\n/.test(cli(s, SENTINEL_PORT, 'sentinel', 'master', SENTINEL_MASTER)),
        ),
      30_000,
    );
  }, 60_000);

  afterAll(async () => {
    for (const child of running.values()) if (child.exitCode === null) child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Kills engine `i` and starts it again at once; watches both engines' roles every 100 ms until `done`. */
  /** Kills engine `i` (SIGKILL, as a lost container) and waits until it is gone. */
  async function killEngine(i: number): Promise<void> {
    const old = running.get(`engine-${i}`)!;
    const gone = new Promise((r) => old.once('exit', r));
    old.kill('SIGKILL');
    await gone;
  }

  async function restartAtOnce(i: number, done: () => Promise<unknown>): Promise<{ twoPrimaries: number; startedAt: number }> {
    await killEngine(i);
    const startedAt = Date.now();
    startEngine(i);
    let twoPrimaries = 0;
    const watch = setInterval(() => {
      if (roleOf(0) === 'master' && roleOf(1) === 'master') twoPrimaries++;
    }, 100);
    try {
      await done();
    } finally {
      clearInterval(watch);
    }
    return { twoPrimaries, startedAt };
  }

  async function writeKeys(primary: number, prefix: string): Promise<void> {
    for (let k = 0; k < 100; k++) cli(engines[primary]!, REDIS_PORT, 'set', `${prefix}:${k}`, String(k));
    await until('the writes replicated', () => cli(engines[1 - primary]!, REDIS_PORT, 'get', `${prefix}:99`).trim() === '99', 10_000);
  }

  it('the primary killed and started again at once: the engine waits, Sentinel promotes the replica, the engine follows it; never two primaries', async () => {
    expect([roleOf(0), roleOf(1)]).toEqual(['master', 'slave']);
    await writeKeys(0, 'a');
    let promotedAfter = 0;
    const { twoPrimaries } = await restartAtOnce(0, async () => {
      const t0 = Date.now();
      await until('the replica promoted', () => roleOf(1) === 'master', 20_000);
      promotedAfter = Date.now() - t0;
      await until(
        'the engine started again follows the promoted one',
        () => roleOf(0) === 'slave' && masterHostOf(0) === engines[1],
        20_000,
      );
      await until('in sync', () => cli(engines[0], REDIS_PORT, 'info', 'replication').includes('master_link_status:up'), 20_000);
    });
    expect(twoPrimaries, 'moments with two primaries').toBe(0);
    expect(promotedAfter, 'Sentinel promoted the replica by itself (down-after 1 s)').toBeLessThan(10_000);
    const said = logs.get('engine-0')!.join('\n');
    expect(said).toMatch(/waiting for Sentinel to promote it/);
    expect(said).not.toMatch(/SENTINEL FAILOVER/);
    for (const i of [0, 1]) expect(cli(engines[i]!, REDIS_PORT, 'get', 'a:99').trim()).toBe('99');
    await until(
      'the sentinels agree',
      () => sentinels.every((s) => cli(s, SENTINEL_PORT, 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER).startsWith(engines[1])),
      15_000,
    );
  }, 90_000);

  it('the new primary killed and started again while Sentinel cannot fail over by itself (two sentinels of three gone): the engine asks for it, then follows; never two primaries', async () => {
    await writeKeys(1, 'b');
    // one sentinel left: no quorum, so no failover of its own; it still takes SENTINEL FAILOVER
    for (const name of ['sentinel-1', 'sentinel-2']) running.get(name)!.kill('SIGKILL');
    const { twoPrimaries, startedAt } = await restartAtOnce(1, async () => {
      await until('the replica promoted', () => roleOf(0) === 'master', 30_000);
      await until(
        'the engine started again follows the promoted one',
        () => roleOf(1) === 'slave' && masterHostOf(1) === engines[0],
        20_000,
      );
      await until('in sync', () => cli(engines[1], REDIS_PORT, 'info', 'replication').includes('master_link_status:up'), 20_000);
    });
    expect(twoPrimaries, 'moments with two primaries').toBe(0);
    expect(Date.now() - startedAt, 'asked after 10 s of a broken link, promoted soon after').toBeLessThan(30_000);
    expect(logs.get('engine-1')!.join('\n')).toMatch(
      /Sentinel has not promoted 127\.0\.0\.2 after \d+ s: asking it to \(SENTINEL FAILOVER\)/,
    );
    for (const i of [0, 1]) expect(cli(engines[i]!, REDIS_PORT, 'get', 'b:99').trim()).toBe('99');
  }, 90_000);

  it('the replica killed and started again: it follows the primary Sentinel names, at once', async () => {
    // engine 0 is the primary again; engine 1 its replica
    await killEngine(1);
    startEngine(1);
    const took = await until(
      'the replica back in sync',
      () => cli(engines[1], REDIS_PORT, 'info', 'replication').includes('master_link_status:up'),
      20_000,
    );
    expect(masterHostOf(1)).toBe(engines[0]);
    expect(roleOf(0)).toBe('master');
    expect(took, 'no wait for Sentinel when it names another engine').toBeLessThan(10_000);
  }, 60_000);

  it("hangar's inspections find the primary that says so, when the sentinel asked still names an engine that is gone", async () => {
    // A sentinel that has not heard of the failover yet: it names an address where no engine runs.
    const stale = '127.0.0.7';
    const file = join(dir, 'sentinel-stale.conf');
    writeFileSync(
      file,
      renderSentinelConfig({
        instanceId: 'start-test',
        masterName: SENTINEL_MASTER,
        primaryHost: '127.0.0.9',
        primaryPort: REDIS_PORT,
        port: SENTINEL_PORT,
        dir,
        adminSecret: secret,
        quorum: 2,
        downAfterMs: 60_000,
        failoverTimeoutMs: 10_000,
      }),
    );
    appendFileSync(file, `bind ${stale}\nsentinel announce-ip ${stale}\n`);
    run('sentinel-stale', 'redis-server', [file, '--sentinel']);
    await until(
      'the stale sentinel answers',
      () => cli(stale, SENTINEL_PORT, 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER).startsWith('127.0.0.9'),
      10_000,
    );
    // The instance's Services as the cluster gives them (a stand-in for the Kubernetes API: the
    // driver reads only their addresses here); the sentinels' Service lands on the stale one.
    const n = redisNames('start-test');
    const addresses: Record<string, string> = { [n.member(0)]: engines[0], [n.member(1)]: engines[1], [n.sentinel]: stale };
    const place = { serviceAddress: async (name: string) => addresses[name]! } as unknown as ClusterPlace;
    const admin = new RedisAdmin();
    try {
      const driver = new RedisClusterDriver(admin, 'noeviction');
      const primary = engines.find((_, i) => roleOf(i) === 'master');
      expect(primary).toBeDefined();
      expect(await driver.primaryAddress({ id: 'start-test', adminSecret: secret } as InstanceSpec, place)).toBe(primary);
    } finally {
      await admin.close();
    }
  }, 30_000);
});
