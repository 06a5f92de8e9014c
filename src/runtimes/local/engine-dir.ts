import { createHash } from 'node:crypto';
import { accessSync, chmodSync, chownSync, constants, lstatSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { ConfigError } from '../../config.js';
import { ENGINE_DATA_DIR_MODE, traversalProblem, type EngineUser } from './engine-user.js';
import { chownTree } from './files.js';

/**
 * Where the instances' directories of a data dir go when the engine user cannot reach the data
 * dir's own `instances/`: `<ENGINE_DIRS>/<engineDirName(data dir)>/`. Not `/var/lib/hangar`, the
 * data dir the README suggests: a data dir is private (0700, 0710), and another hangar's engines
 * have nothing to do in it.
 */
export const ENGINE_DIRS = '/var/lib/hangar-engines';

/** Mode of ENGINE_DIRS and of the directories above it that hangar makes: anyone passes, only root lists. */
export const PASS_THROUGH_MODE = 0o711;

/** Where a local runtime keeps its instances' directories (`<id>/<role>/`). */
export interface EngineDir {
  readonly path: string;
  /** Whether it is outside the data dir (ENGINE_DIRS), because the engine user cannot reach `<data dir>/instances`. */
  readonly outside: boolean;
  /** Why it is outside the data dir, for the log and `hangar doctor`. */
  readonly reason?: string;
}

/**
 * The data dir's real path (links resolved), also for a data dir not made yet: the real path of
 * the nearest directory that exists, and the rest of the name as given.
 */
export function realDataDir(dataDir: string): string {
  const rest: string[] = [];
  let d = resolve(dataDir);
  for (;;) {
    try {
      return join(realpathSync(d), ...rest);
    } catch {
      if (dirname(d) === d) return resolve(dataDir);
      rest.unshift(basename(d));
      d = dirname(d);
    }
  }
}

/** The name of a data dir's directory under ENGINE_DIRS: the first 16 hex digits of the SHA-256 of its real path. */
export function engineDirName(dataDir: string): string {
  return createHash('sha256').update(realDataDir(dataDir)).digest('hex').slice(0, 16);
}

/** Ids for `resolveEngineDir` of a user not made yet: a new system user owns nothing. */
export const NO_USER_YET = { uid: -1, gid: -1 } as const;

/**
 * The ids `resolveEngineDir` decides by: undefined when hangar does not run as root (its engines
 * run as its own user), the engine user's when it runs them as that user, root's otherwise.
 */
export function engineDirUser(
  user: Pick<EngineUser, 'uid' | 'gid'> | undefined,
  uid = process.getuid?.(),
): Pick<EngineUser, 'uid' | 'gid'> | undefined {
  if (uid !== 0) return undefined;
  return user ?? { uid: 0, gid: 0 };
}

/** Whether `dir` is a directory with something in it. */
function holdsEntries(dir: string): boolean {
  try {
    return readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}

/**
 * Where the instances' directories of `dataDir` are, for engines that run as `user` (its ids;
 * uid 0 when they run as root), or undefined when hangar does not run as root (its engines run
 * as its own user): then always `<data dir>/instances`. As root, in this order:
 * - `<data dir>/instances` when it holds instances' directories, reachable or not (they are not
 *   moved; `ensureEngineDirs` refuses to start when the engine user cannot reach them);
 * - the data dir's directory under `base` when it holds them (they stay where an earlier start
 *   put them, so that their running engines are adopted, even once the data dir is reachable);
 * - `<data dir>/instances` when the engine user can pass through the directories above the data
 *   dir, otherwise the directory under `base`.
 * Reads only: the same answer for `hangar serve`, `hangar down` and `hangar doctor`.
 */
export function resolveEngineDir(dataDir: string, user: Pick<EngineUser, 'uid' | 'gid'> | undefined, base = ENGINE_DIRS): EngineDir {
  const inside = join(dataDir, 'instances');
  if (user === undefined || holdsEntries(inside)) return { path: inside, outside: false };
  const outside = join(base, engineDirName(dataDir));
  const blocked = traversalProblem(dataDir, user);
  if (holdsEntries(outside)) {
    const why = blocked
      ? `the engine user cannot reach ${inside}: ${blocked}`
      : `an earlier start put them there (the engine user could not reach ${inside} then): they stay, for their engines to be adopted`;
    return { path: outside, outside: true, reason: why };
  }
  if (!blocked) return { path: inside, outside: false };
  return { path: outside, outside: true, reason: `the engine user cannot reach ${inside}: ${blocked}` };
}

/**
 * Why the directory `path` under ENGINE_DIRS cannot serve engines that run as `user`, without
 * making anything, or undefined. Its parent must be a directory of root's that no one else may
 * write to (or not exist yet: hangar makes it), the directory itself not a link, the directories
 * above it must let the user through, and one not made yet must be makeable.
 */
export function outsideDirProblem(path: string, user: Pick<EngineUser, 'uid' | 'gid'>): string | undefined {
  const parent = dirname(path);
  const p = lstatSync(parent, { throwIfNoEntry: false });
  if (p && (!p.isDirectory() || p.uid !== 0 || (p.mode & 0o022) !== 0)) {
    return `${parent} must be a directory of root's that no one else may write to (it is ${p.isDirectory() ? `mode ${(p.mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${p.uid}` : 'not a directory'})`;
  }
  const own = lstatSync(path, { throwIfNoEntry: false });
  if (own && !own.isDirectory()) return `${path} is not a directory`;
  const blocked = traversalProblem(path, user);
  if (blocked) return `the engine user cannot reach ${path}: ${blocked}`;
  if (!own) {
    let nearest = parent;
    while (!statSync(nearest, { throwIfNoEntry: false })) nearest = dirname(nearest);
    try {
      accessSync(nearest, constants.W_OK);
    } catch (err) {
      return `cannot make ${path} in ${nearest} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
  }
  return undefined;
}

/**
 * Makes `path` under ENGINE_DIRS for `user`: the directories above it that are missing 0711
 * root's, itself 0700 and the user's (one made now is given at once: there is nothing to hand over).
 */
function makeOutsideDir(path: string, user: EngineUser): void {
  const missing: string[] = [];
  for (let d = dirname(path); !lstatSync(d, { throwIfNoEntry: false }); d = dirname(d)) missing.unshift(d);
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (err) {
      // another hangar starting at the same time made it
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    // the umask (077) took the others' bits off
    chmodSync(d, PASS_THROUGH_MODE);
  }
  try {
    mkdirSync(path, { mode: 0o700 });
    chownSync(path, user.uid, user.gid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = lstatSync(path);
  if ((st.mode & 0o777) !== 0o700) chmodSync(path, 0o700);
}

/** What to say when the engine user cannot reach the data dir, and so neither `instances/` in it. */
const remedy =
  'choose a data dir it can reach (HANGAR_DATA_DIR, e.g. /var/lib/hangar), or let others pass through (chmod o+x) the directories above it';

/**
 * Lays out the instances' directories for engines that run as `user` and returns where they are
 * (`resolveEngineDir`). In the data dir: the data dir becomes mode 0710 with the user's group, so
 * that the engines pass through it to `instances/` but list nothing, and everything else in it
 * (the key file, the store, the edge, backups: 0600 and 0700, hangar's) stays out of their reach.
 * Outside it (the user cannot reach it): the data dir's directory under `base`, and the data dir
 * stays 0700. That directory and everything in it is the user's: what an earlier hangar made as
 * itself (root) is handed over, once, and said so in the log; engines that run meanwhile keep
 * running as they are until their next start. A ConfigError says what keeps the user out when
 * neither place can serve: `<data dir>/instances` holds instances and the user cannot reach it,
 * or the directory outside cannot be made or reached.
 */
export function ensureEngineDirs(dataDir: string, user: EngineUser, log: Logger, base = ENGINE_DIRS): EngineDir {
  const dir = resolveEngineDir(dataDir, user, base);
  const who = `the engine user ${user.name} (uid ${user.uid})`;
  if (dir.outside) {
    const problem = outsideDirProblem(dir.path, user);
    if (problem) throw new ConfigError(`${who} cannot reach the data dir ${dataDir}, nor use ${dir.path} instead: ${problem}; ${remedy}`);
    makeOutsideDir(dir.path, user);
    log.info({ dir: dir.path, dataDir, reason: dir.reason }, "the instances' directories are outside the data dir");
  } else {
    const blocked = traversalProblem(dataDir, user);
    if (blocked) {
      // instances live there: moving them elsewhere unasked would leave their engines and data behind
      throw new ConfigError(
        `${who} cannot reach the data dir ${dataDir}: ${blocked}; ${dir.path} holds the instances' directories: ${remedy}; or stop their engines (hangar down) and move ${dir.path} to ${join(base, engineDirName(dataDir))}, where hangar then keeps them`,
      );
    }
    const st = statSync(dataDir);
    if (st.gid !== user.gid) chownSync(dataDir, st.uid, user.gid);
    if ((st.mode & 0o777) !== ENGINE_DATA_DIR_MODE) chmodSync(dataDir, ENGINE_DATA_DIR_MODE);
    mkdirSync(dir.path, { recursive: true, mode: 0o700 });
  }
  handOver(dir.path, user, log);
  return dir;
}

/** Gives the instances' directory and everything in it to `user`, saying so when there was something to give. */
function handOver(instances: string, user: EngineUser, log: Logger): void {
  const owner = { uid: user.uid, gid: user.gid };
  const owned = (path: string) => {
    const s = lstatSync(path);
    return s.uid === user.uid && s.gid === user.gid;
  };
  let changed = 0;
  if (!owned(instances)) {
    // an earlier hangar's (or another engine user's): everything, the directory itself last
    changed = chownTree(instances, owner);
  } else {
    // each instance's and unit's directory: one made by a hangar killed between making it and handing it over
    for (const id of readdirSync(instances)) {
      const dir = join(instances, id);
      if (!lstatSync(dir).isDirectory()) continue;
      if (!owned(dir)) changed += chownTree(dir, owner);
      else for (const role of readdirSync(dir)) if (!owned(join(dir, role))) changed += chownTree(join(dir, role), owner);
    }
  }
  if (changed > 0) {
    log.info(
      { user: user.name, uid: user.uid, gid: user.gid, entries: changed, dir: instances },
      'instance directories handed over to the engine user; engines that run keep running as they are until they start again',
    );
  }
}

/** What `hangar doctor` says of where the instances' directories are, without making anything. */
export interface EngineDirReport extends EngineDir {
  /** What keeps engines from starting there, when something does. */
  readonly problem?: string;
}

/**
 * Where the instances' directories are with this data dir (`resolveEngineDir`), and what keeps the
 * engines from them: `user` as for `resolveEngineDir`; a user not made yet has ids no directory
 * has (-1), as a new system user owns nothing.
 */
export function engineDirReport(dataDir: string, user: Pick<EngineUser, 'uid' | 'gid'> | undefined, base = ENGINE_DIRS): EngineDirReport {
  const dir = resolveEngineDir(dataDir, user, base);
  if (user === undefined) return dir;
  if (dir.outside) {
    const problem = outsideDirProblem(dir.path, user);
    return problem ? { ...dir, problem } : dir;
  }
  const blocked = traversalProblem(dataDir, user);
  return blocked
    ? { ...dir, problem: `the engine user cannot reach the data dir ${dataDir}, whose instances/ holds instances: ${blocked}` }
    : dir;
}
