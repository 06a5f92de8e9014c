import type { Readable } from 'node:stream';
import type { Service } from '../domain/catalog.js';
import type { MongoRole } from '../domain/model.js';
import type { InstancePlace, InstanceSpec, StepContext, UnitDefinition, UnitDriver } from '../domain/units.js';

/** One entry of a Redis slow log. */
export interface SlowlogEntry {
  readonly id: number;
  /** When the command ran, epoch seconds. */
  readonly time: number;
  readonly durationMicros: number;
  /** The command and its arguments, as Redis keeps them (long ones cut, secrets redacted by Redis). */
  readonly args: readonly string[];
  /** The client's address and name, as Redis saw them. */
  readonly client: string;
  readonly clientName: string;
}

/** Live, read-only view of a Redis engine, for the inspection endpoints. */
export interface RedisInspector {
  /** `INFO <section>` of the primary as key/value pairs. */
  info(section: 'replication' | 'memory' | 'server' | 'clients' | 'stats' | 'keyspace'): Promise<Record<string, string>>;
  /** `CONFIG GET <name>` on the primary. */
  configGet(name: string): Promise<string>;
  /** `SLOWLOG GET <count>` of the primary, newest first. */
  slowlog(count: number): Promise<SlowlogEntry[]>;
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

/** A snapshot an engine took of an instance, to be read once. */
export interface Snapshot {
  /** Its bytes: what a restore is given back. */
  readonly stream: Readable;
  /** Memory (redis) or data the instance used when it was taken: a new instance restored from it needs a plan at least this large. */
  readonly usedBytes: number | null;
  /** The version the engine reports. */
  readonly engineVersion: string;
}

/**
 * How an engine backs up and restores its instances: its own tools and files, through the
 * runtime's UnitHost (which knows nothing about what the files are).
 */
export interface BackupDriver {
  /** What a snapshot is (`rdb`, `mongodb-archive`, `elasticsearch-snapshot`); also its file extension. */
  readonly format: string;
  /** Why backups of this engine cannot be taken or restored here (a tool missing), or undefined when they can. */
  unavailableReason(): string | undefined;
  /** Takes a consistent snapshot of the instance without stopping it. */
  snapshot(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<Snapshot>;
  /**
   * Replaces the instance's data with a snapshot. `source` is checked as it is read and fails at
   * its end when it is not the snapshot recorded: the engine must not touch the instance's data
   * before it has read `source` to its end without error. Resolves once the engines serve the
   * restored data (replicas in sync); the data survives a later restart of the engines.
   */
  restore(spec: InstanceSpec, place: InstancePlace, source: Readable, ctx: StepContext): Promise<void>;
}

/** What an engine can run, beyond its programs being found. */
export interface EngineSupport {
  /** Why it cannot run instances although its programs exist (a version it cannot drive, running as root). */
  readonly unavailableReason?: string;
  /** The `storage_engine` values it can honour (MongoDB); absent means the field does not apply. */
  readonly storageEngines?: readonly string[];
  /** The versions it serves (`X.Y.Z` and `X.Y`), where they are not its first program's (installs of the engine cache). */
  readonly versions?: readonly string[];
  /** What else to know of it here, in words for people (the Offering's notes). */
  readonly notes?: readonly string[];
}

/**
 * A product (Redis, ...): which units make an instance, their configuration, how to tell they
 * serve, and how to administer them. An engine knows its product and nothing about how units
 * are spawned, supervised or addressed: the runtime hands it an InstancePlace for that.
 */
export interface Engine extends UnitDriver {
  readonly service: Service;
  /** The units of an instance placed at `instanceDir`, in start order. */
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[];
  /** What it can run with the programs it was given; absent means anything its service allows. */
  support?(): EngineSupport;
  /** Redis inspection on the instance itself (redis engines only). */
  redis?(spec: InstanceSpec, place: InstancePlace): RedisInspector;
  /** MongoDB users on the instance itself (mongodb engines only). */
  mongodbUsers?(spec: InstanceSpec, place: InstancePlace): MongoUserAdmin;
  /** Backups and restores of its instances; absent: this engine cannot back up. */
  readonly backups?: BackupDriver;
  /** Drops what the engine keeps for an instance (admin connections). */
  forget(instanceId: string): void;
  /** Closes idle administrative connections. */
  closeIdle(idleMs: number): void;
  /** Closes every administrative connection. */
  close(): Promise<void>;
}
