import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { AccessRule, InstanceSpec, StepContext } from '../../src/domain/units.js';
import type { Engine } from '../../src/engines/engine.js';
import { localEngines, localPrograms } from '../../src/engines/index.js';
import { redisProduct } from '../../src/engines/redis/redis-product.js';
import { probeRedis } from '../../src/engines/redis/redis-probe.js';
import { detectPrograms } from '../../src/lib/binaries.js';
import { LocalRuntime, PROBE_SOURCE } from '../../src/runtimes/local/local-runtime.js';
import { findProcesses, unitMarker } from '../../src/runtimes/local/process-supervisor.js';
import { claimPortRange } from '../helpers/ports.js';

// The local runtime with the Redis engine, on real redis-server (and valkey-server) and HAProxy processes: the steps
// they take (the names fault-injection tests stop hangar at), idempotence, adoption and port
// moves, which the HTTP API cannot drive.

const dataDir = mkdtempSync(join(tmpdir(), 'hangar-runtime-'));
const config = loadConfig({}, { HANGAR_DATA_DIR: dataDir, HANGAR_LOG_LEVEL: 'silent' });
const log = pino({ level: 'silent' });
const path = process.env.PATH ?? '/usr/bin:/bin';
const runtimes: LocalRuntime[] = [];
const binaries = await detectPrograms(localPrograms(), config, path);
const engines = localEngines(config, binaries);

async function runtime(): Promise<LocalRuntime> {
  const r = new LocalRuntime({ config, log, binaries, searchPath: path, instancesDir: join(dataDir, 'instances') });
  runtimes.push(r);
  return r;
}

function recorder(): StepContext & { steps: string[] } {
  const steps: string[] = [];
  return { steps, step: (name) => void steps.push(name) };
}

/**
 * Each engine of the redis service, run by the same RedisEngine with its own server program:
 * every case runs on each. In CI a missing engine fails the run; elsewhere its cases are left out.
 */
const ENGINES = [
  { name: 'redis', id: '65a1b2c3d4e5f60718293a4b', install: 'apt-get install redis-server haproxy' },
  {
    name: 'valkey',
    id: '65a1b2c3d4e5f60718293a4c',
    install: 'apt-get install haproxy, and -t bookworm-backports valkey-server on Debian 12',
  },
] as const;

afterAll(async () => {
  for (const x of runtimes) await x.close();
  await engines.close();
  for (const p of findProcesses(unitMarker(dataDir), programs)) process.kill(p.pid, 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function available(engine: (typeof ENGINES)[number]): boolean {
  const offering = engines.offerings().find((o) => o.engine === engine.name)!;
  if (offering.available) return true;
  const message = `the local runtime tests on ${engine.name} need its server and haproxy (${engine.install}): ${offering.unavailableReason}`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/** Real paths of every engine's server and haproxy: what the runtime's processes run. */
const programs = new Set<string>(engines.offerings().flatMap((o) => (o.programs ?? []).map((e) => realpathSync(e.path))));
const enginesOf = (id: string) =>
  findProcesses(unitMarker(join(dataDir, 'instances', id)), programs)
    .map((p) => p.pid)
    .sort();

for (const engine of ENGINES)
  describe.runIf(available(engine))(`LocalRuntime with the Redis engine, on ${engine.name}`, () => {
    let redis: Engine;
    const inspect = (s: InstanceSpec) => redis.redis!(s, r.place(s));
    let r: LocalRuntime;
    let spec: InstanceSpec;
    const changed: string[] = [];
    const local: AccessRule[] = [{ cidr: '127.0.0.1', transport: false, kibana: false }];

    /** Ports claimed for this test file alone (test/helpers/ports.ts): a port it frees on purpose is taken by nobody else. */
    let claimed: { first: number; last: number } | undefined;

    /** Free ports of the claimed range. */
    async function freePorts(n: number): Promise<number[]> {
      claimed ??= await claimPortRange();
      const out: number[] = [];
      for (let p = claimed.first; out.length < n && p <= claimed.last; p++) if (await r.portIsFree(p)) out.push(p);
      if (out.length < n) throw new Error(`fewer than ${n} free ports left in ${claimed.first}-${claimed.last}`);
      return out;
    }

    const client = (s: InstanceSpec, localAddress: string) =>
      probeRedis({ host: '127.0.0.1', port: s.ports.public!, localAddress }, s.password!);

    beforeAll(async () => {
      redis = engines.require(engine.name);
      const offering = engines.offerings().find((o) => o.engine === engine.name)!;
      r = await runtime();
      await r.start({ instanceChanged: (id) => changed.push(id) });
      const [pub, svc, primary, replica] = await freePorts(4);
      const ports = { public: pub!, servicenet: svc!, 'engine.primary': primary!, 'engine.replica': replica! };
      spec = {
        id: engine.id,
        service: 'redis',
        engine: engine.name,
        routes: redisProduct.edgeRoutes('redis_ha_instance', ports),
        type: 'redis_ha_instance',
        version: offering.versions[0]!,
        plan: 500,
        encrypted: false,
        storageEngine: null,
        password: 'client-password-0123',
        adminSecret: 'admin-secret-0123',
        ports,
      };
    });

    afterAll(async () => {
      for (const x of runtimes) await x.close();
    });

    it('creates an instance step by step, access first', async () => {
      const ctx = recorder();
      const result = await r.ensureInstance(spec, [], redis, ctx);
      expect(result.fresh).toBe(true);
      expect(ctx.steps).toEqual(['ensure:access-applied', 'create:primary-started', 'create:replica-started', 'create:edge-listening']);
      expect(await r.listInstanceIds()).toEqual([spec.id]);
      expect(await r.checkInstance(spec, redis)).toEqual({ healthy: true });
      expect(r.health()).toEqual({ problems: [], degraded: [] });
      expect(await inspect(spec).configGet('maxmemory')).toBe(String(500 * 1024 * 1024));
      expect((await inspect(spec).info('replication')).connected_slaves).toBe('1');
    });

    it('does nothing when everything runs as asked', async () => {
      const ctx = recorder();
      expect(await r.ensureInstance(spec, [], redis, ctx)).toEqual({ fresh: false });
      expect(ctx.steps).toEqual([]);
      expect((await r.stats()).processesUp).toBe(2);
    });

    it('admits the ACL sources and the probe source only', async () => {
      await expect(client(spec, '127.0.0.1')).rejects.toThrow(/closed|reset/i);
      const ctx = recorder();
      await r.ensureInstance(spec, local, redis, ctx);
      expect(ctx.steps).toEqual(['ensure:access-applied']);
      await client(spec, '127.0.0.1');
      await client(spec, PROBE_SOURCE);
      await expect(client(spec, '127.0.0.2')).rejects.toThrow(/closed|reset/i);
      const counters = (await r.stats()).edge.find((e) => e.instanceId === spec.id);
      expect(counters?.admitted).toBeGreaterThan(0);
      expect(counters?.refused).toBeGreaterThan(0);
    });

    it('resizes live, primary then replica', async () => {
      spec = { ...spec, plan: 1000 };
      const ctx = recorder();
      await r.ensureInstance(spec, local, redis, ctx);
      expect(ctx.steps).toEqual(['resize:primary-set', 'resize:replica-set']);
      expect(await inspect(spec).configGet('maxmemory')).toBe(String(1000 * 1024 * 1024));
    });

    it('adopts what runs after a restart of hangar, without starting anything twice', async () => {
      const before = enginesOf(spec.id);
      expect(before).toHaveLength(2);
      await r.close();
      r = await runtime();
      await r.start({ instanceChanged: (id) => changed.push(id) });
      const ctx = recorder();
      expect(await r.ensureInstance(spec, local, redis, ctx)).toEqual({ fresh: false });
      expect(ctx.steps).toEqual([]);
      expect(enginesOf(spec.id)).toEqual(before);
    });

    it('moves an engine to a new port, the replica following, keeping the data', async () => {
      const [moved] = await freePorts(1);
      const ports = { ...spec.ports, 'engine.primary': moved! };
      spec = { ...spec, ports, routes: redisProduct.edgeRoutes('redis_ha_instance', ports) };
      const ctx = recorder();
      await r.ensureInstance(spec, local, redis, ctx);
      expect(ctx.steps).toEqual(['ensure:primary-restarted']);
      expect((await inspect(spec).info('replication')).connected_slaves).toBe('1');
      await client(spec, '127.0.0.1');
    });

    it('a cancelled pass stops waiting for an edge that does not answer', async () => {
      const edge = Number(readFileSync(join(dataDir, 'edge', 'process.pid'), 'utf8').trim());
      // the edge's whole process group paused: its sockets accept connections and answer nothing
      process.kill(-edge, 'SIGSTOP');
      try {
        const cancel = new AbortController();
        setTimeout(() => cancel.abort(), 200);
        const more = [...local, { cidr: '192.0.2.1', transport: false, kibana: false }];
        await expect(r.ensureInstance(spec, more, redis, { step: () => {}, signal: cancel.signal })).rejects.toThrow(/^cancelled while/);
      } finally {
        process.kill(-edge, 'SIGCONT');
      }
      expect(await r.ensureInstance(spec, local, redis, recorder())).toEqual({ fresh: false });
      await client(spec, '127.0.0.1');
    });

    it('removes an instance step by step, and again without harm', async () => {
      const ctx = recorder();
      await r.removeInstance(spec.id, ctx);
      expect(ctx.steps).toEqual(['delete:engines-stopped', 'delete:edge-removed', 'delete:data-removed']);
      expect(existsSync(join(dataDir, 'instances', spec.id))).toBe(false);
      expect(enginesOf(spec.id)).toEqual([]);
      expect(await r.listInstanceIds()).toEqual([]);
      await expect(client(spec, PROBE_SOURCE)).rejects.toThrow(/ECONNREFUSED/);
      const again = recorder();
      await r.removeInstance(spec.id, again);
      expect(again.steps).toEqual(['delete:engines-stopped', 'delete:edge-removed', 'delete:data-removed']);
      expect(r.health()).toEqual({ problems: [], degraded: [] });
    });
  });
