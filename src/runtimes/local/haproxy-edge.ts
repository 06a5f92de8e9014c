import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { matcher, parseCidr } from '../../lib/cidr.js';
import { sleep } from '../../lib/time.js';
import type { AccessGroup, EdgeRoute } from '../../domain/endpoints.js';
import { TerminalError } from '../../domain/errors.js';
import { throwIfCancelled } from '../../domain/units.js';
import { ensureEdgeCertificate, removeEdgeCertificate } from './edge-tls.js';
import { ensureDir, readText, writeFileIfChanged } from './files.js';
import { allowListFile, edgePaths, frontendName, instanceOfFrontend, renderHaproxyConfig, type EdgeInstance } from './haproxy-config.js';
import {
  cliWord,
  haproxyCommand,
  haproxyCommandRetrying,
  parseShowAcl,
  parseShowProc,
  parseShowSess,
  parseShowStat,
  type HaproxySession,
} from './haproxy-socket.js';
import { portIsFree } from './ports.js';
import { logTail, type ProcessSupervisor, type SupervisedUnit } from './process-supervisor.js';

/** How long the edge may take to start or reload before the pass fails (and is retried). */
const READY_TIMEOUT_MS = 10_000;
/** How long the edge may take to stop after SIGTERM before it is killed. */
const STOP_GRACE_MS = 3000;
/** Longest unix socket path Linux accepts (sun_path holds 108 bytes with the final NUL). */
const MAX_SOCKET_PATH = 107;

export interface HaproxyEdgeOptions {
  readonly edgeDir: string;
  readonly bin: string;
  readonly bindAddress: string;
  readonly probeSource: string;
  /** The host's own address, admitted on `peers` listeners (replica-set members reaching each other through the edge). */
  readonly peerSource?: string;
  /** The host clients connect to (the advertised host): the subjectAltName of TLS listeners' certificates. */
  readonly certificateHost: string;
  readonly maxconn: number;
  readonly supervisor: ProcessSupervisor;
  readonly log: Logger;
}

interface Counts {
  admitted: number;
  refused: number;
}

/** Counters of one instance's listeners. */
export interface EdgeCounters {
  readonly instanceId: string;
  readonly admitted: number;
  readonly refused: number;
}

/**
 * The edge: one HAProxy (master-worker) for the whole data dir, with a TCP listener per instance
 * address. Listeners come from the routes file each instance has in `<edge>/routes`; adding or
 * removing one rewrites haproxy.cfg and reloads seamlessly (the new worker takes the listening
 * sockets over, connections in progress stay with the old one). Admitted sources live in one
 * allow-list file per instance and access group; they change in memory through the runtime API
 * (no reload) and in the file (which the next reload reads). Every change to the running HAProxy
 * goes through one lock, so an ACL change never lands in a worker that is being replaced.
 */
export class HaproxyEdge {
  readonly unit: SupervisedUnit;
  private readonly paths: ReturnType<typeof edgePaths>;
  private readonly routes = new Map<string, readonly EdgeRoute[]>();
  /** The configuration the running HAProxy is known to have loaded. */
  private loaded: string | undefined;
  /** Instances whose listeners the running HAProxy has. */
  private live = new Set<string>();
  /** Instances left out of the configuration, with the reason (a port held by another process). */
  private readonly blocked = new Map<string, string>();
  /** Instances whose established sessions were checked against their ACLs since start. */
  private readonly swept = new Set<string>();
  /** A certificate file changed since the running HAProxy loaded its configuration. */
  private certificatesChanged = false;
  /** A process of the edge is being started and does not answer yet. */
  private starting = false;
  /** Where the edge sends its log of refused connections (`host:port`), once hangar listens for it. */
  private logAddress: string | undefined;
  /**
   * Connections counted by workers of the edge that are gone (replaced by a reload, or dead),
   * per instance: a worker's counters start at 0, the totals hangar reports go on from these.
   */
  private readonly countedBefore = new Map<string, Counts>();
  /** What the running worker counted when last read, per instance. */
  private lastRead = new Map<string, Counts>();
  private lock: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: HaproxyEdgeOptions) {
    this.paths = edgePaths(opts.edgeDir);
    this.unit = {
      key: 'edge',
      dir: opts.edgeDir,
      bin: opts.bin,
      args: ['-W', '-S', `${this.paths.masterSocket},mode,600`, '-f', this.paths.config],
    };
  }

  /**
   * Sets where refused connections are logged. Called before `adopt`, so that an edge started by
   * an earlier hangar with the same receiver is taken over as it runs.
   */
  setLogAddress(address: string | undefined): void {
    this.logAddress = address;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => {});
    return run;
  }

  /** Instances that have listeners or allow lists at the edge (from its files). */
  instanceIds(): string[] {
    const ids = new Set<string>();
    for (const dir of [this.paths.routesDir, this.paths.allowDir]) {
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const n of names) {
        const m = /^([A-Za-z0-9_]+)\.(json|main\.lst|transport\.lst|kibana\.lst)$/.exec(n);
        if (m) ids.add(m[1]!);
      }
    }
    return [...ids];
  }

  /**
   * Whether the edge serves: its process runs and has finished starting. A process spawned to
   * replace a dead one does not serve until its worker answers.
   */
  serving(): boolean {
    return !this.starting && this.opts.supervisor.isRunning(this.unit);
  }

  /** Whether any instance has listeners, i.e. whether the edge must run. */
  needed(): boolean {
    try {
      return readdirSync(this.paths.routesDir).some((n) => n.endsWith('.json'));
    } catch {
      return false;
    }
  }

  /**
   * Takes over a running edge after a restart of hangar: reads the routes files, adopts the
   * HAProxy process and finds which listeners it has, so that the next change reloads only when
   * what runs differs from what should.
   */
  async adopt(): Promise<void> {
    this.routes.clear();
    for (const id of this.instanceIds()) {
      const text = readText(join(this.paths.routesDir, `${id}.json`));
      if (text !== undefined) this.routes.set(id, (JSON.parse(text) as { routes: EdgeRoute[] }).routes);
    }
    this.loaded = undefined;
    this.live = new Set();
    const pid = await this.opts.supervisor.adopt(this.unit);
    if (pid === undefined) return;
    try {
      const frontends = parseShowStat(await haproxyCommand(this.paths.adminSocket, 'show stat'))
        .map((f) => f.frontend)
        .filter((f) => instanceOfFrontend(f) !== undefined);
      this.live = new Set(frontends.map((f) => instanceOfFrontend(f)!));
      const expected = [...this.routes].flatMap(([id, routes]) => routes.map((r) => frontendName(id, r.role)));
      const same = frontends.length === expected.length && expected.every((f) => frontends.includes(f));
      const rendered = this.render([...this.routes.keys()]);
      if (same && readText(this.paths.config) === rendered) this.loaded = rendered;
    } catch (err) {
      this.opts.log.warn({ err }, 'the edge runs but its runtime API does not answer; it will be reloaded');
    }
  }

  /** Instances left out of the edge, with the reason (a port of theirs held by another process). */
  blockedInstances(): ReadonlyMap<string, string> {
    return this.blocked;
  }

  /** The edge process died: what it had loaded is gone, and so are its worker's counters (kept as read last). */
  forgetLoaded(): void {
    this.foldCounts(this.lastRead);
    this.loaded = undefined;
    this.live = new Set();
    this.swept.clear();
  }

  /**
   * Makes the instance's listeners live (writing its routes, then starting or reloading the edge
   * when its configuration differs). Concurrent calls share one reload. Resolves with whether
   * the listeners went live in this call.
   */
  async ensureRoutes(id: string, routes: readonly EdgeRoute[], signal?: AbortSignal): Promise<{ wentLive: boolean }> {
    // A TLS listener's certificate exists before any configuration names it: HAProxy refuses a
    // configuration whose certificate file is missing, for every instance at once.
    const newCertificate = await this.ensureCertificate(id, routes);
    const wasLive = this.live.has(id) && this.loaded !== undefined;
    ensureDir(this.paths.routesDir);
    // Written before taking the lock, so that a reload in progress or queued includes it.
    const changed = writeFileIfChanged(join(this.paths.routesDir, `${id}.json`), `${JSON.stringify({ routes }, null, 2)}\n`);
    const known = this.routes.get(id);
    this.routes.set(id, routes);
    // Nothing to do for listeners the running edge has as they are: no lock to wait for, and
    // no rendering of the whole configuration (which grows with the number of instances).
    const same = known !== undefined && JSON.stringify(known) === JSON.stringify(routes);
    if (!changed && same && !newCertificate && wasLive && !this.blocked.has(id) && this.opts.supervisor.isRunning(this.unit))
      return { wentLive: false };
    await this.exclusive(() => this.sync(signal));
    const reason = this.blocked.get(id);
    if (reason) throw new Error(reason);
    if (!this.live.has(id)) throw new Error('the edge has no listeners for this instance yet');
    return { wentLive: !wasLive };
  }

  /** Removes the instance's listeners (reloading the edge) and its allow lists. */
  async removeInstance(id: string): Promise<void> {
    rmSync(join(this.paths.routesDir, `${id}.json`), { force: true });
    this.routes.delete(id);
    this.blocked.delete(id);
    await this.exclusive(async () => {
      // the last instance gone, the edge stops rather than reload to serve nothing
      if (this.routes.size === 0 && !this.needed()) await this.stopUnneeded();
      else if (this.live.has(id) || this.loaded === undefined) await this.sync();
      // the certificate before the allow lists: while a list is left, the instance is still
      // listed here, so a removal cut short is repeated and takes the certificate too
      removeEdgeCertificate(this.opts.edgeDir, id);
      for (const group of ['main', 'transport', 'kibana'] as const) rmSync(allowListFile(this.opts.edgeDir, id, group), { force: true });
      this.swept.delete(id);
      this.countedBefore.delete(id);
      this.lastRead.delete(id);
    });
  }

  /**
   * Stops the edge when no instance has listeners any more (the last one was deleted, or it was
   * left running so by an older hangar): a process with nothing to serve is not kept. The next
   * instance starts it again.
   */
  stopIfUnneeded(): Promise<void> {
    return this.exclusive(() => this.stopUnneeded());
  }

  private async stopUnneeded(): Promise<void> {
    if (this.routes.size > 0 || this.needed() || this.opts.supervisor.pidOf(this.unit) === undefined) return;
    await this.opts.supervisor.stop(this.unit, STOP_GRACE_MS);
    this.forgetLoaded();
    // the configuration left behind names no deleted instance (the next start rewrites it anyway)
    if (existsSync(this.paths.config)) writeFileIfChanged(this.paths.config, this.render([]));
    this.opts.log.info('edge stopped: no instance left to serve');
  }

  /**
   * Stops the edge process (`hangar down`): its listeners close, the configuration and the
   * allow lists stay for the next start. Says whether it was running.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<boolean> {
    return this.exclusive(async () => {
      const running = this.opts.supervisor.pidOf(this.unit) !== undefined;
      await this.opts.supervisor.stop(this.unit, graceMs);
      this.forgetLoaded();
      return running;
    });
  }

  /**
   * Makes the certificate of the instance's TLS listeners (none without any). HAProxy reads
   * certificate files at (re)load only: one replaced while the edge runs (renewed near its end,
   * or the advertised host changed) asks for a reload, so that the listeners present it. Says
   * whether it was replaced.
   */
  private async ensureCertificate(id: string, routes: readonly EdgeRoute[]): Promise<boolean> {
    if (!routes.some((r) => r.tls)) return false;
    const { created } = await ensureEdgeCertificate({ edgeDir: this.opts.edgeDir, instanceId: id, host: this.opts.certificateHost });
    if (created && this.loaded !== undefined) this.certificatesChanged = true;
    return created;
  }

  /**
   * Admits exactly `cidrs` per access group at the instance's listeners: the allow-list files are
   * rewritten, the running HAProxy's lists changed through the runtime API, and established
   * sessions whose source is no longer admitted are shut down (also in old workers that still
   * serve connections from before a reload). Says whether anything changed, and whether the
   * running edge serves the instance (`live`; when not, only the files were written, which its
   * next start or reload reads).
   */
  async applyAccess(
    id: string,
    groups: ReadonlyMap<AccessGroup, readonly string[]>,
    signal?: AbortSignal,
  ): Promise<{ changed: boolean; live: boolean }> {
    ensureDir(this.paths.allowDir);
    const desired = new Map<AccessGroup, string[]>();
    let changed = false;
    for (const [group, cidrs] of groups) {
      const list = [...new Set(cidrs.map((c) => parseCidr(c)?.text ?? c))].sort();
      desired.set(group, list);
      if (writeFileIfChanged(allowListFile(this.opts.edgeDir, id, group), list.map((c) => `${c}\n`).join(''))) changed = true;
    }
    return this.exclusive(async () => {
      if (!this.live.has(id) || this.loaded === undefined || !this.opts.supervisor.isRunning(this.unit)) return { changed, live: false };
      let removed = false;
      for (const [group, list] of desired) {
        const file = cliWord(allowListFile(this.opts.edgeDir, id, group));
        const shown = await this.admin(`show acl ${file}`, signal);
        // A group without listeners (no file loaded by any rule) has nothing to change.
        if (/^Unknown ACL/i.test(shown.trim())) continue;
        const want = new Set(list);
        const seen = new Set<string>();
        const commands: string[] = [];
        for (const entry of parseShowAcl(shown)) {
          const key = parseCidr(entry.pattern)?.text ?? entry.pattern;
          if (!want.has(key) || seen.has(key)) {
            commands.push(`del acl ${file} #${entry.ref}`);
            removed = true;
          }
          seen.add(key);
        }
        for (const c of list) if (!seen.has(c)) commands.push(`add acl ${file} ${c}`);
        if (commands.length > 0) {
          const answer = await this.admin(commands.join(';'), signal);
          if (/unknown|error|not found|invalid/i.test(answer)) throw new Error(`the edge refused an ACL change: ${answer.trim()}`);
          changed = true;
        }
      }
      if (removed || !this.swept.has(id)) {
        if (await this.cutSessions(id, desired, signal)) changed = true;
        this.swept.add(id);
      }
      return { changed, live: true };
    });
  }

  /** Shuts down the instance's sessions whose source its access groups no longer admit. */
  private async cutSessions(id: string, desired: ReadonlyMap<AccessGroup, readonly string[]>, signal?: AbortSignal): Promise<boolean> {
    const routes = this.routes.get(id) ?? [];
    const groupOf = new Map(routes.map((r) => [frontendName(id, r.role), r.group]));
    const peers = new Set(routes.filter((r) => r.peers).map((r) => frontendName(id, r.role)));
    const admits = new Map([...desired].map(([g, list]) => [g, matcher([...list, this.opts.probeSource])]));
    const denied = (s: HaproxySession): boolean => {
      const group = groupOf.get(s.frontend);
      if (group === undefined) return false;
      if (peers.has(s.frontend) && s.source === this.opts.peerSource) return false;
      return !(admits.get(group)?.(s.source) ?? false);
    };
    let cut = false;
    const current = parseShowSess(await this.admin('show sess', signal)).filter(denied);
    if (current.length > 0) {
      await this.admin(current.map((s) => `shutdown session ${s.id}`).join(';'), signal);
      cut = true;
    }
    const procs = parseShowProc(await haproxyCommandRetrying(this.paths.masterSocket, 'show proc', READY_TIMEOUT_MS, signal));
    for (const old of procs.filter((p) => p.type === 'old-worker')) {
      const sessions = parseShowSess(await haproxyCommand(this.paths.masterSocket, `@!${old.pid} show sess`)).filter(denied);
      if (sessions.length === 0) continue;
      await haproxyCommand(this.paths.masterSocket, sessions.map((s) => `@!${old.pid} shutdown session ${s.id}`).join(';'));
      cut = true;
    }
    if (cut) this.opts.log.info({ instance: id }, 'closed connections whose source is no longer admitted');
    return cut;
  }

  /**
   * Admitted and refused connections per instance since hangar started, across reloads and
   * restarts of the edge: a worker counts from 0, so what the workers before it counted is
   * added (read just before each reload, or as last read when one died). Never decreases while
   * the instance exists. Read under the edge's lock, so that no reload happens between reading
   * the worker and adding what came before it.
   */
  async counters(): Promise<EdgeCounters[]> {
    return this.exclusive(async () => {
      const current = this.opts.supervisor.isRunning(this.unit) ? await this.readCounts() : new Map<string, Counts>();
      // a worker replaced behind hangar's back (counts lower than read before): its counts were lost
      for (const [id, last] of this.lastRead) {
        const now = current.get(id);
        if (!now || now.admitted < last.admitted || now.refused < last.refused) this.foldCounts(new Map([[id, last]]));
      }
      this.lastRead = current;
      const ids = new Set([...current.keys(), ...[...this.countedBefore.keys()].filter((id) => this.routes.has(id))]);
      return [...ids].map((instanceId) => {
        const before = this.countedBefore.get(instanceId) ?? { admitted: 0, refused: 0 };
        const now = current.get(instanceId) ?? { admitted: 0, refused: 0 };
        return { instanceId, admitted: before.admitted + now.admitted, refused: before.refused + now.refused };
      });
    });
  }

  /** What the running worker counted, per instance. */
  private async readCounts(signal?: AbortSignal): Promise<Map<string, Counts>> {
    const byInstance = new Map<string, Counts>();
    for (const f of parseShowStat(await this.admin('show stat', signal))) {
      const id = instanceOfFrontend(f.frontend);
      if (id === undefined) continue;
      const c = byInstance.get(id) ?? { admitted: 0, refused: 0 };
      c.admitted += f.admitted;
      c.refused += f.refused;
      byInstance.set(id, c);
    }
    return byInstance;
  }

  /** Adds a worker's counts to those of the workers before it; the running worker's are then none. */
  private foldCounts(counts: ReadonlyMap<string, Counts>): void {
    for (const [id, c] of counts) {
      const before = this.countedBefore.get(id) ?? { admitted: 0, refused: 0 };
      this.countedBefore.set(id, { admitted: before.admitted + c.admitted, refused: before.refused + c.refused });
    }
    this.lastRead = new Map();
  }

  /**
   * The sources the running edge admits for the instance, per access group, read from its
   * runtime API (what it enforces, whatever its files or hangar's store say).
   */
  async effective(
    id: string,
    groups: readonly AccessGroup[],
  ): Promise<{ groups: Partial<Record<AccessGroup, string[]>>; problem?: string }> {
    if (!this.opts.supervisor.isRunning(this.unit)) return { groups: {}, problem: 'the edge (haproxy) is not running' };
    const out: Partial<Record<AccessGroup, string[]>> = {};
    try {
      for (const group of groups) {
        const shown = await this.admin(`show acl ${cliWord(allowListFile(this.opts.edgeDir, id, group))}`);
        if (/^Unknown ACL/i.test(shown.trim())) return { groups: {}, problem: 'the edge has no listeners for this instance' };
        out[group] = [...new Set(parseShowAcl(shown).map((e) => parseCidr(e.pattern)?.text ?? e.pattern))].sort();
      }
    } catch (err) {
      return { groups: {}, problem: `the edge's runtime API does not answer: ${(err as Error).message}` };
    }
    return { groups: out };
  }

  private admin(line: string, signal?: AbortSignal): Promise<string> {
    return haproxyCommand(this.paths.adminSocket, line, 3000, signal);
  }

  private render(ids: readonly string[]): string {
    const instances: EdgeInstance[] = ids.map((id) => ({ id, routes: this.routes.get(id) ?? [] }));
    return renderHaproxyConfig({
      edgeDir: this.opts.edgeDir,
      bindAddress: this.opts.bindAddress,
      maxconn: this.opts.maxconn,
      probeSource: this.opts.probeSource,
      ...(this.opts.peerSource ? { peerSource: this.opts.peerSource } : {}),
      instances,
      ...(this.logAddress ? { logAddress: this.logAddress } : {}),
    });
  }

  /**
   * Brings the running HAProxy to the configuration of every known route: starts it when it
   * does not run (and some instance needs it), reloads it when its configuration differs. An
   * instance whose new listener port is held by another process is left out (and reported),
   * so that it cannot keep every other instance from changing.
   */
  private async sync(signal?: AbortSignal): Promise<void> {
    if (this.paths.masterSocket.length > MAX_SOCKET_PATH) {
      throw new TerminalError(
        `the data dir path is too long for the edge's sockets (${this.paths.masterSocket}); use a shorter --data-dir`,
      );
    }
    let running = this.opts.supervisor.isRunning(this.unit);
    if (!running) {
      // the edge died: what it had is gone, and workers it leaves behind must not hold the ports
      this.forgetLoaded();
      running = (await this.opts.supervisor.adopt(this.unit)) !== undefined;
    }
    const included: string[] = [];
    for (const id of [...this.routes.keys()].sort()) {
      if (!this.live.has(id) || this.loaded === undefined) {
        const taken = await this.takenPort(id);
        if (taken !== undefined) {
          this.blocked.set(id, `port ${taken} on ${this.opts.bindAddress} is in use by another process; the edge cannot listen on it`);
          continue;
        }
      }
      this.blocked.delete(id);
      included.push(id);
    }
    const text = this.render(included);
    if (running && text === this.loaded && !this.certificatesChanged) return;
    if (!running && included.length === 0) return;
    ensureDir(this.opts.edgeDir);
    writeFileIfChanged(this.paths.config, text);
    // cleared before: a certificate replaced during the reload asks for another one
    this.certificatesChanged = false;
    try {
      if (running) {
        // the new worker counts from 0: what this one counted is kept first
        this.foldCounts(await this.readCounts(signal).catch(() => this.lastRead));
        await this.reload(signal);
      } else await this.startProcess(signal);
    } catch (err) {
      this.certificatesChanged = true;
      throw err;
    }
    this.loaded = text;
    this.live = new Set(included);
  }

  /** A port of the instance's new listeners that another process holds, if any. */
  private async takenPort(id: string): Promise<number | undefined> {
    const running = this.opts.supervisor.isRunning(this.unit);
    for (const r of this.routes.get(id) ?? []) {
      // while our own HAProxy runs, a port it listens on is not free, and that is fine
      if (running && this.live.has(id)) continue;
      if (!(await portIsFree(r.port, [this.opts.bindAddress]))) return r.port;
    }
    return undefined;
  }

  private async startProcess(signal?: AbortSignal): Promise<void> {
    this.starting = true;
    try {
      await this.startAndWait(signal);
    } finally {
      this.starting = false;
    }
  }

  private async startAndWait(signal?: AbortSignal): Promise<void> {
    this.swept.clear();
    await this.opts.supervisor.ensureRunning(this.unit);
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      throwIfCancelled(signal, 'waiting for the edge to start');
      if (!this.opts.supervisor.isRunning(this.unit)) throw new Error(`the edge (haproxy) exited at start: ${this.alerts()}`);
      try {
        const procs = parseShowProc(await haproxyCommand(this.paths.masterSocket, 'show proc', 3000, signal));
        if (procs.some((p) => p.type === 'worker')) {
          await haproxyCommand(this.paths.adminSocket, 'show info', 3000, signal);
          this.opts.log.info({ pid: this.opts.supervisor.pidOf(this.unit) }, 'edge started');
          return;
        }
      } catch {
        /* not listening yet */
      }
      if (Date.now() > until) throw new Error(`the edge (haproxy) did not start within ${READY_TIMEOUT_MS} ms: ${this.alerts()}`);
      await sleep(10, signal);
    }
  }

  /** Seamless reload through the master: a new worker takes the listening sockets over. */
  private async reload(signal?: AbortSignal): Promise<void> {
    const before = parseShowProc(await haproxyCommandRetrying(this.paths.masterSocket, 'show proc', READY_TIMEOUT_MS, signal));
    const master = before.find((p) => p.type === 'master');
    if (!master) throw new Error('the edge master does not list itself');
    const workers = new Set(before.filter((p) => p.type === 'worker').map((p) => p.pid));
    process.kill(master.pid, 'SIGUSR2');
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      // a reload takes some 40 ms; asking the master is a local socket round trip
      await sleep(3, signal);
      throwIfCancelled(signal, 'waiting for the edge to reload');
      const procs = parseShowProc(await haproxyCommandRetrying(this.paths.masterSocket, 'show proc', READY_TIMEOUT_MS, signal));
      const m = procs.find((p) => p.type === 'master');
      if (m && m.failed > master.failed) throw new Error(`the edge rejected its new configuration: ${this.alerts()}`);
      if (m && m.reloads > master.reloads && procs.some((p) => p.type === 'worker' && !workers.has(p.pid))) {
        this.opts.log.debug({ reloads: m.reloads }, 'edge reloaded');
        return;
      }
      if (Date.now() > until) throw new Error(`the edge did not reload within ${READY_TIMEOUT_MS} ms: ${this.alerts()}`);
    }
  }

  /** The last alerts HAProxy logged, to explain a failed start or reload. */
  private alerts(): string {
    const tail = logTail(this.opts.edgeDir, 40)
      .split(' | ')
      .filter((l) => l.includes('[ALERT]'));
    return tail.slice(-3).join(' | ') || 'see the edge log';
  }
}
