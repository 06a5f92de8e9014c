import type { Service } from '../domain/catalog.js';
import type { MongoRole } from '../domain/model.js';
import type { InstancePlace, InstanceSpec, UnitDefinition, UnitDriver } from '../domain/units.js';

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

/** What an engine can run, beyond its programs being found. */
export interface EngineSupport {
  /** Why it cannot run instances although its programs exist (a version it cannot drive, running as root). */
  readonly unavailableReason?: string;
  /** The `storage_engine` values it can honour (MongoDB); absent means the field does not apply. */
  readonly storageEngines?: readonly string[];
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
  /** Drops what the engine keeps for an instance (admin connections). */
  forget(instanceId: string): void;
  /** Closes idle administrative connections. */
  closeIdle(idleMs: number): void;
  /** Closes every administrative connection. */
  close(): Promise<void>;
}
