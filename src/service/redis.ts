import { bumpInstance } from '../store/instance-repository.js';
import { PLANS } from '../domain/catalog.js';
import { requestStep, type Caller, type ServiceDeps } from './deps.js';
import { errors } from '../domain/errors.js';
import { type InstanceService, assertInstanceFits } from './instances.js';
import type { ZoneService } from './zones.js';
import { READY_STATES, SERVING_STATES, type Instance } from '../domain/model.js';
import { toSpec } from '../domain/spec.js';
import type { RedisInspector } from '../engines/engine.js';

/** An engine that takes longer than this to answer an inspection is reported unreachable. */
const ENGINE_TIMEOUT_MS = 3000;

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
    const engine = zone.engines.require(inst.service);
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

  /** Records the larger plan; the reconciler applies it to the engines. */
  async resize(caller: Caller, name: string, newPlan: number): Promise<string> {
    const inst = await this.redisInstance(caller, name);
    const plans = PLANS.redis;
    if (!plans.includes(newPlan)) throw errors.invalidValue('new_plan', `"new_plan" ${newPlan} is not a redis plan`, plans);
    if (newPlan <= inst.plan) {
      const larger = plans.filter((p) => p > inst.plan);
      if (larger.length === 0) throw errors.invalidValue('new_plan', `"new_plan": instance "${name}" is on the largest plan (${inst.plan}) already`);
      throw errors.invalidValue('new_plan', `"new_plan" must be larger than the current plan ${inst.plan}`, larger);
    }
    if (inst.deleting) throw errors.instanceDeleting(name);
    if (!READY_STATES.includes(inst.state)) throw errors.operationInProgress(name, inst.state);
    const now = this.deps.now();
    const zone = this.deps.zones.get(inst.zone);
    // The larger plan must fit the zone before it is recorded (a zone no longer configured has no limits to check).
    const changed = await this.deps.db.transaction().execute(async (trx) => {
      if (zone) await this.zones.assertFits(trx, zone, { service: inst.service, type: inst.type, plan: newPlan }, inst.id);
      return bumpInstance(trx, inst.id, { desiredPlan: newPlan, state: 'RESIZING', stateReason: null, transitionAt: now }, now, {
        states: READY_STATES,
        notDeleting: true,
      });
    });
    if (!changed) {
      // Another request got there first.
      const current = await this.instances.find(caller, name);
      if (!current) throw errors.notARedisInstance(name);
      if (current.deleting) throw errors.instanceDeleting(name);
      throw errors.operationInProgress(name, current.state);
    }
    this.step('resize:recorded');
    this.deps.work.enqueue(inst.id);
    return `Resizing of instance "${name}" from ${inst.plan} MB to ${newPlan} MB has started`;
  }
}

function integer(v: string | undefined, field: string): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n)) throw new Error(`INFO has no ${field}`);
  return n;
}
