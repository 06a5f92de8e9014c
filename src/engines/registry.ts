import type { Service } from '../domain/catalog.js';
import { TerminalError, errors } from '../domain/errors.js';
import type { Offering, Offerings } from '../domain/units.js';
import type { Engine } from './engine.js';

/**
 * The engines of one kind of target, by product, with what they can run there. Built once by the
 * composition root; the reconciler asks it which engine drives an instance, the services ask it
 * for live reads (Redis inspection, MongoDB users).
 */
export interface EngineRegistry {
  /** Products and versions these engines can run (where one is unavailable, why), in the product registry's order. */
  offerings(): Offerings;
  /** The engine of a product; throws TerminalError naming the reason where it cannot run. */
  require(engine: string): Engine;
  /** Every engine, for housekeeping. */
  all(): readonly Engine[];
  /** Drops what every engine keeps for an instance (admin connections). */
  forget(instanceId: string): void;
  /** Closes administrative connections unused for `idleMs`. */
  closeIdle(idleMs: number): void;
  /** Closes every administrative connection. */
  close(): Promise<void>;
}

/** A registry over `engines` (by product name), offering what `offerings` says. */
export function registryOf(engines: Readonly<Record<string, Engine>>, offerings: Offerings): EngineRegistry {
  const list = Object.values(engines);
  return {
    offerings: () => offerings,
    require(name) {
      const offering = offerings.find((o) => o.engine === name);
      const engine = engines[name];
      if (!offering?.available || !engine) throw new TerminalError(offering?.unavailableReason ?? `${name} cannot run on this host`);
      return engine;
    },
    all: () => list,
    forget: (id) => {
      for (const e of list) e.forget(id);
    },
    closeIdle: (ms) => {
      for (const e of list) e.closeIdle(ms);
    },
    close: async () => {
      await Promise.all(list.map((e) => e.close()));
    },
  };
}

/** What a zone offers of one service: its engines in order, the one a create without `engine` gets, and why none can run. */
export interface ServiceOffering {
  readonly service: Service;
  readonly engines: readonly Offering[];
  /** The first engine that can run here; undefined when none can. */
  readonly default: Offering | undefined;
  /** Why no engine of the service can run here (each engine's reason). */
  readonly unavailableReason?: string;
}

export function serviceOffering(offerings: Offerings, service: Service): ServiceOffering {
  const engines = offerings.filter((o) => o.service === service);
  const first = engines.find((o) => o.available);
  if (first) return { service, engines, default: first };
  const reasons = engines.map((o) => o.unavailableReason ?? `${o.engine} cannot run here`);
  return { service, engines, default: undefined, unavailableReason: reasons.join('; ') || `${service} cannot run here` };
}

/**
 * The engine a create of `service` gets: the one it names (400 naming the service's engines when
 * it is not one of them, 422 saying why when it cannot run here), or the zone's default.
 */
export function chooseEngine(offerings: Offerings, service: Service, named: string | undefined): Offering {
  const o = serviceOffering(offerings, service);
  if (named === undefined) {
    if (!o.default) throw errors.serviceUnavailableHere(service, o.unavailableReason ?? `${service} cannot run here`);
    return o.default;
  }
  const chosen = o.engines.find((e) => e.engine === named);
  if (!chosen) {
    const names = o.engines.map((e) => e.engine);
    throw errors.invalidValue('engine', `"engine" of a ${service} instance ${JSON.stringify(named)} is not allowed`, names);
  }
  if (!chosen.available) throw errors.serviceUnavailableHere(service, chosen.unavailableReason ?? `${named} cannot run here`);
  return chosen;
}
