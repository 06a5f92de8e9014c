import { join } from 'node:path';
import { sleep } from '../../lib/time.js';
import {
  PortTakenError,
  throwIfCancelled,
  type EnsureResult,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDefinition,
  type UnitHost,
} from '../../domain/units.js';
import { TerminalError } from '../../domain/errors.js';
import type { Engine, MongoUserAdmin } from '../engine.js';
import { MongodbBackupDriver } from './mongodb-backup.js';
import { MongoAdmin } from './mongodb-admin.js';
import {
  ensureAdminUser,
  ensureInitiated,
  ensureMembers,
  ensureShard,
  memberState,
  primaryPort,
  replicaSetProblem,
  shardProblem,
  type MongoConnector,
  type ReplicaSetSpec,
} from './mongodb-cluster.js';
import {
  DATA_MARKER,
  KEY_FILE,
  keyFileContent,
  memberHosts,
  mongoLayout,
  mongodArgs,
  mongosArgs,
  replicaSets,
  storageEngineFlag,
  wiredTigerCacheGb,
  type MongoUnitLayout,
} from './mongodb-config.js';
import { probeMongo } from './mongodb-probe.js';
import { MongoUsers } from './mongodb-users.js';
import { mongodbSupport, storageEngineRefusal, type EngineBinary } from './mongodb-versions.js';

/** How long a pass waits for a process to answer, and for a replica set to elect a primary (a first election takes seconds). */
const READY_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

export interface MongodbEngineOptions {
  readonly mongod: EngineBinary;
  readonly mongos: EngineBinary;
  /** PATH for the tools of backups (mongodump, mongorestore). */
  readonly searchPath?: string;
}

/**
 * Why a process exited, from the end of its log: its port held by another process (the
 * reconciler moves it), no space left for its data (final: retrying cannot help), or else the
 * log's last lines.
 */
function exited(name: string, unit: UnitDefinition, portRole: string, port: number, tail: string): Error {
  const message = `${name} ${unit.role} exited: ${tail}`;
  if (/Address already in use/i.test(tail)) return new PortTakenError(portRole, port, message);
  if (/No space left on device/i.test(tail)) return new TerminalError(message);
  return new Error(message);
}

/** A replica set of an instance with its ports, and the name its steps carry. */
interface InstanceReplicaSet extends ReplicaSetSpec {
  readonly label: string;
  readonly members: readonly MongoUnitLayout[];
}

/**
 * MongoDB instances as real processes: a standalone mongod (`mongodb_singledb`), a replica set of
 * three (`mongodb_replica_set`, `mongodb_jumbo_replica_set`), or a config server, a shard and a
 * mongos (`mongodb_sharded`). Authentication is always on: members share a keyFile, and hangar
 * creates its own `root` user through the localhost exception on first start; clients get users
 * through the user API. Each process runs on a loopback engine port, its data in its directory.
 */
export class MongodbEngine implements Engine {
  readonly service = 'mongodb' as const;
  private readonly admin = new MongoAdmin();
  /** mongodump / mongorestore, where the MongoDB Database Tools are installed. */
  readonly backups: MongodbBackupDriver;

  constructor(private readonly opts: MongodbEngineOptions) {
    this.backups = new MongodbBackupDriver({
      searchPath: opts.searchPath ?? process.env.PATH ?? '/usr/bin:/bin',
      units: (s, d) => this.units(s, d),
    });
  }

  /** Whether the binaries found can run instances, and the storage engines they can honour. */
  support(): { readonly unavailableReason?: string; readonly storageEngines: readonly string[] } {
    return mongodbSupport(this.opts.mongod, this.opts.mongos);
  }

  private port(spec: InstanceSpec, role: string): number {
    const port = spec.ports[role];
    if (port === undefined) throw new TerminalError(`instance ${spec.id} has no port for ${role}`);
    return port;
  }

  private unitOf(spec: InstanceSpec, instanceDir: string, u: MongoUnitLayout, layout: readonly MongoUnitLayout[]): UnitDefinition {
    const dir = join(instanceDir, u.role);
    const port = this.port(spec, u.portRole);
    if (u.process === 'mongos') {
      const config = layout.find((l) => l.clusterRole === 'configsvr');
      if (!config?.replSet) throw new Error('a mongos needs a config server replica set');
      const args = mongosArgs({ port, dir, configReplSet: config.replSet, configPort: this.port(spec, config.portRole) });
      return { instanceId: spec.id, role: u.role, dir, bin: this.opts.mongos.path, args };
    }
    const args = mongodArgs({
      port,
      dir,
      storageEngine: storageEngineFlag(spec.storageEngine),
      cacheSizeGb: wiredTigerCacheGb(spec.plan, u.clusterRole),
      ...(u.replSet !== undefined ? { replSet: u.replSet } : {}),
      ...(u.clusterRole !== undefined ? { clusterRole: u.clusterRole } : {}),
    });
    return { instanceId: spec.id, role: u.role, dir, bin: this.opts.mongod.path, args };
  }

  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    const layout = mongoLayout(spec.id, spec.type);
    return layout.map((u) => this.unitOf(spec, instanceDir, u, layout));
  }

  /** The instance's replica sets, their members named as they announce themselves (`memberHosts`: the edge's listeners at `edgeHost`). */
  private replicaSetsOf(spec: InstanceSpec, edgeHost: string | undefined): InstanceReplicaSet[] {
    return replicaSets(mongoLayout(spec.id, spec.type)).map((rs) => {
      const ports = rs.members.map((m) => this.port(spec, m.portRole));
      const listeners = rs.members.map((m) => spec.ports[m.portRole.replace(/^engine\./, 'public.')]);
      return {
        name: rs.name,
        configsvr: rs.configsvr,
        members: rs.members,
        ports,
        hosts: memberHosts(spec.type, ports, listeners, edgeHost),
        label: spec.type === 'mongodb_sharded' ? `${rs.members[0]!.role}-replica-set` : 'replica-set',
      };
    });
  }

  private connector(spec: InstanceSpec): MongoConnector {
    return this.admin.connector(spec.id, spec.adminSecret);
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const { host } = place;
    const refusal = this.support().unavailableReason ?? storageEngineRefusal(spec.storageEngine, this.opts.mongod.version);
    if (refusal) throw new TerminalError(refusal);
    const layout = mongoLayout(spec.id, spec.type);
    const units = this.units(spec, place.dir);
    // Users live with the first process: the standalone mongod, the first member, the config server.
    const fresh = !host.exists(units[0]!, DATA_MARKER);
    const step = (what: string) => ctx.step(`${fresh ? 'create' : 'ensure'}:${what}`);
    const key = keyFileContent(spec.id, spec.adminSecret);
    for (const unit of units) host.writeFile(unit, KEY_FILE, key);
    const connector = this.connector(spec);

    for (const [i, l] of layout.entries()) {
      if (l.process !== 'mongod') continue;
      await this.ensureServing(connector, units[i]!, l.portRole, this.port(spec, l.portRole), host, step, ctx.signal);
    }
    for (const rs of this.replicaSetsOf(spec, place.edgeHost)) {
      if (await ensureInitiated(connector, rs)) step(`${rs.label}-initiated`);
      if (await ensureMembers(connector, rs)) step(`${rs.label}-reconfigured`);
      const primary = await this.waitPrimary(connector, rs, ctx.signal);
      // The config servers get hangar's user through the mongos (cluster users live there).
      if (!rs.configsvr && (await ensureAdminUser(connector, primary, spec.adminSecret))) step(`${rs.label}-admin-user-created`);
    }
    if (spec.type === 'mongodb_singledb' && (await ensureAdminUser(connector, this.port(spec, 'engine.0'), spec.adminSecret))) {
      step('admin-user-created');
    }
    if (spec.type === 'mongodb_sharded') {
      const mongos = units.find((u) => u.role === 'mongos')!;
      const mongosPort = this.port(spec, 'engine.mongos');
      await this.ensureServing(connector, mongos, 'engine.mongos', mongosPort, host, step, ctx.signal);
      if (await ensureAdminUser(connector, mongosPort, spec.adminSecret)) step('admin-user-created');
      const shard = this.replicaSetsOf(spec, place.edgeHost).find((rs) => !rs.configsvr)!;
      if (await ensureShard(connector.direct(mongosPort, 'admin'), shard.name, shard.ports[0]!)) step('shard-added');
    }
    return { fresh };
  }

  /**
   * Runs the unit and waits until it answers `isMaster` on its port; fails early, with its log,
   * when its process exits. A running process that was not just started and refuses connections
   * on the port the instance has (the port was moved) is restarted on the new one.
   */
  private async ensureServing(
    connector: MongoConnector,
    unit: UnitDefinition,
    portRole: string,
    port: number,
    host: UnitHost,
    step: (what: string) => void,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { started } = await host.ensureUnit(unit);
    if (started) step(`${unit.role}-started`);
    const name = unit.role === 'mongos' ? 'mongos' : 'mongod';
    const until = Date.now() + READY_TIMEOUT_MS;
    let fresh = started;
    let last = '';
    for (;;) {
      throwIfCancelled(signal, `waiting for ${name} ${unit.role}`);
      // A process that exits at once (its port taken, its disk full) is reported without waiting
      // for a stranger on its port to answer.
      if (fresh && !host.isRunning(unit)) throw exited(name, unit, portRole, port, host.logTail(unit) || last);
      try {
        await memberState(connector.direct(port, 'anonymous'));
        return;
      } catch (err) {
        last = (err as Error).message;
        if (!fresh && /ECONNREFUSED/.test(last) && host.isRunning(unit)) {
          await host.stopUnit(unit);
          await host.ensureUnit(unit);
          step(`${unit.role}-restarted`);
          fresh = true;
          continue;
        }
      }
      if (!host.isRunning(unit)) throw exited(name, unit, portRole, port, host.logTail(unit) || last);
      if (Date.now() > until) throw new Error(`${name} ${unit.role} does not answer on port ${port}: ${last}`);
      await sleep(POLL_MS, signal);
    }
  }

  private async waitPrimary(connector: MongoConnector, rs: ReplicaSetSpec, signal: AbortSignal | undefined): Promise<number> {
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      throwIfCancelled(signal, `waiting for replica set ${rs.name} to elect a primary`);
      const port = await primaryPort(connector, rs);
      if (port !== undefined) return port;
      if (Date.now() > until) throw new Error(`replica set ${rs.name} elected no primary within ${READY_TIMEOUT_MS / 1000} s`);
      await sleep(POLL_MS, signal);
    }
  }

  /** What keeps the engines from serving, asked of them directly as hangar's admin; undefined when they serve. */
  private async engineProblem(spec: InstanceSpec, edgeHost: string | undefined): Promise<string | undefined> {
    const connector = this.connector(spec);
    for (const rs of this.replicaSetsOf(spec, edgeHost)) {
      const primary = await primaryPort(connector, rs);
      if (primary === undefined) return `replica set ${rs.name} has no primary`;
      const problem = await replicaSetProblem(connector.direct(primary, 'admin'), rs);
      if (problem) return problem;
    }
    if (spec.type === 'mongodb_singledb') await connector.direct(this.port(spec, 'engine.0'), 'admin').run('admin', { ping: 1 });
    if (spec.type === 'mongodb_sharded') {
      const shard = this.replicaSetsOf(spec, edgeHost).find((rs) => !rs.configsvr)!;
      return shardProblem(connector.direct(this.port(spec, 'engine.mongos'), 'admin'), shard.name);
    }
    return undefined;
  }

  async readiness(spec: InstanceSpec, place: InstancePlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      const problem = await this.engineProblem(spec, place.edgeHost);
      if (problem) return problem;
      for (const t of targets) await probeMongo(t, spec.adminSecret);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: InstancePlace): Promise<Health> {
    for (const unit of this.units(spec, place.dir)) {
      if (!place.host.isRunning(unit))
        return { healthy: false, reason: `${unit.role === 'mongos' ? 'mongos' : 'mongod'} ${unit.role} is not running` };
    }
    try {
      const problem = await this.engineProblem(spec, place.edgeHost);
      return problem ? { healthy: false, reason: problem } : { healthy: true };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message };
    }
  }

  /**
   * The instance's users, as hangar's admin: on the standalone mongod, on the replica set's
   * primary (the driver finds it), or on the mongos of a sharded cluster.
   */
  mongodbUsers(spec: InstanceSpec, place: InstancePlace): MongoUserAdmin {
    const base = { instanceId: spec.id, adminSecret: spec.adminSecret };
    switch (spec.type) {
      case 'mongodb_singledb':
        return new MongoUsers(() => this.admin.commands({ ...base, ports: [this.port(spec, 'engine.0')] }));
      case 'mongodb_sharded':
        return new MongoUsers(() => this.admin.commands({ ...base, ports: [this.port(spec, 'engine.mongos')] }));
      default: {
        const [rs] = this.replicaSetsOf(spec, place.edgeHost);
        return new MongoUsers(() => this.admin.commands({ ...base, ports: rs!.ports, replicaSet: rs!.name }));
      }
    }
  }

  forget(instanceId: string): void {
    this.admin.forget(instanceId);
  }

  closeIdle(idleMs: number): void {
    this.admin.closeIdle(idleMs);
  }

  close(): Promise<void> {
    return this.admin.close();
  }
}
