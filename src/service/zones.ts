import { INSTANCE_TYPES, PLANS, SERVICES, ZONES, type InstanceType, type Service } from '../domain/catalog.js';
import { errors } from '../domain/errors.js';
import type { PlanUnit } from '../engines/product.js';
import { firstProductOf, productNamed } from '../engines/products.js';
import { serviceOffering } from '../engines/registry.js';
import type { Db } from '../store/database.js';
import { countPlacements, lockPlacements, type PlacementGroup } from '../store/instance-repository.js';
import type { CapacityLimit, ZoneView, Zones } from './deps.js';
import type { UnavailableVersion } from '../domain/units.js';

/** What a zone offers and how full it is, for `GET /v2/zones/`. */
export interface ZoneSummary {
  readonly name: string;
  readonly runtime: string;
  readonly services: readonly {
    readonly service: Service;
    readonly available: boolean;
    readonly types: readonly string[];
    readonly plans: readonly number[];
    /** What a plan number counts. */
    readonly planUnit: PlanUnit;
    /** Versions of the engine a create without `engine` gets. */
    readonly versions: readonly string[];
    readonly reason: string | null;
    /** The engine a create without `engine` gets; null: none can run here. */
    readonly defaultEngine: string | null;
    readonly engines: readonly EngineSummary[];
  }[];
  /** The memory the zone's instances may promise (the tightest of its limits); null: unlimited. */
  readonly capacityMb: number | null;
  /** What its instances promise now. */
  readonly allocatedMb: number;
  /** What a new placement may still promise; null: unlimited. */
  readonly freeMb: number | null;
}

/** One engine of a service in a zone. */
export interface EngineSummary {
  readonly engine: string;
  readonly available: boolean;
  /** The instance types it runs (FerretDB: mongodb_singledb only). */
  readonly types: readonly string[];
  readonly versions: readonly string[];
  readonly reason: string | null;
  /** Versions it knows of and will not serve here, with why. */
  readonly unavailableVersions: readonly UnavailableVersion[];
  /** What else to know of it here. */
  readonly notes: readonly string[];
}

/** What a placement asks of a zone. */
export interface Need {
  /** The product that will run it. */
  readonly engine: string;
  readonly type: InstanceType;
  readonly plan: number;
}

/** Memory an instance promises: at its asked plan, which a resize makes the larger one. */
const promiseOf = (p: PlacementGroup): number => productNamed(p.engine).promisedMemoryMb(p.type, Math.max(p.plan, p.desiredPlan));

/**
 * Zones as placement targets: which zone serves a create, and whether a plan fits there before
 * anything is recorded. Every zone's instances promise memory (each product says how much); a zone
 * may promise at most its capacity, and the local zones of one host together at most the host's.
 */
export class ZoneService {
  constructor(
    private readonly db: Db,
    private readonly zones: Zones,
  ) {}

  /** The zone a create of `service` goes to; 400 naming the zones that offer it when `name` is not one of them. */
  zoneFor(service: Service, name: string): ZoneView {
    const zone = this.zones.get(name);
    if (zone?.services.includes(service)) return zone;
    // Listed in the spec's order of the service's zones, then as configured.
    const rank = (z: string) => (ZONES[service].indexOf(z) + ZONES[service].length + 1) % (ZONES[service].length + 1);
    const offering = this.zones
      .list()
      .filter((z) => z.services.includes(service))
      .map((z) => z.name)
      .sort((a, b) => rank(a) - rank(b));
    // The same words as any value not allowed, whether the zone does not exist or does not offer the service.
    const message = `"zone" of a ${service} instance ${JSON.stringify(name)} is not allowed`;
    throw errors.invalidValue('zone', message, offering);
  }

  /**
   * Throws a 409 when `need` does not fit one of the zone's limits, saying how much is free and
   * how much the plan needs. `instanceId`: the instance is already placed (a resize), and only
   * what it promises beyond its current promise counts. Call it in the transaction that records
   * the placement: the limits are checked under a lock, so two creates cannot both take the last MB.
   */
  async assertFits(trx: Db, zone: ZoneView, need: Need, instanceId?: string): Promise<void> {
    if (zone.limits.length === 0) return;
    await lockPlacements(trx);
    const groups = await countPlacements(trx, [...new Set(zone.limits.flatMap((l) => l.zones))], instanceId);
    const product = productNamed(need.engine);
    const wanted = product.promisedMemoryMb(need.type, need.plan);
    for (const limit of zone.limits) {
      const counted = new Set(limit.zones);
      const allocated = groups.filter((g) => counted.has(g.zone)).reduce((sum, g) => sum + g.count * promiseOf(g), 0);
      const free = limit.capacityMb - allocated;
      if (wanted > free) {
        throw errors.capacityExceeded(
          limit.label,
          Math.max(0, free),
          limit.capacityMb,
          `a ${need.type} on plan ${need.plan} needs ${wanted} MB (${product.memoryRule(need.type, need.plan)})`,
        );
      }
    }
  }

  /** Every zone with what it offers and how full it is. */
  async list(): Promise<ZoneSummary[]> {
    const zones = this.zones.list();
    const allocated = await this.allocation();
    const usedBy = (limit: CapacityLimit) => limit.zones.reduce((sum, z) => sum + (allocated.get(z) ?? 0), 0);
    return zones.map((zone) => {
      const offerings = zone.engines.offerings();
      const tightest = zone.limits
        .map((l) => ({ capacity: l.capacityMb, free: l.capacityMb - usedBy(l) }))
        .sort((a, b) => a.free - b.free)[0];
      return {
        name: zone.name,
        runtime: zone.runtime,
        services: SERVICES.filter((s) => zone.services.includes(s)).map((service) => {
          const o = serviceOffering(offerings, service);
          // the types a create can get here: those its available engines run (all of the service's when none runs)
          const runnable = new Set(o.engines.filter((e) => e.available).flatMap((e) => productNamed(e.engine).types));
          return {
            service,
            available: o.default !== undefined,
            types: runnable.size > 0 ? INSTANCE_TYPES[service].filter((t) => runnable.has(t)) : INSTANCE_TYPES[service],
            plans: PLANS[service],
            planUnit: firstProductOf(service).planUnit,
            versions: o.default?.versions ?? [],
            reason: o.default ? null : (o.unavailableReason ?? `${service} cannot run here`),
            defaultEngine: o.default?.engine ?? null,
            engines: o.engines.map((e) => ({
              engine: e.engine,
              available: e.available,
              types: productNamed(e.engine).types,
              versions: e.available ? e.versions : [],
              reason: e.available ? null : (e.unavailableReason ?? `${e.engine} cannot run here`),
              unavailableVersions: e.unavailableVersions ?? [],
              notes: e.notes ?? [],
            })),
          };
        }),
        capacityMb: zone.limits[0]?.capacityMb ?? null,
        allocatedMb: allocated.get(zone.name) ?? 0,
        freeMb: tightest ? Math.max(0, tightest.free) : null,
      };
    });
  }

  /** What the instances of each zone promise now, in MB. */
  async allocation(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const g of await countPlacements(this.db)) out.set(g.zone, (out.get(g.zone) ?? 0) + g.count * promiseOf(g));
    return out;
  }
}
