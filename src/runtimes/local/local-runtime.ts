import {
  accessSync,
  constants,
  createReadStream,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { accessGroups, type EdgeRoute } from '../../domain/endpoints.js';
import {
  throwIfCancelled,
  type AccessRule,
  type EnsureResult,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDefinition,
  type UnitDriver,
  type UnitHost,
} from '../../domain/units.js';
import { foundVersions, type EngineBinaries } from '../../lib/binaries.js';
import { programOutput, runProgram } from '../../lib/child-streams.js';
import { sleep } from '../../lib/time.js';
import type { AccessEnforcer, DeniedConnection, Runtime, RuntimeEvents, RuntimeHealth, RuntimeStats } from '../runtime.js';
import { DeniedLog } from './denied-log.js';
import type { EngineUser } from './engine-user.js';
import { chownTree, ensureDir, readText, writeFileIfChanged, writeStreamAtomically, type Owner } from './files.js';
import { HaproxyEdge } from './haproxy-edge.js';
import { portIsFree } from './ports.js';
import { ProcessSupervisor, logFrom, logSize, logTail, type SupervisedUnit, type UnitRef } from './process-supervisor.js';

/**
 * Source address of hangar's own probes through the edge. Every listener admits it whatever the
 * ACLs say, so that hangar can tell an instance is usable before any ACL exists; the engine still
 * asks for the password. Linux routes all of 127.0.0.0/8 to the loopback interface, so binding a
 * socket to it needs no setup, and nothing else uses it.
 */
export const PROBE_SOURCE = '127.77.0.1';

/** How long a pass waits for an instance to be usable before it fails (and is retried). */
const READY_TIMEOUT_MS = 10_000;
/** How often the instances' data dirs are checked for being writable. */
const DATA_DIR_CHECK_MS = 1000;

/**
 * Why hangar cannot write into `dir` (a read-only filesystem, or something not a directory in
 * its place), or undefined when it can or the directory is not made yet. `access` is asked, not
 * the permission bits: root may write whatever the mode, but not to a read-only mount.
 */
export function dataDirProblem(dir: string): string | undefined {
  try {
    if (!statSync(dir).isDirectory()) return `the data dir ${dir} is not a directory`;
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    return `the data dir ${dir} is not writable (${code ?? (err as Error).message})`;
  }
}

export interface LocalRuntimeOptions {
  readonly config: Config;
  readonly log: Logger;
  /** The programs found on this machine: haproxy for the edge, and the engines' programs, which supervision recognises. */
  readonly binaries: EngineBinaries;
  /** PATH for finding binaries and for the processes the runtime starts. */
  readonly searchPath: string;
  /**
   * The directory of the instances' directories (`<id>/<role>/`): `<data dir>/instances`, or,
   * when the engine user cannot reach that, its place outside the data dir (`resolveEngineDir`).
   * Every use of the runtime on a data dir (serve, `hangar down`) must be given the same.
   */
  readonly instancesDir: string;
  /**
   * The user engines run as when it is not hangar's own (hangar runs as root): their processes,
   * their directories and what hangar writes there are theirs (`ensureEngineDirs` prepared the
   * data dir for it). Unset: engines run as hangar's user. The edge runs as hangar's user either way.
   */
  readonly engineUser?: EngineUser;
}

/** The open-file limit allows two descriptors per proxied connection: stay below it. */
export function edgeMaxconn(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const hard = Number(line?.trim().split(/\s+/)[4]);
    if (Number.isFinite(hard)) return Math.max(100, Math.min(9000, Math.floor((hard - 200) / 2)));
  } catch {
    /* not Linux: take the default */
  }
  return 9000;
}

function realpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Engines as real processes on this machine, behind one HAProxy edge that enforces the ACLs.
 *
 * Layout: `<instances dir>/<id>/<role>/` holds each engine's configuration, data, pid file and
 * log (the instances dir is `<data dir>/instances` unless the engine user cannot reach it);
 * `<data dir>/edge/` holds haproxy.cfg, its sockets, one routes file per instance and the allow
 * lists. Every name derives from the instance id, so every step can be repeated. Processes run
 * detached: they keep serving while hangar is stopped, and `start` adopts them again (by pid file
 * and by their directory in their command line). With an engine user (hangar runs as root),
 * engines run as that user and the instances dir is theirs; the edge and everything else in the
 * data dir stay hangar's.
 */
export class LocalRuntime implements Runtime {
  readonly kind = 'local' as const;
  private readonly supervisor: ProcessSupervisor;
  private readonly edge: HaproxyEdge;
  private readonly denied: DeniedLog;
  private readonly instancesDir: string;
  private readonly host: UnitHost;
  /** Who owns the instances' directories and runs their engines, when not hangar's user. */
  private readonly owner: Owner | undefined;
  private events: RuntimeEvents | undefined;
  private dirTimer: NodeJS.Timeout | undefined;
  private readonly log: Logger;
  /** Why an instance does not serve as asked, as last found by a pass or by supervision. */
  private readonly problems = new Map<string, string>();
  /** Instances whose data dir cannot be written to, with the reason. */
  private readonly dirProblems = new Map<string, string>();

  constructor(private readonly opts: LocalRuntimeOptions) {
    const { config, binaries, log } = opts;
    this.log = log.child({ component: 'runtime' });
    const found = Object.values(binaries).flatMap((b) => foundVersions(b).map((f) => f.path));
    const programs = new Set(found.map(realpath).filter((p): p is string => p !== undefined));
    this.instancesDir = opts.instancesDir;
    this.owner = opts.engineUser ? { uid: opts.engineUser.uid, gid: opts.engineUser.gid } : undefined;
    this.supervisor = new ProcessSupervisor({
      programs,
      env: { PATH: opts.searchPath },
      log: log.child({ component: 'supervisor' }),
      onDeath: (unit) => this.unitDied(unit),
    });
    const edge = binaries.haproxy;
    const haproxy = edge && 'found' in edge ? edge.found.path : config.haproxyBin;
    this.edge = new HaproxyEdge({
      edgeDir: join(config.dataDir, 'edge'),
      bin: haproxy,
      bindAddress: config.edgeBind,
      probeSource: PROBE_SOURCE,
      peerSource: config.advertiseHost,
      certificateHost: config.advertiseHost,
      maxconn: edgeMaxconn(),
      supervisor: this.supervisor,
      log: log.child({ component: 'edge' }),
    });
    this.denied = new DeniedLog(join(config.dataDir, 'edge', 'log.port'), log.child({ component: 'edge' }));
    this.host = this.unitHost();
  }

  private unitHost(): UnitHost {
    const { owner } = this;
    const supervised = (u: UnitDefinition): SupervisedUnit => ({
      key: `${u.instanceId}/${u.role}`,
      instanceId: u.instanceId,
      dir: u.dir,
      bin: u.bin,
      args: u.args,
      ...(u.env ? { env: u.env } : {}),
      ...(owner ? { user: owner } : {}),
    });
    const toolEnv = { PATH: this.opts.searchPath };
    const as = (u: UnitDefinition) => ({ cwd: u.dir, ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
    return {
      ensureUnit: (u) => this.supervisor.ensureRunning(supervised(u)),
      stopUnit: (u) => this.supervisor.stop(supervised(u)),
      isRunning: (u) => this.supervisor.isRunning(supervised(u)),
      logTail: (u) => logTail(u.dir),
      logEnd: (u) => logSize(u.dir),
      logFrom: (u, offset) => logFrom(u.dir, offset),
      writeFile: (u, name, content) => {
        ensureDir(dirname(join(u.dir, name)), owner);
        return writeFileIfChanged(join(u.dir, name), content, owner);
      },
      readFile: (u, name) => readText(join(u.dir, name)),
      exists: (u, name) => existsSync(join(u.dir, name)),
      readStream: (u, name) => {
        // Opened now, so that a missing file throws here rather than on the stream; never through
        // a link (the engine's user may make one, and hangar may be root: a backup must hold the
        // engine's file, not whatever a link points to).
        const fd = openSync(join(u.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
        return createReadStream('', { fd });
      },
      writeStream: async (u, name, source) => {
        ensureDir(dirname(join(u.dir, name)), owner);
        return writeStreamAtomically(join(u.dir, name), source, owner);
      },
      rename: (u, from, to) => {
        const target = join(u.dir, to);
        // a file is replaced atomically by the rename itself; a directory must be gone first
        if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) rmSync(target, { recursive: true, force: true });
        renameSync(join(u.dir, from), target);
        if (owner) chownTree(target, owner);
      },
      handOver: (u, name) => {
        if (owner) chownTree(join(u.dir, name), owner);
      },
      remove: (u, name) => rmSync(join(u.dir, name), { recursive: true, force: true }),
      size: (u, name) => {
        try {
          return statSync(join(u.dir, name)).size;
        } catch {
          return undefined;
        }
      },
      runTool: (u, bin, args, input) => runProgram(bin, args, toolEnv, { ...as(u), ...(input !== undefined ? { input } : {}) }),
      toolOutput: (u, bin, args) => programOutput(bin, args, toolEnv, as(u)),
    };
  }

  private instanceDir(id: string): string {
    return join(this.instancesDir, id);
  }

  /** Instance ids that have a directory here. */
  private instanceDirs(): string[] {
    try {
      return readdirSync(this.instancesDir).filter((n) => /^[A-Za-z0-9_]+$/.test(n) && statSync(join(this.instancesDir, n)).isDirectory());
    } catch {
      return [];
    }
  }

  async start(events: RuntimeEvents): Promise<void> {
    this.events = events;
    // The log receiver first: the edge's configuration names it.
    ensureDir(join(this.opts.config.dataDir, 'edge'));
    await this.denied.listen();
    this.edge.setLogAddress(this.denied.address);
    await this.edge.adopt();
    // an edge left running with nothing to serve (its last instance deleted by an older hangar)
    await this.edge.stopIfUnneeded();
    for (const id of this.instanceDirs()) {
      const dir = this.instanceDir(id);
      for (const role of readdirSync(dir)) {
        if (statSync(join(dir, role)).isDirectory())
          await this.supervisor.adopt({ key: `${id}/${role}`, instanceId: id, dir: join(dir, role) });
      }
    }
    this.supervisor.start();
    this.dirTimer = setInterval(() => this.checkDataDirs(), DATA_DIR_CHECK_MS);
    this.dirTimer.unref();
    this.log.info(
      { instances: this.instanceDirs().length, edge: this.supervisor.pidOf(this.edge.unit) ?? null },
      'local runtime supervising',
    );
  }

  async close(): Promise<void> {
    this.events = undefined;
    clearInterval(this.dirTimer);
    this.denied.close();
    this.problems.clear();
    this.dirProblems.clear();
    this.supervisor.close();
  }

  /** A unit that should run died: its instance is reconciled, which starts it again. */
  private unitDied(unit: UnitRef): void {
    if (unit.key === this.edge.unit.key) {
      this.edge.forgetLoaded();
      for (const id of this.edge.instanceIds()) this.events?.instanceChanged(id);
    } else if (unit.instanceId !== undefined) {
      this.problems.set(unit.instanceId, `its ${unit.key.slice(unit.key.indexOf('/') + 1)} process died`);
      this.events?.instanceChanged(unit.instanceId);
    }
  }

  /**
   * Looks whether each supervised instance's directories can still be written to; an instance
   * whose answer changed is reconciled (which says DEGRADED, or heals once it can write again).
   * Engines keep running either way: they serve from memory and the files they have open.
   */
  private checkDataDirs(): void {
    const dirs = new Map<string, string[]>();
    for (const id of this.instanceDirs()) dirs.set(id, [this.instanceDir(id)]);
    for (const unit of this.supervisor.units()) {
      if (unit.instanceId === undefined) continue;
      const list = dirs.get(unit.instanceId) ?? [this.instanceDir(unit.instanceId)];
      list.push(unit.dir);
      dirs.set(unit.instanceId, list);
    }
    for (const id of new Set([...dirs.keys(), ...this.dirProblems.keys()])) {
      const problem = (dirs.get(id) ?? []).map(dataDirProblem).find((p) => p !== undefined);
      if (problem === this.dirProblems.get(id)) continue;
      if (problem === undefined) this.dirProblems.delete(id);
      else this.dirProblems.set(id, problem);
      this.log.warn({ instance: id, problem: problem ?? null }, problem ? 'data dir not writable' : 'data dir writable again');
      this.events?.instanceChanged(id);
    }
  }

  portIsFree(port: number): Promise<boolean> {
    return portIsFree(port, ['127.0.0.1', this.opts.config.edgeBind]);
  }

  place(spec: Pick<InstanceSpec, 'id'>): InstancePlace {
    return { dir: this.instanceDir(spec.id), host: this.host, edgeHost: this.opts.config.advertiseHost };
  }

  /** Where hangar's probes reach the instance: each client listener, from the probe source. */
  private probeTargets(routes: readonly EdgeRoute[]): ProbeTarget[] {
    const bind = this.opts.config.edgeBind;
    const host = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind;
    return routes.filter((r) => r.group === 'main' && !r.tls).map((r) => ({ host, port: r.port, localAddress: PROBE_SOURCE }));
  }

  async ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult> {
    try {
      const result = await this.converge(spec, rules, driver, ctx);
      this.problems.delete(spec.id);
      return result;
    } catch (err) {
      if (!ctx.signal?.aborted) this.problems.set(spec.id, err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  private async converge(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult> {
    const place = this.place(spec);
    const { dir } = place;
    const routes = driver.edgeRoutes?.(spec) ?? spec.routes;
    // Access first: revoking an ACL must take effect even when the engines are in trouble.
    const access = await this.edge.applyAccess(spec.id, accessGroups(routes, rules), ctx.signal);
    if (access.changed) ctx.step('ensure:access-applied');
    // A data dir that cannot be written to stays as it is: the engines that run keep serving
    // from it, and nothing is started, moved or removed until it can be written again.
    const unwritable = dataDirProblem(dir);
    if (unwritable) throw new Error(unwritable);
    ensureDir(dir, this.owner);
    // The edge gets the listeners while the engines start: a reload takes about as long as
    // starting a primary and its replica, and neither needs the other (the listeners forward to
    // the engine ports, and nothing counts the instance usable before the probes below pass).
    const edge = this.edge.ensureRoutes(spec.id, routes, ctx.signal);
    // Awaited below; a failure that comes while the engines start is not an unhandled rejection.
    edge.catch(() => {});
    let result: EnsureResult;
    try {
      result = await driver.ensureUnits(spec, place, ctx);
    } catch (err) {
      // the pass ends only once the edge is done too
      await edge.catch(() => {});
      throw err;
    }
    const { wentLive } = await edge;
    if (wentLive) ctx.step('create:edge-listening');
    // Usable as a client sees it; the edge is ensured again between attempts, so an edge that
    // dies meanwhile is started again by this pass rather than waited for.
    const targets = this.probeTargets(routes);
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      throwIfCancelled(ctx.signal, 'waiting for the instance to be ready');
      const problem = await driver.readiness(spec, place, targets);
      if (problem === undefined) return result;
      if (Date.now() > until) throw new Error(problem);
      await sleep(5, ctx.signal);
      await this.edge.ensureRoutes(spec.id, routes, ctx.signal);
    }
  }

  async ensureAccess(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<{ changed: boolean } | undefined> {
    const access = await this.edge.applyAccess(spec.id, accessGroups(spec.routes, rules), ctx.signal);
    if (!access.live) return undefined;
    if (access.changed) ctx.step('ensure:access-applied');
    return { changed: access.changed };
  }

  async removeInstance(id: string, ctx: StepContext): Promise<void> {
    const dir = this.instanceDir(id);
    let roles: string[] = [];
    try {
      roles = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      /* no directory left */
    }
    for (const role of roles) this.supervisor.unwatch(`${id}/${role}`);
    // Each unit by its pid file: an engine whose program is an interpreter (Elasticsearch's java,
    // Kibana's node) is not among the programs the sweep below recognises.
    await Promise.all(roles.map((role) => this.supervisor.stop({ key: `${id}/${role}`, dir: join(dir, role) }, 1000)));
    // Every process whose command line names the instance directory: its engines and anything they forked.
    await this.supervisor.stop({ key: id, dir }, 1000);
    this.problems.delete(id);
    this.dirProblems.delete(id);
    ctx.step('delete:engines-stopped');
    await this.edge.removeInstance(id);
    this.denied.forget(id);
    ctx.step('delete:edge-removed');
    rmSync(dir, { recursive: true, force: true });
    ctx.step('delete:data-removed');
  }

  /**
   * Stops every engine and the edge of this data dir (`hangar down`), each with SIGTERM (re-sent),
   * then SIGKILL after `graceMs`; nothing else changes: data, configuration, allow lists and the
   * store stay, and the next start of hangar starts them again. Only for a runtime that does not
   * supervise (no hangar serves this data dir): a supervising one would restart them. Returns the
   * units that were running.
   */
  async stopAll(graceMs = 10_000): Promise<string[]> {
    const units: UnitRef[] = [];
    for (const id of this.instanceDirs()) {
      const dir = this.instanceDir(id);
      for (const e of readdirSync(dir, { withFileTypes: true }))
        if (e.isDirectory()) units.push({ key: `${id}/${e.name}`, instanceId: id, dir: join(dir, e.name) });
    }
    const running = units.filter((u) => this.supervisor.isRunning(u)).map((u) => u.key);
    await Promise.all(units.map((u) => this.supervisor.stop(u, graceMs)));
    // anything else of an instance that carries its directory (what an engine forked)
    await Promise.all(this.instanceDirs().map((id) => this.supervisor.stop({ key: id, dir: this.instanceDir(id) }, graceMs)));
    if (await this.edge.stop(graceMs)) running.push(this.edge.unit.key);
    return running;
  }

  async listInstanceIds(): Promise<string[]> {
    return [...new Set([...this.instanceDirs(), ...this.edge.instanceIds()])];
  }

  async checkInstance(spec: InstanceSpec, driver: UnitDriver): Promise<Health> {
    const dir = this.instanceDir(spec.id);
    const unwritable = dataDirProblem(dir);
    if (unwritable) return { healthy: false, reason: unwritable };
    if (!this.edge.serving()) return { healthy: false, reason: 'the edge (haproxy) is not running' };
    const blocked = this.edge.blockedInstances().get(spec.id);
    if (blocked) return { healthy: false, reason: blocked };
    return driver.check(spec, this.place(spec));
  }

  /**
   * Problems of the runtime (the edge down) and, on the replica that supervises this host, of
   * each instance that does not serve as asked right now.
   */
  health(): RuntimeHealth {
    const problems: string[] = [];
    if (this.edge.needed() && !this.edge.serving()) problems.push('the edge (haproxy) is not running');
    const byInstance = new Map([...this.edge.blockedInstances(), ...this.problems, ...this.dirProblems]);
    const degraded = [...byInstance].sort(([a], [b]) => a.localeCompare(b)).map(([id, reason]) => `instance ${id}: ${reason}`);
    return { problems, degraded };
  }

  async stats(): Promise<RuntimeStats> {
    const { up, expected } = this.supervisor.counts((u) => u.instanceId !== undefined);
    let edge: RuntimeStats['edge'] = [];
    try {
      edge = await this.edge.counters();
    } catch (err) {
      this.log.debug({ err }, 'edge counters unavailable');
    }
    return { processesUp: up, processesExpected: expected, edge };
  }

  async effectiveAccess(spec: InstanceSpec): Promise<AccessEnforcer[]> {
    const groups = [...new Set(spec.routes.map((r) => r.group))];
    return [{ name: 'haproxy', ...(await this.edge.effective(spec.id, groups)) }];
  }

  async deniedConnections(spec: InstanceSpec, limit: number): Promise<DeniedConnection[]> {
    return this.denied.recent(spec.id, limit);
  }
}
