import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { InstanceType } from '../../domain/catalog.js';

/** The user hangar administers a MongoDB instance as (`root` on `admin`); clients never get it. */
export const MONGODB_ADMIN_USER = 'hangar';
/** The database hangar's user lives in (its authSource). */
export const MONGODB_ADMIN_DB = 'admin';
/** Name of the keyFile in each unit's directory (internal authentication between members). */
export const KEY_FILE = 'keyfile';
/** A file mongod (WiredTiger) creates in its dbpath on first start: its absence means the unit never ran. */
export const DATA_MARKER = 'WiredTiger';

/** A config server member holds cluster metadata only: the smallest cache WiredTiger accepts. */
const CONFIG_SERVER_CACHE_GB = 0.25;

export type MongoProcess = 'mongod' | 'mongos';
export type ClusterRole = 'configsvr' | 'shardsvr';

/** One process of a MongoDB instance, before ports and paths are known. */
export interface MongoUnitLayout {
  /** Its role within the instance, also the name of its directory: `mongod-0`, `config`, `shard`, `mongos`. */
  readonly role: string;
  /** The engine port role it listens on (a key of the instance's port map). */
  readonly portRole: string;
  readonly process: MongoProcess;
  /** The replica set it is a member of. */
  readonly replSet?: string;
  readonly clusterRole?: ClusterRole;
}

/** A replica set of an instance: its name and the units that are its members, in member order. */
export interface ReplicaSetLayout {
  readonly name: string;
  readonly configsvr: boolean;
  readonly members: readonly MongoUnitLayout[];
}

/**
 * The processes of an instance by type:
 * - `mongodb_singledb`: one standalone mongod;
 * - `mongodb_replica_set`, `mongodb_jumbo_replica_set`: a replica set of three mongod;
 * - `mongodb_sharded`: a config server replica set and one shard replica set (one member each,
 *   as the instance has one port for each) and a mongos, started last since it needs the config servers.
 */
export function mongoLayout(instanceId: string, type: InstanceType): MongoUnitLayout[] {
  switch (type) {
    case 'mongodb_singledb':
      return [{ role: 'mongod-0', portRole: 'engine.0', process: 'mongod' }];
    case 'mongodb_replica_set':
    case 'mongodb_jumbo_replica_set':
      return [0, 1, 2].map((i) => ({ role: `mongod-${i}`, portRole: `engine.${i}`, process: 'mongod', replSet: `rs-${instanceId}` }));
    case 'mongodb_sharded':
      return [
        { role: 'config', portRole: 'engine.config', process: 'mongod', replSet: `cfg-${instanceId}`, clusterRole: 'configsvr' },
        { role: 'shard', portRole: 'engine.shard', process: 'mongod', replSet: `shard-${instanceId}`, clusterRole: 'shardsvr' },
        { role: 'mongos', portRole: 'engine.mongos', process: 'mongos' },
      ];
    default:
      throw new Error(`${type} is not a mongodb instance type`);
  }
}

/** The replica sets of a layout, each with its members in order. */
export function replicaSets(layout: readonly MongoUnitLayout[]): ReplicaSetLayout[] {
  const sets = new Map<string, MongoUnitLayout[]>();
  for (const u of layout) if (u.replSet) sets.set(u.replSet, [...(sets.get(u.replSet) ?? []), u]);
  return [...sets].map(([name, members]) => ({ name, configsvr: members[0]!.clusterRole === 'configsvr', members }));
}

/**
 * WiredTiger cache of a mongod, in GB, from the plan. The plan is the instance's size in GB (as
 * ObjectRocket sold MongoDB by storage); the cache is 5 % of it, at least 0.25 GB (WiredTiger's
 * minimum), so that many instances can share a machine instead of each taking half its memory
 * (mongod's default). Config servers hold metadata only and get the minimum.
 */
export function wiredTigerCacheGb(plan: number, clusterRole?: ClusterRole): number {
  if (clusterRole === 'configsvr') return CONFIG_SERVER_CACHE_GB;
  return Math.max(CONFIG_SERVER_CACHE_GB, Math.round(plan * 5) / 100);
}

/** `--storageEngine` value for the API's `storage_engine` (null: WiredTiger, mongod's default since 3.2). */
export function storageEngineFlag(storageEngine: string | null): 'wiredTiger' | 'mmapv1' {
  if (storageEngine === null || storageEngine === 'wiredtiger') return 'wiredTiger';
  if (storageEngine === 'mmapv1') return 'mmapv1';
  throw new Error(`unknown storage engine ${storageEngine}`);
}

/**
 * The keyFile of an instance: members authenticate to each other with it. Derived from the
 * instance's admin secret, so that every pass writes the same content; hex is within the base64
 * alphabet mongod requires, and 128 characters are within its 6-1024 limit.
 */
export function keyFileContent(instanceId: string, adminSecret: string): string {
  return `${createHash('sha512').update(`hangar mongodb keyfile\0${instanceId}\0${adminSecret}`).digest('hex')}\n`;
}

export interface MongodArgsInput {
  readonly port: number;
  /** The unit's directory: dbpath, keyFile (and the runtime's pid file and log). */
  readonly dir: string;
  readonly storageEngine: 'wiredTiger' | 'mmapv1';
  readonly cacheSizeGb: number;
  readonly replSet?: string;
  readonly clusterRole?: ClusterRole;
}

/**
 * The command line of a mongod. Everything is a flag (no config file): the command line is the
 * whole configuration and names the unit's directory, which is how the runtime recognises it.
 * Pure: the same input gives the same arguments.
 */
export function mongodArgs(c: MongodArgsInput): string[] {
  const args = [
    '--port',
    String(c.port),
    // Loopback only: clients come through the edge (HAProxy), which enforces the ACLs.
    '--bind_ip',
    '127.0.0.1',
    // No unix socket in /tmp: nothing uses it, and it would outlive a killed mongod.
    '--nounixsocket',
    '--dbpath',
    c.dir,
    // Internal authentication between members with the instance's keyFile; it also turns
    // authorization on. `--auth` says so explicitly for a standalone mongod.
    '--keyFile',
    join(c.dir, KEY_FILE),
    '--auth',
    // The first user (hangar's) is created through the localhost exception.
    '--setParameter',
    'enableLocalhostAuthBypass=true',
    '--storageEngine',
    c.storageEngine,
  ];
  if (c.storageEngine === 'wiredTiger') args.push('--wiredTigerCacheSizeGB', String(c.cacheSizeGb));
  if (c.replSet !== undefined) args.push('--replSet', c.replSet);
  if (c.clusterRole !== undefined) args.push(`--${c.clusterRole}`);
  return args;
}

export interface MongosArgsInput {
  readonly port: number;
  readonly dir: string;
  /** The config server replica set and the port of its member. */
  readonly configReplSet: string;
  readonly configPort: number;
}

/** The command line of a mongos (which has no data: its directory holds its keyFile, pid file and log). */
export function mongosArgs(c: MongosArgsInput): string[] {
  return [
    '--port',
    String(c.port),
    '--bind_ip',
    '127.0.0.1',
    '--nounixsocket',
    '--configdb',
    `${c.configReplSet}/127.0.0.1:${c.configPort}`,
    '--keyFile',
    join(c.dir, KEY_FILE),
    '--setParameter',
    'enableLocalhostAuthBypass=true',
  ];
}

/** A process's address on loopback, by its engine port: where hangar administers it. */
export const memberHost = (port: number): string => `127.0.0.1:${port}`;

/**
 * The addresses the members of an instance's replica set are configured with, in member order.
 * A member announces the address it is configured with (`hello` / `isMaster` hosts, `primary`),
 * and a driver given the whole `connect_string` connects to what the members announce: so the
 * members of `mongodb_replica_set` and `mongodb_jumbo_replica_set` are configured with the edge's
 * listeners (`<edge host>:<public.i>`), and clients never bypass the edge and its ACLs. They
 * reach each other there too: mongod recognises its own entry by connecting to it (`_isSelf`),
 * and the edge admits the host's own address on these listeners (`EdgeRoute.peers`). The replica
 * sets of `mongodb_sharded` stay on loopback: clients talk to the mongos, and the sets behind it
 * are its business. Without an edge host (a runtime that does not say it), loopback.
 */
export function memberHosts(
  type: InstanceType,
  enginePorts: readonly number[],
  publicPorts: readonly (number | undefined)[],
  edgeHost?: string,
): string[] {
  const viaEdge = (type === 'mongodb_replica_set' || type === 'mongodb_jumbo_replica_set') && edgeHost !== undefined;
  return enginePorts.map((port, i) => {
    const listener = publicPorts[i];
    return viaEdge && listener !== undefined ? `${edgeHost}:${listener}` : memberHost(port);
  });
}

/**
 * The document `replSetInitiate` takes (and, with moved ports, what `ensureMembers` reconfigures
 * to): each member named by the address it is to announce (`memberHosts`).
 */
export function replicaSetConfig(name: string, hosts: readonly string[], configsvr: boolean): Record<string, unknown> {
  return {
    _id: name,
    ...(configsvr ? { configsvr: true } : {}),
    members: hosts.map((host, i) => ({ _id: i, host })),
  };
}

/** The command creating hangar's user: `root`, so that it can administer users, replication and sharding. */
export function createAdminUserCommand(adminSecret: string): Record<string, unknown> {
  return { createUser: MONGODB_ADMIN_USER, pwd: adminSecret, roles: [{ role: 'root', db: MONGODB_ADMIN_DB }] };
}

/** The shard as `addShard` and `listShards` name it: `<replica set>/<member>`. */
export const shardAddress = (replSet: string, port: number): string => `${replSet}/${memberHost(port)}`;
