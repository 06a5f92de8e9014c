import type { Config } from '../config.js';
import type { Keyring } from '../lib/secrets.js';
import type { InstancePlace, InstanceSpec } from '../domain/units.js';
import type { EngineRegistry } from '../engines/registry.js';
import type { Db } from '../store/database.js';
import { dieAtStep } from '../lib/fault-injection.js';

/** Hands desired-state changes to the reconciler. */
export interface WorkQueue {
  /** Schedules a reconcile pass of the instance. */
  enqueue(instanceId: string): void;
  /**
   * Waits (at most `timeoutMs`) until a pass of the instance that started after this call has
   * ended; resolves at once when this replica does not run the reconciler.
   */
  settle(instanceId: string, timeoutMs: number): Promise<void>;
}

/**
 * Where instances run, as the use cases see it: what the engines can run there, which ports are
 * free, and where an instance's units are, for live reads (Redis inspection).
 */
export interface Placement {
  readonly engines: EngineRegistry;
  /** Whether a port may be handed out to a new instance (nothing listens on it). */
  portIsFree(port: number): Promise<boolean>;
  /** Where the units of an instance live, handed to its engine for live reads. */
  place(spec: InstanceSpec): InstancePlace;
}

/** Everything the use cases need, built once by the composition root. */
export interface ServiceDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly placement: Placement;
  readonly config: Config;
  readonly work: WorkQueue;
  readonly now: () => number;
  /**
   * A step boundary of a request, between durable effects and before the answer: test-only
   * fault injection (HANGAR_TEST_DIE_AT names the step at which the process kills itself).
   * Built from the reconciler's step context; when left out, from `config.dieAt`.
   */
  readonly step?: (name: string) => void;
}

/** Who is asking: the authenticated account. */
export interface Caller {
  readonly accountId: string;
  readonly login: string;
}

/** The request step function of `deps`: its own, or one that obeys HANGAR_TEST_DIE_AT. */
export function requestStep(deps: ServiceDeps): (name: string) => void {
  return deps.step ?? dieAtStep(deps.config.dieAt);
}
