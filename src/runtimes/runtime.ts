import type { RuntimeKind } from '../config.js';
import type { InstanceType, Service } from '../service/catalog.js';
import type { MongoRole, PortMap } from '../service/model.js';

/** What a runtime needs to know to run one instance; derived from the store on every pass. */
export interface InstanceSpec {
  readonly id: string;
  readonly service: Service;
  readonly type: InstanceType;
  readonly version: string;
  /** The plan to run with (for redis, `maxmemory` in MB). */
  readonly plan: number;
  readonly encrypted: boolean;
  readonly storageEngine: string | null;
  /** The password clients use (redis). */
  readonly password: string | null;
  /** hangar's own administrative credential for the engine. */
  readonly adminSecret: string;
  readonly ports: PortMap;
}

/** One ACL as the edge sees it. */
export interface AccessRule {
  /** Normalised IPv4/IPv6 address or CIDR range. */
  readonly cidr: string;
  readonly transport: boolean;
  readonly kibana: boolean;
}

/** What a runtime can host, per service. */
export interface Offering {
  readonly available: boolean;
  /** Versions accepted in a create body. */
  readonly versions: readonly string[];
  /** Why it is unavailable: names the missing binary and the variable that points to it. */
  readonly unavailableReason?: string;
  /** What to install to make it available. */
  readonly installHint?: string;
  /** The engine binaries found, with their versions (for `hangar doctor`). */
  readonly engines?: readonly { readonly name: string; readonly path: string; readonly version: string }[];
  /** `storage_engine` values accepted in a create body (mongodb); absent: any the API allows. */
  readonly storageEngines?: readonly string[];
}

export type Offerings = Readonly<Record<Service, Offering>>;

/** Passed into long runtime operations so that tests can stop hangar at a named step. */
export interface StepContext {
  /**
   * Marks a step boundary. Throws when the pass is being cancelled (shutdown), and kills the
   * process when a fault-injection test named this step.
   */
  step(name: string): void;
  /**
   * Aborts when the pass is cancelled (shutdown, or this replica lost the work's lease): long
   * waits (an engine answering, readiness, the edge starting or reloading) end early then.
   */
  readonly signal?: AbortSignal;
}

/** Throws when `signal` has aborted: a long wait of a cancelled pass ends here. */
export function throwIfCancelled(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new Error(`cancelled while ${what}`);
}

/**
 * A port the instance needs is held by a process that is not one of the instance's: the
 * engine cannot start on it. For an engine port (`engine.*`) the reconciler moves the engine
 * to another port; a public port stays (clients know it) and the instance is DEGRADED.
 */
export class PortTakenError extends Error {
  override name = 'PortTakenError';
  constructor(
    /** The port's role in the instance's port map. */
    readonly role: string,
    readonly port: number,
    message = `port ${port} (${role}) is in use by another process`,
  ) {
    super(message);
  }
}

export interface EnsureResult {
  /** The engine was (re)created empty in this call, so state held inside it must be re-applied. */
  readonly fresh: boolean;
}

export interface Health {
  readonly healthy: boolean;
  /** Why not, in words for people (shown as the instance's state reason). */
  readonly reason?: string;
}

/** Health of the runtime as a whole, for /readyz. */
export interface RuntimeHealth {
  /** Problems of the runtime itself (the edge down, a binary missing): this host serves no instance well. */
  readonly problems: readonly string[];
  /** Problems of single instances (also shown as their DEGRADED state and reason). */
  readonly degraded: readonly string[];
}

/** Live, read-only view of a Redis engine, for the inspection endpoints. */
export interface RedisInspector {
  /** `INFO <section>` of the primary as key/value pairs. */
  info(section: 'replication' | 'memory' | 'server'): Promise<Record<string, string>>;
  /** `CONFIG GET <name>` on the primary. */
  configGet(name: string): Promise<string>;
}

/** MongoDB user administration on the instance itself. */
export interface MongoUserAdmin {
  /** Users of a database with their roles (`usersInfo`). */
  listUsers(database: string): Promise<{ name: string; roles: MongoRole[] }[]>;
  createUser(database: string, name: string, password: string, roles: readonly MongoRole[]): Promise<void>;
  updateUser(database: string, name: string, change: { password?: string; roles?: readonly MongoRole[] }): Promise<void>;
  /** Drops the user; no error when it does not exist. */
  dropUser(database: string, name: string): Promise<void>;
}

/** Counters of the runtime, for /metrics. */
export interface RuntimeStats {
  /** Engine processes running now. */
  readonly processesUp: number;
  /** Engine processes that should be running. */
  readonly processesExpected: number;
  /** Connections the edge admitted and refused since it started, per instance. */
  readonly edge: readonly { readonly instanceId: string; readonly admitted: number; readonly refused: number }[];
}

export interface RuntimeEvents {
  /** Something changed under an instance (an engine died, a listener vanished): reconcile it soon. */
  instanceChanged(id: string): void;
}

/**
 * Where engines run. A runtime knows how to run, supervise, expose and remove an instance's
 * engines; the reconciler decides when. Every method is idempotent: calling it again after a
 * crash at any point converges to the same result.
 */
export interface Runtime {
  readonly kind: RuntimeKind;
  /**
   * Starts supervising on the replica that owns this host: adopts engines and edge that run
   * already; starts nothing that the reconciler has not asked for.
   */
  start(events: RuntimeEvents): Promise<void>;
  /** Stops supervising. Engines and the edge keep serving. */
  close(): Promise<void>;
  /** Services and versions this runtime can host here. */
  offerings(): Offerings;
  /** Whether a port may be handed out to a new instance (nothing listens on it here). */
  portIsFree(port: number): Promise<boolean>;
  /**
   * Converges one instance: its engines run with `spec` (plan and credentials included), the
   * edge listens on its public ports, and admits exactly the sources in `rules`. Resolves once
   * a client can use it through the edge. Throws TerminalError when it never can.
   */
  ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<EnsureResult>;
  /** Admits exactly `rules` at the instance's edge listeners (and cuts connections no longer admitted). */
  ensureAccess(spec: InstanceSpec, rules: readonly AccessRule[]): Promise<void>;
  /** Stops the instance's engines, removes its edge listeners and its data. */
  removeInstance(id: string, ctx: StepContext): Promise<void>;
  /** Ids of every instance that has engines, data or listeners here. */
  listInstanceIds(): Promise<string[]>;
  /** Whether the instance's engines serve right now. */
  checkInstance(spec: InstanceSpec): Promise<Health>;
  redis(spec: InstanceSpec): RedisInspector;
  mongodbUsers(spec: InstanceSpec): MongoUserAdmin;
  /** Problems of the runtime and of single instances, for /readyz. */
  health(): RuntimeHealth;
  /** Process and edge counters, for /metrics. */
  stats(): Promise<RuntimeStats>;
}
