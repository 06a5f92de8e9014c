import { TerminalError } from '../../domain/errors.js';
import { createAdminUserCommand, replicaSetConfig, shardAddress } from './mongodb-config.js';
import { MONGO_ERROR, mongoErrorCode, type MongoCommands, type MongoDocument } from './mongodb-commands.js';

/** Connections to the processes of an instance, by engine port (always on loopback). */
export interface MongoConnector {
  /**
   * Commands on one process. `admin`: authenticated as hangar's user; `anonymous`: no credentials,
   * for `isMaster` and for what the localhost exception allows before any user exists.
   */
  direct(port: number, as: 'admin' | 'anonymous'): MongoCommands;
}

/** What `isMaster` says about a process (it needs no authentication). */
export interface MemberState {
  readonly writablePrimary: boolean;
  readonly secondary: boolean;
  /** The replica set's primary as the process knows it (`host:port`). */
  readonly primary?: string;
  readonly setName?: string;
  /** `isdbgrid` on a mongos. */
  readonly msg?: string;
}

export async function memberState(c: MongoCommands): Promise<MemberState> {
  // isMaster rather than hello: hello only exists from 4.4.2 on, isMaster on every version hangar runs
  const r = await c.run('admin', { isMaster: 1 });
  return {
    writablePrimary: r.ismaster === true,
    secondary: r.secondary === true,
    ...(typeof r.primary === 'string' ? { primary: r.primary } : {}),
    ...(typeof r.setName === 'string' ? { setName: r.setName } : {}),
    ...(typeof r.msg === 'string' ? { msg: r.msg } : {}),
  };
}

/**
 * The commands of a process as hangar's admin when its user exists there, else anonymous (the
 * localhost exception: a process without any user lets a loopback client create the first one
 * and initiate its replica set).
 */
export async function session(connector: MongoConnector, port: number): Promise<{ commands: MongoCommands; admin: boolean }> {
  const admin = connector.direct(port, 'admin');
  try {
    await admin.run('admin', { ping: 1 });
    return { commands: admin, admin: true };
  } catch (err) {
    if (mongoErrorCode(err) !== MONGO_ERROR.AuthenticationFailed) throw err;
    return { commands: connector.direct(port, 'anonymous'), admin: false };
  }
}

export interface ReplicaSetSpec {
  readonly name: string;
  readonly configsvr: boolean;
  /** Engine ports of the members, in member order: where hangar administers them, on loopback. */
  readonly ports: readonly number[];
  /** The addresses the members are configured with and announce, in member order (`memberHosts`). */
  readonly hosts: readonly string[];
}

/**
 * Initiates the replica set on its first member unless it is initiated already. Resolves with
 * whether it initiated it.
 */
export async function ensureInitiated(connector: MongoConnector, rs: ReplicaSetSpec): Promise<boolean> {
  const { commands } = await session(connector, rs.ports[0]!);
  try {
    await commands.run('admin', { replSetInitiate: replicaSetConfig(rs.name, rs.hosts, rs.configsvr) });
    return true;
  } catch (err) {
    if (mongoErrorCode(err) === MONGO_ERROR.AlreadyInitialized) return false;
    throw err;
  }
}

/**
 * Makes the members' addresses in the replica set configuration those of the ports the instance
 * has now (an engine moved to another port is restarted there and must be found again). Forced,
 * since a moved member may have left the set without a primary. Needs hangar's user; resolves
 * with whether it changed the configuration.
 */
export async function ensureMembers(connector: MongoConnector, rs: ReplicaSetSpec): Promise<boolean> {
  const { commands, admin } = await session(connector, rs.ports[0]!);
  if (!admin) return false;
  const reply = await commands.run('admin', { replSetGetConfig: 1 });
  const config = reply.config as MongoDocument & { version: number; members: (MongoDocument & { _id: number; host: string })[] };
  const want = rs.hosts;
  const have = config.members.map((m) => m.host);
  if (want.length === have.length && want.every((h, i) => h === have[i])) return false;
  const members = want.map((host, i) => ({ ...(config.members[i] ?? {}), _id: config.members[i]?._id ?? i, host }));
  await commands.run('admin', { replSetReconfig: { ...config, version: config.version + 1, members }, force: true });
  return true;
}

/** The engine port of the replica set's primary, or undefined while there is none. */
export async function primaryPort(connector: MongoConnector, rs: ReplicaSetSpec): Promise<number | undefined> {
  for (const port of rs.ports) {
    let state: MemberState;
    try {
      state = await memberState(connector.direct(port, 'anonymous'));
    } catch {
      continue;
    }
    if (state.writablePrimary) return port;
    // the primary as the members name it: one of the configured addresses, or (a set not yet
    // reconfigured to them) a loopback engine port
    if (state.primary === undefined) continue;
    const i = rs.hosts.indexOf(state.primary);
    if (i >= 0) return rs.ports[i];
    const named = Number(state.primary.split(':').pop());
    if (rs.ports.includes(named)) return named;
  }
  return undefined;
}

/**
 * Creates hangar's user on a process (a standalone mongod, a primary, a mongos) through the
 * localhost exception, unless it exists. Resolves with whether it created it. A user that exists
 * with another password cannot be repaired by retrying: that fails the instance.
 */
export async function ensureAdminUser(connector: MongoConnector, port: number, adminSecret: string): Promise<boolean> {
  const { commands, admin } = await session(connector, port);
  if (admin) return false;
  try {
    await commands.run('admin', createAdminUserCommand(adminSecret));
    return true;
  } catch (err) {
    const code = mongoErrorCode(err);
    if (code === MONGO_ERROR.UserAlreadyExists || code === MONGO_ERROR.Unauthorized) {
      throw new TerminalError(`hangar's MongoDB user exists on port ${port} but does not accept hangar's credentials`, { cause: err });
    }
    throw err;
  }
}

/** Adds the shard replica set to the cluster through the mongos, unless it is there. Resolves with whether it added it. */
export async function ensureShard(mongos: MongoCommands, shardReplSet: string, shardPort: number): Promise<boolean> {
  const reply = await mongos.run('admin', { listShards: 1 });
  const shards = (reply.shards ?? []) as { _id: string; host: string }[];
  // The cluster follows a shard's membership itself: the name is what identifies it.
  if (shards.some((s) => s._id === shardReplSet)) return false;
  await mongos.run('admin', { addShard: shardAddress(shardReplSet, shardPort), name: shardReplSet });
  return true;
}

/**
 * What keeps the replica set from serving, or undefined when it has a primary and every member
 * is a primary or a secondary (`replSetGetStatus`, as hangar's admin).
 */
export async function replicaSetProblem(commands: MongoCommands, rs: ReplicaSetSpec): Promise<string | undefined> {
  const status = await commands.run('admin', { replSetGetStatus: 1 });
  const members = (status.members ?? []) as { name: string; stateStr: string }[];
  if (!members.some((m) => m.stateStr === 'PRIMARY')) return `replica set ${rs.name} has no primary`;
  const lagging = members.filter((m) => m.stateStr !== 'PRIMARY' && m.stateStr !== 'SECONDARY');
  if (lagging.length > 0) return `replica set ${rs.name}: ${lagging.map((m) => `${m.name} is ${m.stateStr}`).join(', ')}`;
  if (members.length !== rs.ports.length) return `replica set ${rs.name} has ${members.length} members, not ${rs.ports.length}`;
  return undefined;
}

/** What keeps the sharded cluster from serving, or undefined when the mongos lists the shard. */
export async function shardProblem(mongos: MongoCommands, shardReplSet: string): Promise<string | undefined> {
  const reply = await mongos.run('admin', { listShards: 1 });
  const shards = (reply.shards ?? []) as { _id: string }[];
  return shards.some((s) => s._id === shardReplSet) ? undefined : `the cluster has no shard ${shardReplSet} yet`;
}
