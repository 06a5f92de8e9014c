import { join } from 'node:path';
import { sleep } from '../../lib/time.js';
import {
  PortTakenError,
  throwIfCancelled,
  type EnsureResult,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDefinition,
  type UnitHost,
} from '../../domain/units.js';
import { TerminalError } from '../../domain/errors.js';
import type { Engine, RedisInspector, SlowlogEntry } from '../engine.js';
import { RedisAdmin, type RedisEndpoint } from './redis-admin.js';
import { RedisBackupDriver } from './redis-backup.js';
import { readMaxmemoryPolicy, renderRedisConfig, type RedisRole } from './redis-config.js';
import { applyAccessAndSettings } from './redis-live.js';
import { REDIS_PORT, RedisClusterDriver } from './redis-kubernetes.js';
import { probeRedis } from './redis-probe.js';
import { REDIS_FLAVOUR, type RedisFlavour } from './redis-flavour.js';
import { CONFIG_FILE, type RedisPair, pairFromFiles, pairWith, unitOfConfigFile } from './redis-pair.js';
import { RedisSwitch } from './redis-switch.js';

/** Directory of the append-only files; its absence means the engine never ran. */
const AOF_DIR = 'appendonlydir';
/** How long a pass waits for an engine to answer. */
const READY_TIMEOUT_MS = 10_000;
/** The directories of the two engines (which one plays the primary: see RedisPair). */
const DIRS: readonly RedisRole[] = ['primary', 'replica'];

export interface RedisEngineOptions {
  /** The server binary (redis-server, valkey-server). */
  readonly bin: string;
  /** Redis or Valkey: the programs' names (default Redis). */
  readonly flavour?: RedisFlavour;
  /** `maxmemory-policy` of new instances (existing ones keep theirs). */
  readonly maxmemoryPolicy: string;
}

const MB = 1024 * 1024;

/**
 * Why an engine exited, from the end of its log: its port held by another process (the
 * reconciler moves it), no space left for its data (final: retrying cannot help), or else the
 * log's last lines.
 */
function exited(server: string, role: RedisRole, ep: RedisEndpoint, tail: string): Error {
  const message = `${server} ${role} exited: ${tail}`;
  if (/Address already in use/i.test(tail)) return new PortTakenError(`engine.${role}`, ep.port, message);
  if (/No space left on device/i.test(tail)) return new TerminalError(message);
  return new Error(message);
}

/**
 * A redis_ha_instance: a primary and one replica, two redis-server processes on loopback ports,
 * each with its redis.conf, pid file, log and append-only file in its own directory.
 */
export class RedisEngine implements Engine {
  readonly service = 'redis' as const;
  private readonly admin = new RedisAdmin();
  /** The instance on Kubernetes: engines in a StatefulSet, Sentinel failing over between them. */
  readonly cluster: RedisClusterDriver;
  /** Snapshots on the replica, restores through the append-only directory. */
  readonly backups: RedisBackupDriver;

  private readonly flavour: RedisFlavour;

  constructor(private readonly opts: RedisEngineOptions) {
    this.flavour = opts.flavour ?? REDIS_FLAVOUR;
    this.cluster = new RedisClusterDriver(this.admin, opts.maxmemoryPolicy, this.flavour);
    this.backups = new RedisBackupDriver({
      server: this.flavour.server,
      admin: this.admin,
      pair: (s, place) => this.pairFromFiles(s, place),
      endpoint: (s, r) => this.endpoint(s, r),
    });
  }

  /** The two units, by directory (`primary`, then `replica`); which plays which role is the pair's business. */
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    return DIRS.map((role) => {
      const dir = join(instanceDir, role);
      return { instanceId: spec.id, role, dir, bin: this.opts.bin, args: [join(dir, CONFIG_FILE)] };
    });
  }

  private pairFromFiles(spec: InstanceSpec, place: InstancePlace): RedisPair {
    const units = this.units(spec, place.dir) as [UnitDefinition, UnitDefinition];
    return pairFromFiles(units, place.host, this.endpoint(spec, 'primary').port);
  }

  /**
   * Which unit plays the primary: the one that answers on the primary's port, else the one its
   * configuration file says. Hangar may have stopped during a switch of roles after the files
   * changed and before the port did: the engines are right, and the files are written again.
   */
  private async pair(spec: InstanceSpec, place: InstancePlace): Promise<RedisPair> {
    const units = this.units(spec, place.dir) as [UnitDefinition, UnitDefinition];
    const primaryEp = this.endpoint(spec, 'primary');
    try {
      const onPort = unitOfConfigFile(units, (await this.admin.info(primaryEp, 'server')).config_file);
      if (onPort) return pairWith(units, onPort);
    } catch {
      // nothing answers there (yet): the files say
    }
    return pairFromFiles(units, place.host, primaryEp.port);
  }

  /** Writes both configuration files (before a process starts, and on every pass: a resize lands in the file first). */
  private writeConfigs(spec: InstanceSpec, place: InstancePlace, pair: RedisPair, policy: string): void {
    const password = this.password(spec);
    const primaryEp = this.endpoint(spec, 'primary');
    for (const [unit, role] of [
      [pair.primary, 'primary'],
      [pair.replica, 'replica'],
    ] as const) {
      place.host.writeFile(
        unit,
        CONFIG_FILE,
        renderRedisConfig({
          instanceId: spec.id,
          role,
          port: this.endpoint(spec, role).port,
          dir: unit.dir,
          password,
          adminSecret: spec.adminSecret,
          maxmemoryMb: spec.plan,
          maxmemoryPolicy: policy,
          primaryPort: primaryEp.port,
          ...(spec.priorPasswords ? { priorPasswords: spec.priorPasswords } : {}),
          ...(spec.users ? { users: spec.users } : {}),
          ...(spec.settings ? { settings: spec.settings } : {}),
        }),
      );
    }
  }

  private endpoint(spec: InstanceSpec, role: RedisRole): RedisEndpoint {
    const port = spec.ports[`engine.${role}`];
    if (port === undefined) throw new TerminalError(`instance ${spec.id} has no port for engine.${role}`);
    return { key: `${spec.id}/${role}`, port, adminSecret: spec.adminSecret };
  }

  private password(spec: InstanceSpec): string {
    if (!spec.password) throw new TerminalError(`redis instance ${spec.id} has no password`);
    return spec.password;
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const { host } = place;
    const password = this.password(spec);
    let pair = await this.pair(spec, place);
    const fresh = !host.exists(pair.primary, AOF_DIR);
    // The policy is chosen when the instance is created and kept, whatever the default becomes,
    // until the tenant chooses another (a setting).
    const policy =
      spec.settings?.['maxmemory-policy'] ??
      readMaxmemoryPolicy(host.readFile(pair.primary, CONFIG_FILE) ?? '') ??
      this.opts.maxmemoryPolicy;
    const primaryEp = this.endpoint(spec, 'primary');
    const replicaEp = this.endpoint(spec, 'replica');
    const write = (p: RedisPair) => this.writeConfigs(spec, place, p, policy);
    write(pair);
    // The primary first: a replica that starts before its primary listens retries only a second later.
    for (const [unit, ep, role] of [
      [pair.primary, primaryEp, 'primary'],
      [pair.replica, replicaEp, 'replica'],
    ] as const) {
      const { started } = await host.ensureUnit(unit);
      const restarted = await this.waitServing(ep, unit, role, host, started, READY_TIMEOUT_MS, ctx.signal);
      if (started || restarted) ctx.step(`${fresh ? 'create' : 'ensure'}:${role}-${fresh ? 'started' : 'restarted'}`);
    }
    // The replica follows the primary's port (live, should the primary have moved).
    const following = await this.admin.info(replicaEp, 'replication');
    if (following.master_port !== String(primaryEp.port)) {
      await this.admin.replicaOf(replicaEp, primaryEp.port);
    }
    // A switch of engines (Redis to Valkey): engines that run another product's server move to
    // this one's, the replica first, then the roles switch (see RedisSwitch).
    pair = await new RedisSwitch({
      admin: this.admin,
      product: this.flavour.product,
      endpoint: (s, r) => this.endpoint(s, r),
      writeConfigs: write,
      waitServing: (ep, unit, role, started, ms, signal) => this.waitServing(ep, unit, role, host, started, ms, signal),
    }).ensure(spec, pair, host, ctx);
    // The plan, live: no restart, nothing lost.
    const bytes = String(spec.plan * MB);
    for (const ep of [primaryEp, replicaEp]) {
      if ((await this.admin.configGet(ep, 'maxmemory')) === bytes) continue;
      await this.admin.configSet(ep, 'maxmemory', bytes);
      ctx.step(`resize:${ep === primaryEp ? 'primary' : 'replica'}-set`);
    }
    // Passwords, users and settings, live on both (the files above have them for a restart).
    for (const ep of [primaryEp, replicaEp]) {
      if (await applyAccessAndSettings(this.admin, ep, spec, password))
        ctx.step(`access:${ep === primaryEp ? 'primary' : 'replica'}-applied`);
    }
    return { fresh };
  }

  /**
   * Waits until the engine answers PING on its port; fails early, with its log, when its process
   * exits. A running engine that was not just started and refuses connections on the port the
   * instance has (the port was moved elsewhere) is restarted with its configuration, which names
   * the new port. Resolves with whether it restarted the engine.
   */
  private async waitServing(
    ep: RedisEndpoint,
    unit: UnitDefinition,
    role: RedisRole,
    host: UnitHost,
    started: boolean,
    ms: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const until = Date.now() + ms;
    let fresh = started;
    let restarted = false;
    let last = '';
    for (;;) {
      throwIfCancelled(signal, `waiting for ${this.flavour.server} ${role}`);
      // An engine that exits at once (its port taken, its disk full) is reported without waiting
      // for a stranger on its port to answer.
      if (fresh && !host.isRunning(unit)) throw exited(this.flavour.server, role, ep, host.logTail(unit) || last);
      try {
        await this.admin.ping(ep);
        return restarted;
      } catch (err) {
        last = (err as Error).message;
        if (!fresh && (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' && host.isRunning(unit)) {
          await host.stopUnit(unit);
          await host.ensureUnit(unit);
          fresh = true;
          restarted = true;
          continue;
        }
      }
      if (!host.isRunning(unit)) throw exited(this.flavour.server, role, ep, host.logTail(unit) || last);
      if (Date.now() > until) throw new Error(`${this.flavour.server} ${role} does not answer on port ${ep.port}: ${last}`);
      // redis-server answers some 10 ms after it starts: a coarser poll would add most of that again
      await sleep(3, signal);
    }
  }

  async readiness(spec: InstanceSpec, _place: InstancePlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      const password = this.password(spec);
      for (const t of targets) await probeRedis(t, password);
      const link = (await this.admin.info(this.endpoint(spec, 'replica'), 'replication')).master_link_status;
      return link === 'up' ? undefined : `the replica is not in sync with the primary (master_link_status:${link ?? 'unknown'})`;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: InstancePlace): Promise<Health> {
    const pair = this.pairFromFiles(spec, place);
    for (const [unit, role] of [
      [pair.primary, 'primary'],
      [pair.replica, 'replica'],
    ] as const) {
      if (!place.host.isRunning(unit)) return { healthy: false, reason: `${this.flavour.server} ${role} is not running` };
    }
    try {
      await this.admin.ping(this.endpoint(spec, 'primary'));
      const link = (await this.admin.info(this.endpoint(spec, 'replica'), 'replication')).master_link_status;
      if (link !== 'up') return { healthy: false, reason: `the replica is not in sync (master_link_status:${link ?? 'unknown'})` };
      return { healthy: true };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message };
    }
  }

  redis(spec: InstanceSpec, place: InstancePlace): RedisInspector {
    const { cluster } = place;
    // On a cluster the primary is whichever engine Sentinel says it is now.
    const ep = cluster
      ? async (): Promise<RedisEndpoint> => ({
          key: `${spec.id}/primary`,
          host: await this.cluster.primaryAddress(spec, cluster),
          port: REDIS_PORT,
          adminSecret: spec.adminSecret,
        })
      : async (): Promise<RedisEndpoint> => this.endpoint(spec, 'primary');
    return {
      info: async (section) => this.admin.info(await ep(), section),
      configGet: async (name) => this.admin.configGet(await ep(), name),
      slowlog: async (count) => parseSlowlog(await this.admin.command(await ep(), ['SLOWLOG', 'GET', String(count)])),
    };
  }

  forget(instanceId: string): void {
    this.admin.forget(instanceId);
  }

  closeIdle(idleMs: number): void {
    this.admin.closeIdle(idleMs);
  }

  close(): Promise<void> {
    return this.admin.close();
  }
}

/** `SLOWLOG GET`'s answer: [id, time, duration, [args...], client, client name] per entry. */
export function parseSlowlog(reply: unknown): SlowlogEntry[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((e: unknown[]) => ({
    id: Number(e[0]),
    time: Number(e[1]),
    durationMicros: Number(e[2]),
    args: Array.isArray(e[3]) ? e[3].map(String) : [],
    client: String(e[4] ?? ''),
    clientName: String(e[5] ?? ''),
  }));
}
