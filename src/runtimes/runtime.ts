import type {
  AccessEnforcer,
  AccessRule,
  DeniedConnection,
  EnsureResult,
  Health,
  InstancePlace,
  InstanceSpec,
  RuntimeKind,
  StepContext,
  UnitDriver,
} from '../domain/units.js';

export type { AccessEnforcer, DeniedConnection };

/** Health of the runtime as a whole, for /readyz. */
export interface RuntimeHealth {
  /** Problems of the runtime itself (the edge down): this target serves no instance well. */
  readonly problems: readonly string[];
  /** Problems of single instances (also shown as their DEGRADED state and reason). */
  readonly degraded: readonly string[];
}

/** Counters of the runtime, for /metrics. */
export interface RuntimeStats {
  /** Units running now. */
  readonly processesUp: number;
  /** Units that should be running. */
  readonly processesExpected: number;
  /** Connections the edge admitted and refused since it started, per instance. */
  readonly edge: readonly { readonly instanceId: string; readonly admitted: number; readonly refused: number }[];
}

export interface RuntimeEvents {
  /** Something changed under an instance (a unit died, a listener vanished): reconcile it soon. */
  instanceChanged(id: string): void;
}

/**
 * Where instances run. A runtime knows how to run, supervise, address, expose and remove the
 * units of an instance, and nothing about the products inside them: the engine of each instance
 * is handed in (`driver`) and says what the units are and when they serve. The reconciler
 * decides when. Every method is idempotent: calling it again after a crash at any point
 * converges to the same result.
 */
export interface Runtime {
  readonly kind: RuntimeKind;
  /**
   * Starts supervising on the replica that owns this target: adopts units and edge that run
   * already; starts nothing that the reconciler has not asked for.
   */
  start(events: RuntimeEvents): Promise<void>;
  /** Stops supervising. Units and the edge keep serving. */
  close(): Promise<void>;
  /** Whether a port may be handed out to a new instance (nothing listens on it here). */
  portIsFree(port: number): Promise<boolean>;
  /** Where the units of an instance live and how its engine reaches them (also for live reads). */
  place(spec: InstanceSpec): InstancePlace;
  /**
   * Converges one instance: its units run as `driver` describes them with `spec` (plan and
   * credentials included), the edge listens on its public ports and admits exactly the sources in
   * `rules`. Resolves once a client can use it through the edge. Throws TerminalError when it
   * never can.
   */
  ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult>;
  /**
   * Admits exactly `rules` at the instance's edge listeners, durably (what a restart of the edge
   * reads too), and cuts connections no longer admitted; the units are not looked at. For a pass
   * whose change concerns access alone, on an instance whose units this process brought to the
   * same spec. Resolves undefined when the edge does not serve the instance right now (the pass
   * then converges the instance whole), else with whether anything changed. Optional: a runtime
   * without it has every pass converge the instance whole.
   */
  ensureAccess?(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<{ changed: boolean } | undefined>;
  /** Stops the instance's units, removes its edge listeners and its data. */
  removeInstance(id: string, ctx: StepContext): Promise<void>;
  /** Ids of every instance that has units, data or listeners here. */
  listInstanceIds(): Promise<string[]>;
  /** Whether the instance serves right now (its units, as `driver` judges them, and its edge). */
  checkInstance(spec: InstanceSpec, driver: UnitDriver): Promise<Health>;
  /** Problems of the runtime and of single instances, for /readyz. */
  health(): RuntimeHealth;
  /** Unit and edge counters, for /metrics. */
  stats(): Promise<RuntimeStats>;
  /** What enforces the instance's ACLs right now, each enforcer read from itself. */
  effectiveAccess(spec: InstanceSpec): Promise<AccessEnforcer[]>;
  /** The last connections the edge refused for the instance, newest first, at most `limit` (a bounded history in memory). */
  deniedConnections(spec: InstanceSpec, limit: number): Promise<DeniedConnection[]>;
}
