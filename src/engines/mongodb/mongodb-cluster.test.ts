import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../domain/errors.js';
import {
  ensureAdminUser,
  ensureInitiated,
  ensureMembers,
  ensureShard,
  primaryPort,
  replicaSetProblem,
  session,
  shardProblem,
  type MongoConnector,
  type ReplicaSetSpec,
} from './mongodb-cluster.js';
import { MONGO_ERROR, type MongoCommands, type MongoDocument } from './mongodb-commands.js';

class FakeServerError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface FakeProcess {
  readonly port: number;
  readonly mongos: boolean;
  /** Replica set this member belongs to, once initiated. */
  set?: FakeSet;
  /** Users of its admin database (for a mongos: the cluster's, kept by the config servers). */
  adminUsers: Map<string, string>;
  shards: { _id: string; host: string }[];
}

interface FakeSet {
  name: string;
  version: number;
  hosts: string[];
  /** isMaster calls left before the first member wins its election. */
  electionIn: number;
  primary?: string;
}

/**
 * A fake of the MongoDB processes of one instance (no mongod can be installed on this machine):
 * it answers the commands hangar's cluster logic sends (isMaster, ping, replSetInitiate,
 * replSetGetConfig, replSetReconfig, replSetGetStatus, createUser, listShards, addShard) with the
 * replies and error codes of a server with authorization on and the localhost exception, and
 * records every command with the port and identity it was sent as.
 */
class FakeClusterCommands implements MongoConnector {
  readonly processes = new Map<number, FakeProcess>();
  /** The edge: an address members may be configured with (a listener) and the engine port it forwards to. */
  readonly edge = new Map<string, number>();
  readonly sent: { port: number; as: string; command: string }[] = [];

  constructor(
    ports: readonly number[],
    private readonly secret: string,
    mongosPort?: number,
  ) {
    for (const port of ports) this.processes.set(port, { port, mongos: false, adminUsers: new Map(), shards: [] });
    if (mongosPort !== undefined) this.processes.set(mongosPort, { port: mongosPort, mongos: true, adminUsers: new Map(), shards: [] });
  }

  /** Commands sent, as `as:command@port`. */
  log(): string[] {
    return this.sent.map((s) => `${s.as}:${s.command}@${s.port}`);
  }

  direct(port: number, as: 'admin' | 'anonymous'): MongoCommands {
    return { run: (database, command) => this.answer(port, as, database, command) };
  }

  /** The engine port an address leads to: through the edge, or straight to a loopback engine port. */
  private portOf(host: string): number {
    return this.edge.get(host) ?? Number(host.split(':')[1]);
  }

  /** How the set names the process on `port` (what it announces). */
  private nameOf(set: FakeSet | undefined, port: number): string {
    return set?.hosts.find((h) => this.portOf(h) === port) ?? `127.0.0.1:${port}`;
  }

  private membersOf(set: FakeSet): FakeProcess[] {
    return set.hosts.map((h) => this.processes.get(this.portOf(h))!).filter(Boolean);
  }

  private async answer(port: number, as: 'admin' | 'anonymous', _db: string, command: MongoDocument): Promise<MongoDocument> {
    const name = Object.keys(command)[0]!;
    this.sent.push({ port, as, command: name });
    const p = this.processes.get(port);
    if (!p) throw new Error(`connect ECONNREFUSED 127.0.0.1:${port}`);
    const hasUsers = p.adminUsers.size > 0;
    if (as === 'admin' && p.adminUsers.get('hangar') !== this.secret)
      throw new FakeServerError(MONGO_ERROR.AuthenticationFailed, 'Authentication failed.');
    if (name === 'isMaster') {
      const set = p.set;
      if (set && set.primary === undefined && --set.electionIn <= 0) set.primary = set.hosts[0];
      const me = this.nameOf(set, port);
      // a member started with --replSet is neither primary nor secondary until its set is initiated
      return {
        ok: 1,
        ismaster: set ? set.primary === me : p.mongos,
        secondary: set ? set.primary !== me : false,
        ...(set ? { setName: set.name } : {}),
        ...(set?.primary ? { primary: set.primary } : {}),
        ...(p.mongos ? { msg: 'isdbgrid' } : {}),
      };
    }
    // the localhost exception: before any user exists, an anonymous client may initiate and create the first user
    if (as === 'anonymous' && (hasUsers || !['replSetInitiate', 'createUser'].includes(name))) {
      throw new FakeServerError(MONGO_ERROR.Unauthorized, `command ${name} requires authentication`);
    }
    switch (name) {
      case 'ping':
        return { ok: 1 };
      case 'replSetInitiate': {
        if (p.set) throw new FakeServerError(MONGO_ERROR.AlreadyInitialized, 'already initialized');
        const cfg = command.replSetInitiate as { _id: string; members: { host: string }[] };
        const set: FakeSet = { name: cfg._id, version: 1, hosts: cfg.members.map((m) => m.host), electionIn: 2 };
        for (const member of this.membersOf(set)) member.set = set;
        return { ok: 1 };
      }
      case 'replSetGetConfig':
        if (!p.set) throw new FakeServerError(MONGO_ERROR.NotYetInitialized, 'no replset config has been received');
        return {
          ok: 1,
          config: { _id: p.set.name, version: p.set.version, members: p.set.hosts.map((host, i) => ({ _id: i, host, priority: 1 })) },
        };
      case 'replSetReconfig': {
        const cfg = command.replSetReconfig as { version: number; members: { host: string }[] };
        const set = p.set!;
        set.version = cfg.version;
        set.hosts = cfg.members.map((m) => m.host);
        for (const member of this.membersOf(set)) member.set = set;
        return { ok: 1 };
      }
      case 'replSetGetStatus': {
        const set = p.set!;
        return { ok: 1, members: set.hosts.map((h) => ({ name: h, stateStr: h === set.primary ? 'PRIMARY' : 'SECONDARY' })) };
      }
      case 'createUser': {
        if (p.set && p.set.primary !== this.nameOf(p.set, port)) throw new FakeServerError(10107, 'not primary');
        if (p.adminUsers.has(String(command.createUser))) throw new FakeServerError(MONGO_ERROR.UserAlreadyExists, 'already exists');
        const targets = p.set ? this.membersOf(p.set) : [p];
        for (const t of targets) t.adminUsers.set(String(command.createUser), String(command.pwd));
        return { ok: 1 };
      }
      case 'listShards':
        return { ok: 1, shards: p.shards };
      case 'addShard':
        p.shards.push({ _id: String(command.name), host: String(command.addShard) });
        return { ok: 1, shardAdded: command.name };
      default:
        throw new FakeServerError(59, `no such command: '${name}'`);
    }
  }
}

const RS: ReplicaSetSpec = {
  name: 'rs-x',
  configsvr: false,
  ports: [20001, 20002, 20003],
  hosts: ['127.0.0.1:20001', '127.0.0.1:20002', '127.0.0.1:20003'],
};
/** The same set as hangar configures it now: members named by the edge's listeners (10.0.0.5:3000i, to engine port 2000i). */
const EDGE_RS: ReplicaSetSpec = { ...RS, hosts: ['10.0.0.5:30001', '10.0.0.5:30002', '10.0.0.5:30003'] };
const behindEdge = (fake: FakeClusterCommands) => {
  for (const [i, h] of EDGE_RS.hosts.entries()) fake.edge.set(h, EDGE_RS.ports[i]!);
  return fake;
};
const SECRET = 'admin-secret';

async function elect(fake: FakeClusterCommands, rs: ReplicaSetSpec): Promise<number> {
  for (let i = 0; i < 10; i++) {
    const port = await primaryPort(fake, rs);
    if (port !== undefined) return port;
  }
  throw new Error('no primary');
}

describe('replica sets', () => {
  it('are initiated once, through the localhost exception, with every member', async () => {
    const fake = new FakeClusterCommands(RS.ports, SECRET);
    expect(await ensureInitiated(fake, RS)).toBe(true);
    expect(fake.log()).toEqual(['admin:ping@20001', 'anonymous:replSetInitiate@20001']);
    expect(fake.processes.get(20003)?.set?.hosts).toEqual(['127.0.0.1:20001', '127.0.0.1:20002', '127.0.0.1:20003']);
    expect(await ensureInitiated(fake, RS)).toBe(false);
  });

  it('have a primary only once one is elected', async () => {
    const fake = new FakeClusterCommands(RS.ports, SECRET);
    expect(await primaryPort(fake, RS)).toBeUndefined();
    await ensureInitiated(fake, RS);
    expect(await elect(fake, RS)).toBe(20001);
  });

  it("get hangar's user on the primary, once", async () => {
    const fake = new FakeClusterCommands(RS.ports, SECRET);
    await ensureInitiated(fake, RS);
    const primary = await elect(fake, RS);
    fake.sent.length = 0;
    expect(await ensureAdminUser(fake, primary, SECRET)).toBe(true);
    expect(fake.log()).toEqual(['admin:ping@20001', 'anonymous:createUser@20001']);
    expect(fake.processes.get(20002)?.adminUsers.get('hangar')).toBe(SECRET);
    expect(await ensureAdminUser(fake, primary, SECRET)).toBe(false);
    // with hangar's user in place, later passes work as hangar
    expect(await ensureInitiated(fake, RS)).toBe(false);
    expect(fake.log().at(-1)).toBe('admin:replSetInitiate@20001');
    expect((await session(fake, 20003)).admin).toBe(true);
  });

  it('fail the instance when a user exists that refuses hangar', async () => {
    const fake = new FakeClusterCommands([20001], SECRET);
    fake.processes.get(20001)!.adminUsers.set('hangar', 'another-secret');
    const failure = ensureAdminUser(fake, 20001, SECRET);
    await expect(failure).rejects.toBeInstanceOf(TerminalError);
    await expect(failure).rejects.toThrow(/does not accept hangar's credentials/);
  });

  it('are configured with, and announce, the edge listeners: a driver given connect_string never leaves the edge', async () => {
    const fake = behindEdge(new FakeClusterCommands(EDGE_RS.ports, SECRET));
    expect(await ensureInitiated(fake, EDGE_RS)).toBe(true);
    expect(fake.processes.get(20002)?.set?.hosts).toEqual(['10.0.0.5:30001', '10.0.0.5:30002', '10.0.0.5:30003']);
    // hangar still administers them on their loopback engine ports, finding the primary by the address it announces
    expect(await elect(fake, EDGE_RS)).toBe(20001);
    const hello = await fake.direct(20003, 'anonymous').run('admin', { isMaster: 1 });
    expect(hello).toMatchObject({ primary: '10.0.0.5:30001', secondary: true });
    expect(await ensureAdminUser(fake, 20001, SECRET)).toBe(true);
    expect(await ensureMembers(fake, EDGE_RS)).toBe(false);
    expect(await replicaSetProblem(fake.direct(20001, 'admin'), EDGE_RS)).toBeUndefined();
  });

  it('initiated on loopback addresses (by an older hangar) are reconfigured to the edge listeners', async () => {
    const fake = behindEdge(new FakeClusterCommands(RS.ports, SECRET));
    await ensureInitiated(fake, RS);
    await ensureAdminUser(fake, await elect(fake, RS), SECRET);
    expect(await primaryPort(fake, EDGE_RS)).toBe(20001);
    expect(await ensureMembers(fake, EDGE_RS)).toBe(true);
    expect(fake.processes.get(20001)?.set).toMatchObject({ version: 2, hosts: EDGE_RS.hosts });
    expect(await ensureMembers(fake, EDGE_RS)).toBe(false);
  });

  it('follow members moved to other ports', async () => {
    const fake = new FakeClusterCommands(RS.ports, SECRET);
    await ensureInitiated(fake, RS);
    await ensureAdminUser(fake, await elect(fake, RS), SECRET);
    expect(await ensureMembers(fake, RS)).toBe(false);
    const moved = { ...RS, ports: [20001, 20002, 20009], hosts: ['127.0.0.1:20001', '127.0.0.1:20002', '127.0.0.1:20009'] };
    const p = fake.processes.get(20003)!;
    fake.processes.set(20009, { ...p, port: 20009 });
    fake.processes.delete(20003);
    expect(await ensureMembers(fake, moved)).toBe(true);
    expect(fake.processes.get(20001)?.set).toMatchObject({ version: 2, hosts: ['127.0.0.1:20001', '127.0.0.1:20002', '127.0.0.1:20009'] });
    expect(await ensureMembers(fake, moved)).toBe(false);
  });

  it('serve once every member is a primary or a secondary', async () => {
    const fake = new FakeClusterCommands(RS.ports, SECRET);
    await ensureInitiated(fake, RS);
    const admin = () => fake.direct(20001, 'admin');
    await ensureAdminUser(fake, await elect(fake, RS), SECRET);
    expect(await replicaSetProblem(admin(), RS)).toBeUndefined();
    fake.processes.get(20001)!.set!.primary = undefined;
    expect(await replicaSetProblem(admin(), RS)).toMatch(/no primary/);
  });
});

describe('sharded clusters', () => {
  it('get their shard added through the mongos once', async () => {
    const fake = new FakeClusterCommands([20011, 20012], SECRET, 20013);
    expect(await ensureAdminUser(fake, 20013, SECRET)).toBe(true);
    const mongos = fake.direct(20013, 'admin');
    expect(await shardProblem(mongos, 'shard-x')).toMatch(/no shard shard-x/);
    expect(await ensureShard(mongos, 'shard-x', 20012)).toBe(true);
    expect(fake.processes.get(20013)?.shards).toEqual([{ _id: 'shard-x', host: 'shard-x/127.0.0.1:20012' }]);
    expect(await ensureShard(mongos, 'shard-x', 20012)).toBe(false);
    expect(await shardProblem(mongos, 'shard-x')).toBeUndefined();
  });
});
