import type { EnsureResult, Health, InstanceSpec, MongoUserAdmin, RedisInspector, StepContext } from '../runtimes/runtime.js';

/** Name of the pid file in a unit's directory, written by the runtime when it spawns the unit. */
export const UNIT_PID_FILE = 'process.pid';
/** Name of the log file in a unit's directory: the process's stdout and stderr. */
export const UNIT_LOG_FILE = 'process.log';

/**
 * One process of an instance as a runtime runs it. Everything in it is derived from the
 * instance id and the data dir, so describing a unit twice gives the same unit.
 */
export interface UnitDefinition {
  /** The instance the unit belongs to. */
  readonly instanceId: string;
  /** Its role within the instance (`primary`, `replica`, ...); also the name of its directory. */
  readonly role: string;
  /** Directory of the unit: configuration, data, pid file and log. */
  readonly dir: string;
  readonly bin: string;
  readonly args: readonly string[];
}

/** What an engine needs from the runtime that runs its processes. */
export interface UnitHost {
  /**
   * Runs the unit unless it runs already. A process that runs already is adopted (by its pid
   * file and its command line) rather than started twice. `started` says a process was spawned.
   */
  ensureUnit(unit: UnitDefinition): Promise<{ readonly pid: number; readonly started: boolean }>;
  /** Stops the unit's process (and what it forked); its files stay. */
  stopUnit(unit: UnitDefinition): Promise<void>;
  /** Whether the unit's process is alive right now. */
  isRunning(unit: UnitDefinition): boolean;
  /** The last lines of the unit's log, to explain why it stopped. */
  logTail(unit: UnitDefinition): string;
  /** Writes a file in the unit's directory (mode 0600) unless it holds `content`; says whether it wrote. */
  writeFile(unit: UnitDefinition, name: string, content: string): boolean;
  /** A file of the unit's directory, or undefined. */
  readFile(unit: UnitDefinition, name: string): string | undefined;
  /** Whether a file or directory exists in the unit's directory. */
  exists(unit: UnitDefinition, name: string): boolean;
}

/** Where a client reaches an instance: an edge listener, and the source address to connect from. */
export interface ProbeTarget {
  readonly host: string;
  readonly port: number;
  readonly localAddress: string;
}

/** What an engine can run on this machine, beyond its binaries being found. */
export interface EngineSupport {
  /** Why it cannot run instances here although its binaries exist (a version it cannot drive, running as root). */
  readonly unavailableReason?: string;
  /** The `storage_engine` values it can honour (MongoDB); absent means the field does not apply. */
  readonly storageEngines?: readonly string[];
}

/**
 * A product (Redis, ...) as the local runtime runs it: which processes make an instance, their
 * configuration, how to tell they serve, and how to administer them. An engine knows its product
 * and nothing about how processes are spawned or supervised.
 */
export interface Engine {
  /** The processes of an instance, in start order. */
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[];
  /**
   * Writes the configuration, runs (or adopts) every unit and applies the spec's plan live.
   * Resolves when each engine answers on its own port.
   */
  ensureUnits(spec: InstanceSpec, instanceDir: string, host: UnitHost, ctx: StepContext): Promise<EnsureResult>;
  /**
   * What keeps the instance from being usable right now, or undefined when a client reaching
   * `targets` (the edge) gets answers and the replicas are in sync. One check, no waiting.
   */
  readiness(spec: InstanceSpec, instanceDir: string, targets: readonly ProbeTarget[]): Promise<string | undefined>;
  /** Whether the engines serve right now (no waiting). */
  check(spec: InstanceSpec, instanceDir: string, host: UnitHost): Promise<Health>;
  /** What it can run here with the binaries it was given; absent means anything its service allows. */
  support?(): EngineSupport;
  redis?(spec: InstanceSpec): RedisInspector;
  /** MongoDB users on the instance itself. */
  mongodbUsers?(spec: InstanceSpec): MongoUserAdmin;
  /** Drops what the engine keeps for an instance (admin connections). */
  forget(instanceId: string): void;
  /** Closes idle administrative connections. */
  closeIdle(idleMs: number): void;
  /** Closes every administrative connection. */
  close(): Promise<void>;
}
