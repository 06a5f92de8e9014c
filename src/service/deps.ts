import type { Config } from '../config.js';
import type { Keyring } from '../lib/secrets.js';
import type { Service } from '../domain/catalog.js';
import type { AccessEnforcer, DeniedConnection, InstancePlace, InstanceSpec, RuntimeKind } from '../domain/units.js';
import type { EngineRegistry } from '../engines/registry.js';
import type { PortPool } from '../store/ports.js';
import type { Db } from '../store/database.js';
import { dieAtStep } from '../lib/fault-injection.js';
import type { RequestedBy } from '../domain/operations.js';
import type { OperationLog } from '../store/operation-log.js';

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

/** A limit on the memory some zones' instances may promise together. */
export interface CapacityLimit {
  /** What is limited, for people: `zone "US-Dallas"`, `this host (local zones US-Dallas, EU-London)`. */
  readonly label: string;
  /** The zones whose instances count against it. */
  readonly zones: readonly string[];
  readonly capacityMb: number;
}

/**
 * A zone as the use cases see it: what its engines can run there, the limits its placements
 * must fit, which ports are free, and where an instance's units are (for live reads).
 */
export interface ZoneView {
  readonly name: string;
  readonly runtime: RuntimeKind;
  readonly engines: EngineRegistry;
  /** Services the zone offers (available or not: the engines' offerings say). */
  readonly services: readonly Service[];
  /** Every limit a placement here must fit, the zone's own first; empty: unlimited. */
  readonly limits: readonly CapacityLimit[];
  /** Where the zone's instances get their ports. */
  readonly ports: PortPool;
  /** Where the units of an instance live, handed to its engine for live reads. */
  place(spec: InstanceSpec): InstancePlace;
  /** What enforces an instance's ACLs right now, each enforcer read from itself. */
  effectiveAccess(spec: InstanceSpec): Promise<AccessEnforcer[]>;
  /** The last connections the edge refused for an instance, newest first. */
  deniedConnections(spec: InstanceSpec, limit: number): Promise<DeniedConnection[]>;
}

/** The zones this hangar serves. */
export interface Zones {
  /** A zone by name; undefined when it is not configured. */
  get(name: string): ZoneView | undefined;
  /** Every zone, in the order configured. */
  list(): readonly ZoneView[];
}

/** Everything the use cases need, built once by the composition root. */
export interface ServiceDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly zones: Zones;
  readonly config: Config;
  readonly work: WorkQueue;
  /** Where every asynchronous action is recorded as an operation. */
  readonly operations: OperationLog;
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

/** Who started a change, and in which request: recorded with the operation it starts. */
export interface Origin {
  readonly requestedBy: RequestedBy | null;
  readonly requestId: string | null;
}

/** A change started by no request (tests, operator tools). */
export const NO_ORIGIN: Origin = { requestedBy: null, requestId: null };

/** The request step function of `deps`: its own, or one that obeys HANGAR_TEST_DIE_AT. */
export function requestStep(deps: ServiceDeps): (name: string) => void {
  return deps.step ?? dieAtStep(deps.config.dieAt);
}
