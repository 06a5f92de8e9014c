import { execFile } from 'node:child_process';
import { readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../../config.js';
import { findExecutable } from '../../lib/binaries.js';
import { sleep } from '../../lib/time.js';

/** The OS user the engines of the local runtime run as, when it is not hangar's own. */
export interface EngineUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** A command that makes a system user, as run and as shown in messages. */
export interface UserAddCommand {
  readonly bin: string;
  readonly args: readonly string[];
  /** The command line, for messages. */
  readonly line: string;
}

/** Mode of a data dir the engine user passes through: its group (the engine user's) may enter, not list; others nothing. */
export const ENGINE_DATA_DIR_MODE = 0o710;

/** How often a failed user creation is tried again (two hangars starting at once race for /etc/passwd's lock). */
const USERADD_ATTEMPTS = 5;

/**
 * The user to run engines as, by name, or undefined when they run as hangar's own user: hangar
 * does not run as root (it cannot switch users, and has no need to), or HANGAR_ENGINE_USER says
 * `root`.
 */
export function engineUserName(config: Pick<Config, 'engineUser'>, uid = process.getuid?.()): string | undefined {
  if (uid !== 0 || config.engineUser === 'root') return undefined;
  return config.engineUser;
}

/** The user `name` in the text of a passwd file, or undefined. */
export function passwdEntry(text: string, name: string): EngineUser | undefined {
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] !== name || f.length < 4) continue;
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    if (f[2] !== '' && f[3] !== '' && Number.isInteger(uid) && Number.isInteger(gid)) return { name, uid, gid };
  }
  return undefined;
}

function run(bin: string, args: readonly string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(bin, [...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() || (err?.message ?? '') });
    });
  });
}

/**
 * Looks a user up: /etc/passwd first (no process to start), then `id` (which also knows users of
 * other name services: LDAP, sssd).
 */
export async function findUser(name: string, searchPath: string, passwdFile = '/etc/passwd'): Promise<EngineUser | undefined> {
  try {
    const found = passwdEntry(readFileSync(passwdFile, 'utf8'), name);
    if (found) return found;
  } catch {
    /* no passwd file: ask id */
  }
  const id = findExecutable('id', searchPath);
  if (!id) return undefined;
  const [u, g] = await Promise.all([run(id, ['-u', name]), run(id, ['-g', name])]);
  const uid = Number(u.output);
  const gid = Number(g.output);
  return u.code === 0 && g.code === 0 && /^\d+$/.test(u.output) && /^\d+$/.test(g.output) ? { name, uid, gid } : undefined;
}

/**
 * The command that makes the engine user on this machine: a system user with a group of its own,
 * no home directory and no login shell. `useradd` (shadow's, on most distributions), else Debian's
 * `adduser`; undefined when neither is found. `find` locates a program (PATH, then the sbin dirs).
 */
export function userAddCommand(name: string, find: (program: string) => string | undefined): UserAddCommand | undefined {
  const useradd = find('useradd');
  if (useradd) {
    const args = ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name];
    return { bin: useradd, args, line: `useradd ${args.join(' ')}` };
  }
  const adduser = find('adduser');
  if (adduser) {
    const args = ['--system', '--group', '--no-create-home', '--shell', '/usr/sbin/nologin', name];
    return { bin: adduser, args, line: `adduser ${args.join(' ')}` };
  }
  return undefined;
}

/** What to do when the engine user cannot be made, for messages. */
const remedy = (name: string) =>
  `make the user ${name} yourself (a system user with a group of its own), or set HANGAR_ENGINE_USER to an existing user (\`root\` runs engines as root)`;

/**
 * The engine user, made when it is missing (`useradd`, else `adduser`), with its uid and gid. A
 * ConfigError names the command and what to do when it cannot be made, and refuses a user whose
 * uid is 0 under another name than root (engines would run as root unawares).
 */
export async function ensureEngineUser(
  name: string,
  searchPath: string,
  log: Logger,
  find: (program: string) => string | undefined = (p) => findExecutable(p, searchPath),
): Promise<EngineUser> {
  let failure = '';
  for (let attempt = 0; attempt < USERADD_ATTEMPTS; attempt++) {
    const found = await findUser(name, searchPath);
    if (found) {
      if (found.uid === 0) {
        throw new ConfigError(`HANGAR_ENGINE_USER names ${name}, whose uid is 0: engines would run as root; set it to root to mean that`);
      }
      return found;
    }
    const command = userAddCommand(name, find);
    if (!command) {
      throw new ConfigError(
        `cannot make the engine user ${name}: neither useradd nor adduser was found (looked on PATH and in the sbin directories); ${remedy(name)}`,
      );
    }
    const result = await run(command.bin, command.args);
    if (result.code === 0) {
      log.info({ user: name, command: command.line }, 'engine user made');
      continue;
    }
    // another process (a second hangar starting) may hold /etc/passwd's lock, or have made the user meanwhile
    failure = `\`${command.line}\` failed (exit ${result.code}: ${result.output})`;
    await sleep(100 * (attempt + 1));
  }
  throw new ConfigError(`cannot make the engine user ${name}: ${failure}; ${remedy(name)}`);
}

/** Whether `user` may pass through a directory of these attributes (the owner's bits, else the group's, else others'). */
function searchable(st: Pick<Stats, 'uid' | 'gid' | 'mode'>, user: Pick<EngineUser, 'uid' | 'gid'>): boolean {
  if (user.uid === 0) return true;
  if (st.uid === user.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === user.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/**
 * Why `user` cannot reach `dir` through the directories above it, or undefined. Engines run
 * without supplementary groups (they are dropped when a process is started as another user), so
 * the user's own group is the only one that counts.
 */
export function traversalProblem(dir: string, user: Pick<EngineUser, 'uid' | 'gid'>): string | undefined {
  // a data dir not made yet: from the nearest directory that exists, which it will be made in
  let start = dir;
  let real: string | undefined;
  while (real === undefined) {
    try {
      real = realpathSync(start);
    } catch {
      if (dirname(start) === start) return undefined;
      start = dirname(start);
    }
  }
  const above: string[] = start === dir ? [] : [real];
  for (let d = real; dirname(d) !== d; ) {
    d = dirname(d);
    above.unshift(d);
  }
  for (const d of above) {
    const st = statSync(d);
    if (!searchable(st, user))
      return `${d} (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${st.uid}) lets it not through`;
  }
  return undefined;
}

/** What `hangar doctor` says of the user engines run as, without making anything. */
export interface EngineUserReport {
  readonly name: string;
  /** Its ids, when it exists. */
  readonly uid: number | null;
  readonly gid: number | null;
  /** One line for people. */
  readonly detail: string;
  /** What keeps engines from starting, when something does. */
  readonly problem?: string;
}

/** Who the local runtime's engines run as with this configuration, as `hangar doctor` reports it. */
export async function engineUserReport(
  config: Pick<Config, 'engineUser'>,
  searchPath: string,
  own: { readonly uid: number; readonly gid: number; readonly name: string },
): Promise<EngineUserReport> {
  const name = engineUserName(config, own.uid);
  if (name === undefined) {
    const detail =
      own.uid === 0
        ? 'root, as HANGAR_ENGINE_USER=root asks (Elasticsearch and OpenSearch refuse to run as root)'
        : `${own.name} (uid ${own.uid}), hangar's own user: HANGAR_ENGINE_USER is used only when hangar runs as root`;
    return { name: own.name, uid: own.uid, gid: own.gid, detail };
  }
  const user = await findUser(name, searchPath);
  if (user) return { name, uid: user.uid, gid: user.gid, detail: `${name}, uid ${user.uid}, gid ${user.gid}` };
  const command = userAddCommand(name, (p) => findExecutable(p, searchPath));
  if (!command) {
    return {
      name,
      uid: null,
      gid: null,
      detail: `${name}, which does not exist yet`,
      problem: `hangar serve cannot make ${name}: neither useradd nor adduser was found; ${remedy(name)}`,
    };
  }
  return {
    name,
    uid: null,
    gid: null,
    detail: `${name}, which hangar serve makes at its first start (${command.line})`,
  };
}
