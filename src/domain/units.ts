import type { Readable } from 'node:stream';
import type { InstanceType, Service } from './catalog.js';
import type { AccessGroup, EdgeRoute } from './endpoints.js';
import type { ClusterDriver, ClusterPlace } from './cluster.js';
import type { PortMap } from './model.js';

/**
 * The vocabulary engines and runtimes share: what an instance asks to run, the units (processes,
 * containers) it runs as, and the results and failures of running them. Neither side imports the
 * other; both import this.
 */

/** How a zone's instances are run: processes on this host, in-process models, or a Kubernetes cluster. */
export type RuntimeKind = 'local' | 'emulated' | 'kubernetes';

/** What an instance asks to run; derived from the store on every pass. */
export interface InstanceSpec {
  readonly id: string;
  readonly service: Service;
  /** The product that runs it (`redis`, `valkey`, ...). */
  readonly engine: string;
  /** Its edge listeners and the engine port each forwards to, as its product lays them out. */
  readonly routes: readonly EdgeRoute[];
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
  /** Passwords clients may still use besides `password`: the one a rotation replaced, during its grace period. */
  readonly priorPasswords?: readonly string[];
  /** Application users of the engine (Redis ACL users); absent: none. */
  readonly users?: readonly EngineUser[];
  /** Settings the tenant chose from the engine's allow-list, by the engine's own names; absent: none. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** An application user of an engine, with what it may reach. */
export interface EngineUser {
  readonly name: string;
  /** Its passwords: the current one first, then one a rotation replaced (during the grace period). */
  readonly passwords: readonly string[];
  /** Key patterns it may use (`app:*`). */
  readonly keys: readonly string[];
  /** Pub/Sub channel patterns it may use. */
  readonly channels: readonly string[];
  /** Command rules in the engine's syntax (`+@read`, `-keys`), checked against the engine's allow-list. */
  readonly commands: readonly string[];
}

/** One ACL as the edge sees it. */
export interface AccessRule {
  /** Normalised IPv4/IPv6 address or CIDR range. */
  readonly cidr: string;
  readonly transport: boolean;
  readonly kibana: boolean;
}

/**
 * One place that enforces an instance's ACLs, as read from it right now (not from what hangar
 * asked of it): the local edge, each edge pod, a NetworkPolicy, the emulated edge.
 */
export interface AccessEnforcer {
  /** Which one, for people: `haproxy`, `pod/h-<id>-edge-...`, `networkpolicy/h-<id>-edge`, `emulated`. */
  readonly name: string;
  /** The sources it admits per access group, normalised and sorted. */
  readonly groups: Partial<Record<AccessGroup, readonly string[]>>;
  /** Why it could not be read (it does not run); `groups` is then empty. */
  readonly problem?: string;
}

/** A connection the edge refused (its source is in no ACL). */
export interface DeniedConnection {
  readonly source: string;
  /** Epoch milliseconds. */
  readonly at: number;
  /** The listener's role (`public`, `servicenet`, ...). */
  readonly listener: string;
}

/** A program found on a host, with its version. */
export interface FoundProgram {
  /** The program's name (`redis-server`, `haproxy`, ...). */
  readonly name: string;
  readonly path: string;
  /** `X.Y.Z` as the program reports it. */
  readonly version: string;
}

/** What a zone can host, per engine. */
export interface Offering {
  /** The product (`redis`, `valkey`, ...). */
  readonly engine: string;
  readonly service: Service;
  readonly available: boolean;
  /** Versions accepted in a create body. */
  readonly versions: readonly string[];
  /** Why it is unavailable: names the missing binary and the variable that points to it. */
  readonly unavailableReason?: string;
  /** What to install to make it available. */
  readonly installHint?: string;
  /** The programs found, with their versions (for `hangar doctor`). */
  readonly programs?: readonly FoundProgram[];
  /** `storage_engine` values accepted in a create body (mongodb); absent: any the API allows. */
  readonly storageEngines?: readonly string[];
  /** Versions it knows of but cannot serve here, each with why (not published, fails to start, not installed). */
  readonly unavailableVersions?: readonly UnavailableVersion[];
  /** What else to know of it here, in words for people (a listener answered by the edge: Kibana not installed). */
  readonly notes?: readonly string[];
}

/** A version an engine knows of and will not serve here, and why. */
export interface UnavailableVersion {
  readonly version: string;
  readonly reason: string;
}

/** What a zone can host, one offering per engine, in the order of the product registry. */
export type Offerings = readonly Offering[];

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
  /** Where clients reach the instance, when the runtime (not the advertised host) decides it. */
  readonly address?: string;
}

export interface Health {
  readonly healthy: boolean;
  /** Why not, in words for people (shown as the instance's state reason). */
  readonly reason?: string;
}

/**
 * One unit of an instance (a process, a container) as a runtime runs it. Everything in it is
 * derived from the instance id and the instance's place, so describing a unit twice gives the
 * same unit.
 */
export interface UnitDefinition {
  /** The instance the unit belongs to. */
  readonly instanceId: string;
  /** Its role within the instance (`primary`, `replica`, ...); also the name of its directory. */
  readonly role: string;
  /** Directory of the unit: configuration, data, pid file and log. */
  readonly dir: string;
  /** The program it runs. */
  readonly bin: string;
  readonly args: readonly string[];
  /**
   * Variables added to its environment: secrets a program takes from there rather than from its
   * command line, which every user of the machine can read (its environment only its own user and root).
   */
  readonly env?: Readonly<Record<string, string>>;
}

/** What an engine needs from the runtime that runs its units. */
export interface UnitHost {
  /**
   * Runs the unit unless it runs already. A unit that runs already is adopted rather than
   * started twice. `started` says it was started by this call.
   */
  ensureUnit(unit: UnitDefinition): Promise<{ readonly pid: number; readonly started: boolean }>;
  /** Stops the unit (and what it forked); its files stay. */
  stopUnit(unit: UnitDefinition): Promise<void>;
  /** Whether the unit runs right now. */
  isRunning(unit: UnitDefinition): boolean;
  /** The last lines of the unit's log, to explain why it stopped. */
  logTail(unit: UnitDefinition): string;
  /** Where the unit's log ends now (bytes): what a start about to be made writes comes after it. */
  logEnd(unit: UnitDefinition): number;
  /** The unit's log from byte `offset` on (at most 64 KiB of it), to explain why a start failed. */
  logFrom(unit: UnitDefinition, offset: number): string;
  /** Writes a file in the unit's directory (mode 0600) unless it holds `content`; says whether it wrote. */
  writeFile(unit: UnitDefinition, name: string, content: string): boolean;
  /** A file of the unit's directory, or undefined. */
  readFile(unit: UnitDefinition, name: string): string | undefined;
  /** Whether a file or directory exists in the unit's directory. */
  exists(unit: UnitDefinition, name: string): boolean;
  /** A file of the unit's directory, read as a stream (data files: snapshots to back up). Throws when it does not exist. */
  readStream(unit: UnitDefinition, name: string): Readable;
  /**
   * Writes `source` into a file of the unit's directory (mode 0600) atomically: under a
   * temporary name, renamed once complete, so that a failed or cut write (`source` erroring, a
   * full disk, a crash) never leaves a partial file under `name`. Resolves with the bytes written.
   */
  writeStream(unit: UnitDefinition, name: string, source: Readable): Promise<number>;
  /** Renames a file or directory of the unit's directory, replacing what `to` names. */
  rename(unit: UnitDefinition, from: string, to: string): void;
  /**
   * Makes a file or directory of the unit's directory, with what it holds, the unit's own, after
   * a program hangar ran (an archiver unpacking a restore) wrote it: the unit's processes may run
   * as another user than hangar (the engine user), and must be able to read and change it. What
   * the methods above write is the unit's already.
   */
  handOver(unit: UnitDefinition, name: string): void;
  /** Removes a file or directory (with what it holds); nothing when it does not exist. */
  remove(unit: UnitDefinition, name: string): void;
  /** Size in bytes of a file of the unit's directory, or undefined when there is none. */
  size(unit: UnitDefinition, name: string): number | undefined;
  /**
   * Runs a short-lived program (an archiver, a database tool) in the unit's directory as the
   * unit's own user: the files it reads and writes there are the unit's, and hangar's privileges
   * never act on paths the unit's user controls. `input` is fed to its stdin. Resolves with its
   * stdout once it exits 0; rejects with the end of its stderr otherwise.
   */
  runTool(unit: UnitDefinition, bin: string, args: readonly string[], input?: Readable | string): Promise<string>;
  /** The same, its stdout as a stream (what it dumps), which fails at its end unless the program exits 0. */
  toolOutput(unit: UnitDefinition, bin: string, args: readonly string[]): Readable;
}

/**
 * Where a runtime keeps one instance's units: the directory they live under and the host that
 * runs them, or, on a cluster, the place its objects and members are.
 */
export interface InstancePlace {
  readonly dir: string;
  readonly host: UnitHost;
  /**
   * The address clients reach the instance's edge listeners at (the host of its connect
   * strings), where the runtime knows it: what replica-set members announce.
   */
  readonly edgeHost?: string;
  readonly cluster?: ClusterPlace;
}

/** Where a client reaches an instance: an edge listener, and the source address to connect from. */
export interface ProbeTarget {
  readonly host: string;
  readonly port: number;
  readonly localAddress: string;
}

/**
 * What a runtime asks of the engine of an instance it runs: the engine knows its product (which
 * units, their configuration, how to tell they serve); the runtime knows how units run. No
 * product is named here.
 */
export interface UnitDriver {
  /**
   * Writes the configuration, runs (or adopts) every unit at `place` and applies the spec's plan
   * live. Resolves when each engine answers on its own port.
   */
  ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult>;
  /**
   * What keeps the instance from being usable right now, or undefined when a client reaching
   * `targets` (the edge) gets answers and the replicas are in sync. One check, no waiting.
   */
  readiness(spec: InstanceSpec, place: InstancePlace, targets: readonly ProbeTarget[]): Promise<string | undefined>;
  /** Whether the engines serve right now (no waiting). */
  check(spec: InstanceSpec, place: InstancePlace): Promise<Health>;
  /**
   * The edge listeners of the instance as this engine serves it here, where they differ from
   * `spec.routes` (the product's): an HTTP policy on a listener whose engine cannot refuse what
   * clients may not do, or an answer on one with nothing behind it. Same roles, ports and groups.
   */
  edgeRoutes?(spec: InstanceSpec): readonly EdgeRoute[];
  /** The engine's cluster form (Kubernetes), where it has one. */
  readonly cluster?: ClusterDriver;
}
