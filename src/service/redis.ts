import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import { errors } from '../domain/errors.js';
import { type InstanceService, type Started, assertInstanceFits } from './instances.js';
import type { ZoneService } from './zones.js';
import { SERVING_STATES, type Instance } from '../domain/model.js';
import { toSpec } from '../engines/spec.js';
import type { RedisInspector, SlowlogEntry } from '../engines/engine.js';

export type { SlowlogEntry };
import { REDIS_SETTING_NAMES, checkRedisSetting } from '../engines/redis/redis-settings.js';
import { serverVersion } from '../engines/redis/redis-admin.js';

/** The settings tenants may change, with their values (engine knowledge, for the API's documentation). */
export { REDIS_SETTINGS } from '../engines/redis/redis-settings.js';
import { listRedisSettings, putRedisSettings } from '../store/redis-user-repository.js';
import { recordAndApply } from './redis-users.js';
import { recordResize } from './resize.js';

/** An engine that takes longer than this to answer an inspection is reported unreachable. */
const ENGINE_TIMEOUT_MS = 3000;

/** How long a settings change waits for the engines before answering (it is durable either way). */
const CONFIG_SETTLE_MS = 5000;

/** A replica as its primary sees it. */
export interface ReplicaStats {
  readonly state: string;
  /** Replication offset the replica acknowledged. */
  readonly offset: number;
  /** Bytes of the primary's stream it has not acknowledged yet. */
  readonly lagBytes: number;
  /** Seconds since its last acknowledgement. */
  readonly lagSeconds: number;
}

/** What `GET /v2/redis/<name>/stats/` shows, read live from the primary. */
export interface RedisStats {
  readonly opsPerSec: number;
  readonly totalCommands: number;
  readonly keyspaceHits: number;
  readonly keyspaceMisses: number;
  /** Hits over hits and misses; null before any read. */
  readonly hitRatio: number | null;
  readonly evictedKeys: number;
  readonly expiredKeys: number;
  readonly keys: number;
  readonly connectedClients: number;
  readonly maxclients: number;
  readonly blockedClients: number;
  readonly usedMemory: number;
  readonly maxmemory: number;
  readonly fragmentationRatio: number;
  readonly role: string;
  readonly replicationOffset: number;
  readonly replicas: readonly ReplicaStats[];
  readonly uptimeSeconds: number;
  readonly version: string;
}

export interface SpaceUsage {
  readonly freeSpacePercentage: number;
  readonly usedMemoryHuman: string;
}

/** Redis inspection (read live from the engine) and resize. */
export class RedisService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
    private readonly zones: ZoneService,
  ) {
    this.step = requestStep(deps);
  }

  private async redisInstance(caller: Caller, name: string): Promise<Instance> {
    return assertInstanceFits(await this.instances.find(caller, name), name, 'redis');
  }

  private async live<T>(caller: Caller, name: string, read: (inst: Instance) => Promise<T>): Promise<T> {
    const inst = await this.redisInstance(caller, name);
    if (!SERVING_STATES.includes(inst.state)) throw errors.instanceNotReady(name, inst.state);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ENGINE_TIMEOUT_MS} ms`)), ENGINE_TIMEOUT_MS);
    });
    try {
      return await Promise.race([read(inst), timeout]);
    } catch (err) {
      throw errors.engineUnreachable(name, err instanceof Error ? err.message : String(err));
    } finally {
      clearTimeout(timer);
    }
  }

  /** The engine of a redis instance, read live where its units are. */
  private inspector(inst: Instance): RedisInspector {
    const zone = this.deps.zones.get(inst.zone);
    if (!zone) throw new Error(`zone ${inst.zone} is not configured on this hangar`);
    const engine = zone.engines.require(inst.engine);
    if (!engine.redis) throw new Error(`the ${inst.service} engine has no Redis inspection`);
    const spec = toSpec(inst);
    return engine.redis(spec, zone.place(spec));
  }

  connectedSlaves(caller: Caller, name: string): Promise<number> {
    return this.live(caller, name, async (inst) => {
      const info = await this.inspector(inst).info('replication');
      return integer(info.connected_slaves, 'connected_slaves');
    });
  }

  /** connected_clients of INFO clients: every connection the primary has (hangar's and the replica's too). */
  connectedClients(caller: Caller, name: string): Promise<number> {
    return this.live(caller, name, async (inst) => {
      const info = await this.inspector(inst).info('clients');
      return integer(info.connected_clients, 'connected_clients');
    });
  }

  spaceUsage(caller: Caller, name: string): Promise<SpaceUsage> {
    return this.live(caller, name, async (inst) => {
      const info = await this.inspector(inst).info('memory');
      const used = integer(info.used_memory, 'used_memory');
      const max = integer(info.maxmemory, 'maxmemory');
      const human = info.used_memory_human;
      if (human === undefined) throw new Error('INFO memory has no used_memory_human');
      const free = max > 0 ? Math.max(0, ((max - used) / max) * 100) : 100;
      return { freeSpacePercentage: Math.round(free * 100) / 100, usedMemoryHuman: human };
    });
  }

  maxMemoryPolicy(caller: Caller, name: string): Promise<string> {
    return this.live(caller, name, (inst) => this.inspector(inst).configGet('maxmemory-policy'));
  }

  maxClients(caller: Caller, name: string): Promise<string> {
    return this.live(caller, name, (inst) => this.inspector(inst).configGet('maxclients'));
  }

  /** Every setting of the allow-list, as the primary runs it now. */
  config(caller: Caller, name: string): Promise<Record<string, string>> {
    return this.live(caller, name, async (inst) => {
      const inspector = this.inspector(inst);
      const out: Record<string, string> = {};
      for (const setting of REDIS_SETTING_NAMES) out[setting] = await inspector.configGet(setting);
      return out;
    });
  }

  /**
   * Records settings from the allow-list (each checked: a 400 names the setting and its allowed
   * values), has the reconciler apply them live to the primary and the replica and write them
   * into their configuration files, and returns every setting hangar holds for the instance.
   */
  async setConfig(
    caller: Caller,
    name: string,
    values: Readonly<Record<string, string | number>>,
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<Record<string, string>>> {
    const checked: Record<string, string> = {};
    for (const [setting, raw] of Object.entries(values)) {
      const result = checkRedisSetting(setting, raw);
      if ('problem' in result) throw errors.invalidValue(setting, result.problem, result.allowed);
      checked[setting] = result.value;
    }
    if (Object.keys(checked).length === 0) throw errors.invalidBody(`send at least one setting: ${REDIS_SETTING_NAMES.join(', ')}`);
    const inst = await this.redisInstance(caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const now = this.deps.now();
    const change = { kind: 'config.update', caller, origin, detail: { service: 'redis', settings: checked } };
    const { operation } = await recordAndApply(
      this.deps,
      inst,
      change,
      (trx) => putRedisSettings(trx, inst.id, checked, now),
      CONFIG_SETTLE_MS,
    );
    return { result: await listRedisSettings(this.deps.db, inst.id), operation };
  }

  /** The primary's slow log, newest first. */
  slowlog(caller: Caller, name: string, count: number): Promise<SlowlogEntry[]> {
    return this.live(caller, name, (inst) => this.inspector(inst).slowlog(count));
  }

  /** Throughput, cache efficiency, evictions, clients, memory and replication, read live. */
  stats(caller: Caller, name: string): Promise<RedisStats> {
    return this.live(caller, name, async (inst) => {
      const r = this.inspector(inst);
      const [stats, clients, memory, replication, server, keyspace, maxclients] = [
        await r.info('stats'),
        await r.info('clients'),
        await r.info('memory'),
        await r.info('replication'),
        await r.info('server'),
        await r.info('keyspace'),
        await r.configGet('maxclients'),
      ];
      const hits = num(stats.keyspace_hits);
      const misses = num(stats.keyspace_misses);
      const offset = num(replication.master_repl_offset);
      const replicas = Object.entries(replication)
        .filter(([k]) => /^slave\d+$/.test(k))
        .map(([, v]) => Object.fromEntries(v.split(',').map((kv) => kv.split('=') as [string, string])))
        .map((s) => ({
          state: s.state ?? 'unknown',
          offset: num(s.offset),
          lagBytes: Math.max(0, offset - num(s.offset)),
          lagSeconds: num(s.lag),
        }));
      return {
        opsPerSec: num(stats.instantaneous_ops_per_sec),
        totalCommands: num(stats.total_commands_processed),
        keyspaceHits: hits,
        keyspaceMisses: misses,
        hitRatio: hits + misses > 0 ? Math.round((hits / (hits + misses)) * 10_000) / 10_000 : null,
        evictedKeys: num(stats.evicted_keys),
        expiredKeys: num(stats.expired_keys),
        keys: Object.values(keyspace).reduce((n, v) => n + num(/keys=(\d+)/.exec(v)?.[1]), 0),
        connectedClients: num(clients.connected_clients),
        maxclients: num(maxclients),
        blockedClients: num(clients.blocked_clients),
        usedMemory: num(memory.used_memory),
        maxmemory: num(memory.maxmemory),
        fragmentationRatio: num(memory.mem_fragmentation_ratio),
        role: replication.role ?? 'unknown',
        replicationOffset: offset,
        replicas,
        uptimeSeconds: num(server.uptime_in_seconds),
        version: serverVersion(server) ?? '',
      };
    });
  }

  /** Records the larger plan (and its operation); the reconciler applies it to the engines. */
  async resize(caller: Caller, name: string, newPlan: number, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    return recordResize(this.deps, this.instances, this.zones, caller, 'redis', name, newPlan, origin, this.step);
  }
}

/** A number of INFO, or 0 when Redis does not give it. */
function num(v: string | undefined): number {
  const n = Number(v);
  return v === undefined || !Number.isFinite(n) ? 0 : n;
}

function integer(v: string | undefined, field: string): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n)) throw new Error(`INFO has no ${field}`);
  return n;
}
