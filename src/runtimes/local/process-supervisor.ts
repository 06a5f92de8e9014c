import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  fchownSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { sleep } from '../../lib/time.js';
import { TerminalError } from '../../domain/errors.js';
import { ensureDir, writeFileIfChanged, type Owner } from './files.js';

/** Name of the pid file in a unit's directory, written when the unit is spawned. */
export const UNIT_PID_FILE = 'process.pid';
/** Name of the log file in a unit's directory: the process's stdout and stderr. */
export const UNIT_LOG_FILE = 'process.log';

/** A process the supervisor runs: an engine of an instance, or the edge. */
export interface SupervisedUnit {
  /** Unique name: `<instanceId>/<role>`, or `edge`. */
  readonly key: string;
  /** The instance to reconcile when the process dies (none for the edge). */
  readonly instanceId?: string;
  /** Its directory; its command line always contains this path (that is how it is recognised). */
  readonly dir: string;
  readonly bin: string;
  readonly args: readonly string[];
  /** Added to its environment (secrets kept off its command line). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The user and group it runs as, who also own its directory and what the supervisor writes
   * there (log, pid file); unset: hangar's own.
   */
  readonly user?: Owner;
}

/** What identifies a unit, enough to adopt, watch and stop it (spawning needs the whole unit). */
export type UnitRef = Pick<SupervisedUnit, 'key' | 'instanceId' | 'dir'>;

export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  /** One-letter state of /proc/<pid>/stat (R, S, D, T, Z, ...). */
  readonly state: string;
  /** When the process started, in clock ticks since boot: with the pid, a process's identity. */
  readonly startTime: number;
  /** The command line, arguments separated by spaces. */
  readonly cmdline: string;
}

/** A process as identified once: its pid and start time (a reused pid has another start time). */
interface Identity {
  readonly pid: number;
  readonly startTime: number;
}

/** How often units are checked for life. */
const POLL_MS = 1000;
/** A dead unit is reported again after this long if nobody restarted it. */
const REPORT_AGAIN_MS = 5000;
/** A log larger than this is moved aside (one old generation kept) when its unit starts. */
const LOG_ROTATE_BYTES = 16 * 1024 * 1024;
/** After SIGTERM, re-send it this often; a fresh replica ignores it while writing its first AOF. */
const TERM_RESEND_MS = 500;

/** Reads /proc/<pid>; undefined when there is no such process. */
export function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name in parentheses may itself hold spaces and parentheses: split after the last ')'
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    // rest[0] is field 3 of stat (state), so field 22 (starttime) is rest[19]
    return { pid, ppid: Number(rest[1]), state: rest[0] ?? '?', startTime: Number(rest[19]), cmdline };
  } catch {
    return undefined;
  }
}

/** How many threads of `pid` have not ended yet (0 once it is reaped). */
function threadsLeft(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * Whether the process has ended. A zombie whose other threads are still exiting has not: the
 * main thread of a multi-threaded program (redis-server has several) shows as a zombie while
 * the others finish, and they keep its files, listening sockets included, until the last one
 * ends. Taken for dead, its port would look held by a stranger a moment longer.
 */
const gone = (p: ProcessInfo | undefined): boolean => p === undefined || p.state === 'X' || (p.state === 'Z' && threadsLeft(p.pid) <= 1);

/** The marker a unit's command line contains: its directory, with a trailing slash. */
export function unitMarker(dir: string): string {
  return dir.endsWith('/') ? dir : `${dir}/`;
}

/**
 * Whether `pid` is a live process whose command line contains `marker`. A zombie (exited, not
 * yet reaped) is dead; a pid that the kernel reused for another program is not ours.
 */
export function isAlive(pid: number | undefined, marker: string): boolean {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0) return false;
  const p = readProcess(pid);
  return !gone(p) && p!.cmdline.includes(marker);
}

/** Whether the process identified earlier still runs (same pid, same start time, not a zombie). */
function stillRuns(id: Identity): boolean {
  const p = readProcess(id.pid);
  return !gone(p) && p!.startTime === id.startTime;
}

/**
 * Identifies `pid` as a process of the unit by its command line. A process that re-executes
 * itself (HAProxy's master does, at start and on each reload) shows an empty command line for a
 * moment: that is waited out rather than taken for another program.
 */
async function identify(pid: number | undefined, marker: string): Promise<Identity | undefined> {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0) return undefined;
  for (let attempt = 0; attempt < 50; attempt++) {
    const p = readProcess(pid);
    if (gone(p)) return undefined;
    if (p!.cmdline !== '') return p!.cmdline.includes(marker) ? { pid, startTime: p!.startTime } : undefined;
    await sleep(5);
  }
  return undefined;
}

/** The real path of the program a process runs (`/proc/<pid>/exe`), or undefined. */
function programOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}

/**
 * Every live process whose command line contains `marker` and that runs one of `programs` (real
 * paths): an operator's `tail -f` of a unit's log holds the marker too, and is not a unit.
 */
export function findProcesses(marker: string, programs: ReadonlySet<string>): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProcess(Number(name));
    if (!gone(p) && p!.cmdline.includes(marker)) {
      const program = programOf(p!.pid);
      if (program !== undefined && programs.has(program)) out.push(p!);
    }
  }
  return out;
}

function readPidFile(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, UNIT_PID_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone already */
  }
}

/** The last lines of a unit's log (at most the last 4 KiB), to explain a failure. */
export function logTail(dir: string, lines = 5): string {
  const file = join(dir, UNIT_LOG_FILE);
  let fd: number | undefined;
  try {
    const size = statSync(file).size;
    const length = Math.min(size, 4096);
    const buf = Buffer.alloc(length);
    // not through a link: the log is in a directory the unit's own user may write to
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    readSync(fd, buf, 0, length, size - length);
    return buf
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .slice(-lines)
      .join(' | ');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The size of a unit's log, in bytes (0 when it has none). */
export function logSize(dir: string): number {
  try {
    return statSync(join(dir, UNIT_LOG_FILE)).size;
  } catch {
    return 0;
  }
}

/** A unit's log from byte `offset` on, at most `max` bytes of it (the first ones: a failure says why first). */
export function logFrom(dir: string, offset: number, max = 64 * 1024): string {
  let fd: number | undefined;
  try {
    const size = statSync(join(dir, UNIT_LOG_FILE)).size;
    // a log rotated since (a new start made a new one): read it from its start
    const from = offset <= size ? offset : 0;
    const length = Math.min(size - from, max);
    const buf = Buffer.alloc(length);
    fd = openSync(join(dir, UNIT_LOG_FILE), constants.O_RDONLY | constants.O_NOFOLLOW);
    readSync(fd, buf, 0, length, from);
    return buf.toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

interface Watched extends Identity {
  readonly unit: UnitRef;
  reportedAt?: number;
}

export interface SupervisorOptions {
  /** Real paths of the programs units run; only those are ever adopted or stopped by command line. */
  readonly programs: ReadonlySet<string>;
  /** Environment of the processes (nothing of hangar's own, which may hold secrets). */
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  /** Called when a unit that should run is found dead. */
  readonly onDeath: (unit: UnitRef) => void;
}

/**
 * Runs units as detached processes that outlive hangar: each in its own session, its output in
 * its log file, its pid in its pid file. A unit is recognised by its pid file and its command line
 * (which holds the unit's directory), then followed by pid and start time, so a running unit is
 * adopted after a restart of hangar and a reused pid is never taken for it. Units that should run
 * are checked every second; a dead one is reported so that the reconciler starts it again.
 */
export class ProcessSupervisor {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: SupervisorOptions) {}

  /** Starts the liveness checks. */
  start(): void {
    this.timer ??= setInterval(() => this.poll(), POLL_MS);
    this.timer.unref();
  }

  /** Stops watching; the processes keep running. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  /** The live pid of a unit, from memory or its pid file, or undefined. */
  pidOf(unit: UnitRef): number | undefined {
    const known = this.watched.get(unit.key);
    if (known && stillRuns(known)) return known.pid;
    const fromFile = readPidFile(unit.dir);
    return isAlive(fromFile, unitMarker(unit.dir)) ? fromFile : undefined;
  }

  isRunning(unit: UnitRef): boolean {
    return this.pidOf(unit) !== undefined;
  }

  /**
   * Adopts the unit's running process: the live one its pid file names. Any other process
   * carrying the unit's marker that this one did not fork is stopped: a duplicate would fight
   * over the unit's port and files, and an orphan (a worker whose master died, a process spawned
   * by a hangar that died before writing the pid file) would hold them. Returns the adopted pid.
   */
  async adopt(unit: UnitRef): Promise<number | undefined> {
    const marker = unitMarker(unit.dir);
    const known = this.watched.get(unit.key);
    const keep = known && stillRuns(known) ? known : await identify(readPidFile(unit.dir), marker);
    const matches = findProcesses(marker, this.opts.programs);
    const pids = new Set(matches.map((m) => m.pid));
    if (keep) pids.add(keep.pid);
    // what a unit forked (workers, background saves) shares its marker: only roots are strays
    const strays = matches.filter((m) => m.pid !== keep?.pid && !pids.has(m.ppid));
    for (const stray of strays) {
      this.opts.log.warn({ unit: unit.key, pid: stray.pid }, 'stopping a process of the unit that is not the one its pid file names');
      await terminate({ pid: stray.pid, startTime: stray.startTime }, 2000);
    }
    if (!keep) return undefined;
    this.watch(unit, keep);
    return keep.pid;
  }

  /** Runs the unit unless it runs already; `started` says whether a process was spawned. */
  async ensureRunning(unit: SupervisedUnit): Promise<{ pid: number; started: boolean }> {
    const known = this.watched.get(unit.key);
    if (known && stillRuns(known)) return { pid: known.pid, started: false };
    // A unit that never ran (spawn creates its log before the process, and its pid file after)
    // has nothing to adopt and no stray to stop: the search through /proc, which costs more the
    // more processes the machine runs, is left out.
    if (!existsSync(join(unit.dir, UNIT_LOG_FILE)) && !existsSync(join(unit.dir, UNIT_PID_FILE))) {
      return { pid: await this.spawn(unit), started: true };
    }
    const adopted = await this.adopt(unit);
    if (adopted !== undefined) return { pid: adopted, started: false };
    return { pid: await this.spawn(unit), started: true };
  }

  private async spawn(unit: SupervisedUnit): Promise<number> {
    const { user } = unit;
    ensureDir(unit.dir, user);
    const logFile = join(unit.dir, UNIT_LOG_FILE);
    try {
      if (statSync(logFile).size > LOG_ROTATE_BYTES) renameSync(logFile, `${logFile}.1`);
    } catch {
      /* no log yet */
    }
    // Never through a link: the directory may belong to the unit's user, hangar may be root.
    const fd = openSync(logFile, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    let child: ChildProcess;
    try {
      if (user) fchownSync(fd, user.uid, user.gid);
      // HOME is the unit's directory: the engine user has no home of its own, and what a
      // program keeps there (a JVM's preferences) stays with the unit and goes with it.
      child = spawn(unit.bin, [...unit.args], {
        detached: true,
        stdio: ['ignore', fd, fd],
        cwd: unit.dir,
        env: { ...this.opts.env, ...unit.env, HOME: unit.dir },
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
      });
    } finally {
      closeSync(fd);
    }
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const message = `cannot run ${unit.bin}: ${(err as Error).message}`;
      throw code === 'ENOENT' || code === 'EACCES' ? new TerminalError(message, { cause: err }) : new Error(message, { cause: err });
    }
    const pid = child.pid!;
    // The unit must outlive hangar: no reference from hangar's event loop, its own session.
    child.unref();
    child.once('exit', () => setImmediate(() => this.check(unit.key, pid)));
    writeFileIfChanged(join(unit.dir, UNIT_PID_FILE), `${pid}\n`, user);
    // exec has happened when 'spawn' fires: the start time read now is the unit's
    this.watch(unit, { pid, startTime: readProcess(pid)?.startTime ?? -1 });
    this.opts.log.info({ unit: unit.key, pid }, 'process started');
    return pid;
  }

  private watch(unit: UnitRef, id: Identity): void {
    const known = this.watched.get(unit.key);
    if (known && known.pid === id.pid && known.startTime === id.startTime) return;
    this.watched.set(unit.key, { unit, ...id });
  }

  /** The units watched (those that should run). */
  units(): UnitRef[] {
    return [...this.watched.values()].map((w) => w.unit);
  }

  /** Stops watching a unit without stopping it. */
  unwatch(key: string): void {
    this.watched.delete(key);
  }

  /**
   * Stops the unit and everything carrying its marker: SIGTERM, re-sent, then SIGKILL to its
   * process group after `graceMs`. Resolves when none of its processes is left.
   */
  async stop(unit: Pick<UnitRef, 'key' | 'dir'>, graceMs = 3000): Promise<void> {
    const known = this.watched.get(unit.key);
    this.watched.delete(unit.key);
    const marker = unitMarker(unit.dir);
    const targets = new Map<number, Identity>();
    const main = known && stillRuns(known) ? known : await identify(readPidFile(unit.dir), marker);
    if (main) targets.set(main.pid, main);
    for (const p of findProcesses(marker, this.opts.programs)) if (!targets.has(p.pid)) targets.set(p.pid, p);
    await Promise.all([...targets.values()].map((id) => terminate(id, graceMs)));
    rmSync(join(unit.dir, UNIT_PID_FILE), { force: true });
  }

  /** Units watched and how many of them are alive. */
  counts(filter: (unit: UnitRef) => boolean): { up: number; expected: number } {
    let up = 0;
    let expected = 0;
    for (const w of this.watched.values()) {
      if (!filter(w.unit)) continue;
      expected++;
      if (stillRuns(w)) up++;
    }
    return { up, expected };
  }

  private poll(): void {
    for (const key of [...this.watched.keys()]) this.check(key);
  }

  private check(key: string, exitedPid?: number): void {
    const w = this.watched.get(key);
    if (!w || (exitedPid !== undefined && w.pid !== exitedPid)) return;
    if (stillRuns(w)) return;
    const now = Date.now();
    if (w.reportedAt !== undefined && now - w.reportedAt < REPORT_AGAIN_MS) return;
    w.reportedAt = now;
    this.opts.log.warn({ unit: key, pid: w.pid, log: logTail(w.unit.dir, 3) }, 'process died');
    this.opts.onDeath(w.unit);
  }
}

/** Stops one process (and, past the grace period, its whole process group). */
async function terminate(id: Identity, graceMs: number): Promise<void> {
  if (!stillRuns(id)) return;
  signal(id.pid, 'SIGTERM');
  const start = Date.now();
  let lastTerm = start;
  while (stillRuns(id)) {
    const now = Date.now();
    if (now - start >= graceMs) {
      // detached units lead their own process group: this also ends what they forked
      signal(-id.pid, 'SIGKILL');
      signal(id.pid, 'SIGKILL');
      const killedAt = Date.now();
      while (stillRuns(id)) {
        if (Date.now() - killedAt > 5000) throw new Error(`process ${id.pid} is still alive after SIGKILL`);
        await sleep(20);
      }
      return;
    }
    if (now - lastTerm >= TERM_RESEND_MS) {
      signal(id.pid, 'SIGTERM');
      lastTerm = now;
    }
    await sleep(20);
  }
}
