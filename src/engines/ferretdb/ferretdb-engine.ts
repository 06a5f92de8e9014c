import { join } from 'node:path';
import { TerminalError } from '../../domain/errors.js';
import {
  PortTakenError,
  throwIfCancelled,
  type EnsureResult,
  type FoundProgram,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDefinition,
} from '../../domain/units.js';
import { compareVersions, minorVersion } from '../../lib/versions.js';
import { sleep } from '../../lib/time.js';
import type { Engine, EngineSupport, MongoUserAdmin } from '../engine.js';
import { MongoAdmin } from '../mongodb/mongodb-admin.js';
import type { MongoCommands } from '../mongodb/mongodb-commands.js';
import { probeMongo } from '../mongodb/mongodb-probe.js';
import { MongoUsers } from '../mongodb/mongodb-users.js';
import { FerretdbBackupDriver } from './ferretdb-backup.js';
import { DATA_DIR, FERRETDB_ROLE, ferretdbArgs, ferretdbEnv } from './ferretdb-config.js';
import { FerretdbUsers } from './ferretdb-users.js';

/** How long a pass waits for FerretDB to answer (it listens about a second after it starts). */
const READY_TIMEOUT_MS = 30_000;
const POLL_MS = 50;
/** Written into the data directory, which FerretDB needs to exist; it reads `*.sqlite` files only. */
const DATA_README = 'README';

export interface FerretdbEngineOptions {
  /** Every ferretdb found, newest first: the engine cache may hold several versions, or the one HANGAR_FERRETDB_BIN names. */
  readonly programs: readonly FoundProgram[];
  /** The sqlite3 shell, for backups (undefined: not installed). */
  readonly sqlite3?: string;
  /** tar, for backups. */
  readonly tar?: string;
}

/** Why the process exited, from the end of its log: its port held by another process (the reconciler moves it), else the log's last lines. */
function exited(unit: UnitDefinition, port: number, tail: string): Error {
  const message = `ferretdb exited: ${tail}`;
  if (/address already in use/i.test(tail)) return new PortTakenError('engine.0', port, message);
  if (/no space left on device/i.test(tail)) return new TerminalError(message);
  return new Error(`${message} (unit ${unit.role})`);
}

/**
 * `mongodb_singledb` on FerretDB 1.x: one ferretdb process on a loopback engine port behind the
 * edge, its SQLite files (one per database) in the unit's `data/`. Authentication is always on
 * (SCRAM users kept in the backend); hangar's own user is made by FerretDB itself at the first
 * start (`--setup-*`, its password in the environment). Users are administered with MongoDB's
 * commands as for mongod, but FerretDB 1.x takes no roles: the server gets `roles: []`.
 */
export class FerretdbEngine implements Engine {
  readonly service = 'mongodb' as const;
  private readonly admin = new MongoAdmin();
  readonly backups: FerretdbBackupDriver;

  constructor(private readonly opts: FerretdbEngineOptions) {
    this.backups = new FerretdbBackupDriver({
      ...(opts.sqlite3 ? { sqlite3: opts.sqlite3 } : {}),
      ...(opts.tar ? { tar: opts.tar } : {}),
      unit: (s, d) => this.unit(s, d),
      commands: (s) => this.adminCommands(s),
      start: (s, p, ctx) => this.ensureServing(s, p, this.unit(s, p.dir), ctx),
    });
  }

  /** FerretDB 2 has no SQLite backend (it runs on PostgreSQL with DocumentDB): hangar runs 1.x. */
  support(): EngineSupport {
    const usable = this.opts.programs.filter((p) => p.version.startsWith('1.'));
    if (usable.length > 0) return {};
    const found = this.opts.programs.map((p) => `${p.path} (${p.version})`).join(', ');
    return { unavailableReason: `hangar runs FerretDB 1.x over SQLite; ${found} is not 1.x (FerretDB 2 needs PostgreSQL with DocumentDB)` };
  }

  /** The program of the instance's version: that version when found, else the newest of its release series. */
  program(version: string): FoundProgram {
    const exact = this.opts.programs.find((p) => p.version === version);
    if (exact) return exact;
    const series = this.opts.programs
      .filter((p) => minorVersion(p.version) === minorVersion(version))
      .sort((a, b) => compareVersions(b.version, a.version));
    if (series[0]) return series[0];
    const found = this.opts.programs.map((p) => p.version).join(', ');
    throw new TerminalError(
      `no ferretdb ${version} is installed here (found: ${found}); install it with \`hangar engines install ferretdb@${version}\``,
    );
  }

  private port(spec: InstanceSpec): number {
    const port = spec.ports['engine.0'];
    if (port === undefined) throw new TerminalError(`instance ${spec.id} has no port for engine.0`);
    return port;
  }

  private unit(spec: InstanceSpec, instanceDir: string): UnitDefinition {
    const dir = join(instanceDir, FERRETDB_ROLE);
    return {
      instanceId: spec.id,
      role: FERRETDB_ROLE,
      dir,
      bin: this.program(spec.version).path,
      args: ferretdbArgs({ port: this.port(spec), dir }),
      env: ferretdbEnv(spec.adminSecret, spec.plan),
    };
  }

  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    return [this.unit(spec, instanceDir)];
  }

  /** Commands as hangar's user, on the engine port. */
  private adminCommands(spec: InstanceSpec): MongoCommands {
    return this.admin.commands({ instanceId: spec.id, ports: [this.port(spec)], adminSecret: spec.adminSecret });
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const unit = this.unit(spec, place.dir);
    const fresh = !place.host.exists(unit, DATA_DIR);
    // FerretDB needs its data directory to exist
    place.host.writeFile(unit, `${DATA_DIR}/${DATA_README}`, "FerretDB's SQLite files, one per database (<database>.sqlite).\n");
    await this.ensureServing(spec, place, unit, ctx, fresh);
    return { fresh };
  }

  /**
   * Runs the unit and waits until hangar's user logs in on the engine port; fails early, with its
   * log, when the process exits. A running process that was not just started and refuses
   * connections on the port the instance has (the port was moved) is restarted on the new one.
   */
  private async ensureServing(spec: InstanceSpec, place: InstancePlace, unit: UnitDefinition, ctx: StepContext, fresh = false) {
    const { host } = place;
    const port = this.port(spec);
    const { started } = await host.ensureUnit(unit);
    if (started) ctx.step(`${fresh ? 'create' : 'ensure'}:ferretdb-started`);
    const until = Date.now() + READY_TIMEOUT_MS;
    let justStarted = started;
    let last = '';
    for (;;) {
      throwIfCancelled(ctx.signal, 'waiting for ferretdb');
      if (justStarted && !host.isRunning(unit)) throw exited(unit, port, host.logTail(unit) || last);
      try {
        await this.adminCommands(spec).run('admin', { ping: 1 });
        return;
      } catch (err) {
        last = (err as Error).message;
        if (!justStarted && /ECONNREFUSED/.test(last) && host.isRunning(unit)) {
          await host.stopUnit(unit);
          await host.ensureUnit(unit);
          ctx.step('ensure:ferretdb-restarted');
          justStarted = true;
          continue;
        }
      }
      if (!host.isRunning(unit)) throw exited(unit, port, host.logTail(unit) || last);
      if (Date.now() > until) throw new Error(`ferretdb does not answer on port ${port}: ${last}`);
      await sleep(POLL_MS, ctx.signal);
    }
  }

  async readiness(spec: InstanceSpec, _place: InstancePlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      // a SCRAM login as hangar's user, through the edge, as a client would
      for (const t of targets) await probeMongo(t, spec.adminSecret);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: InstancePlace): Promise<Health> {
    if (!place.host.isRunning(this.unit(spec, place.dir))) return { healthy: false, reason: 'ferretdb is not running' };
    try {
      await this.adminCommands(spec).run('admin', { ping: 1 });
      return { healthy: true };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message };
    }
  }

  mongodbUsers(spec: InstanceSpec, _place: InstancePlace): MongoUserAdmin {
    return new FerretdbUsers(new MongoUsers(() => this.adminCommands(spec)));
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
