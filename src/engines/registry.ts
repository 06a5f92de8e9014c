import type { Service } from '../domain/catalog.js';
import { TerminalError } from '../domain/errors.js';
import type { Offerings } from '../domain/units.js';
import type { Engine } from './engine.js';

/**
 * The engines of one kind of target, by service, with what they can run there. Built once by the
 * composition root; the reconciler asks it which engine drives an instance, the services ask it
 * for live reads (Redis inspection, MongoDB users).
 */
export interface EngineRegistry {
  /** Services and versions these engines can run (where a service is unavailable, why). */
  offerings(): Offerings;
  /** The engine of a service; throws TerminalError naming the reason where it cannot run. */
  require(service: Service): Engine;
  /** Every engine, for housekeeping. */
  all(): readonly Engine[];
  /** Drops what every engine keeps for an instance (admin connections). */
  forget(instanceId: string): void;
  /** Closes administrative connections unused for `idleMs`. */
  closeIdle(idleMs: number): void;
  /** Closes every administrative connection. */
  close(): Promise<void>;
}

/** A registry over `engines`, offering what `offerings` says. */
export function registryOf(engines: Partial<Record<Service, Engine>>, offerings: Offerings): EngineRegistry {
  const list = Object.values(engines).filter((e): e is Engine => e !== undefined);
  return {
    offerings: () => offerings,
    require(service) {
      const offering = offerings[service];
      const engine = engines[service];
      if (!offering.available || !engine) throw new TerminalError(offering.unavailableReason ?? `${service} cannot run on this host`);
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
