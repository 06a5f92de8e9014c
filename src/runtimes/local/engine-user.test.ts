import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../config.js';
import { engineUserName, ensureEngineUser, passwdEntry, traversalProblem, userAddCommand } from './engine-user.js';

// Who engines run as and what they own. Making users and handing files to them needs root: CI
// runs as root; elsewhere those cases are left out, saying so.

const asRoot = process.getuid?.() === 0;
const rootCases = asRoot || process.env.CI === 'true';
if (!rootCases) console.warn('making users and changing owners needs root: those engine user cases are left out');

const searchPath = process.env.PATH ?? '/usr/bin:/bin';
const made: string[] = [];
const users: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
  for (const u of users) spawnSync('userdel', [u], { env: { PATH: `${searchPath}:/usr/sbin:/sbin` } });
});

function tmp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** A logger whose lines the test reads. */
function recordingLog(): { log: Logger; lines: () => { msg: string; [k: string]: unknown }[] } {
  const out: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void out.push(s) });
  return { log, lines: () => out.map((l) => JSON.parse(l)) };
}

describe('engineUserName', () => {
  it('is the setting when hangar runs as root, and nobody when it runs as another user or the setting is root', () => {
    expect(engineUserName({ engineUser: 'hangar-engine' }, 0)).toBe('hangar-engine');
    expect(engineUserName({ engineUser: 'redis' }, 0)).toBe('redis');
    expect(engineUserName({ engineUser: 'root' }, 0)).toBeUndefined();
    expect(engineUserName({ engineUser: 'hangar-engine' }, 1000)).toBeUndefined();
  });
});

describe('passwdEntry', () => {
  const passwd = [
    'root:x:0:0:root:/root:/bin/bash',
    'hangar-engine:x:998:997::/home/hangar-engine:/usr/sbin/nologin',
    'broken:x::',
    '',
  ].join('\n');
  it('reads the uid and gid of a user, and nothing for a user that is not there or a line that is not whole', () => {
    expect(passwdEntry(passwd, 'hangar-engine')).toEqual({ name: 'hangar-engine', uid: 998, gid: 997 });
    expect(passwdEntry(passwd, 'root')).toEqual({ name: 'root', uid: 0, gid: 0 });
    expect(passwdEntry(passwd, 'hangar')).toBeUndefined();
    expect(passwdEntry(passwd, 'broken')).toBeUndefined();
  });
});

describe('userAddCommand', () => {
  const only =
    (...programs: string[]) =>
    (p: string) =>
      programs.includes(p) ? `/usr/sbin/${p}` : undefined;
  it('is useradd where it exists, else adduser, else none', () => {
    expect(userAddCommand('hangar-engine', only('useradd', 'adduser'))).toEqual({
      bin: '/usr/sbin/useradd',
      args: ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', 'hangar-engine'],
      line: 'useradd --system --no-create-home --shell /usr/sbin/nologin --user-group hangar-engine',
    });
    expect(userAddCommand('hangar-engine', only('adduser'))?.line).toBe(
      'adduser --system --group --no-create-home --shell /usr/sbin/nologin hangar-engine',
    );
    expect(userAddCommand('hangar-engine', only())).toBeUndefined();
  });
});

describe('ensureEngineUser', () => {
  const log = pino({ level: 'silent' });
  const absent = `hgx${process.pid}`;

  it('fails with a ConfigError saying what to do when neither useradd nor adduser is there', async () => {
    const err = await ensureEngineUser(absent, searchPath, log, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      new RegExp(`cannot make the engine user ${absent}: neither useradd nor adduser was found.*HANGAR_ENGINE_USER`),
    );
  });

  it('fails with a ConfigError naming the command when it fails', async () => {
    const err = await ensureEngineUser(absent, searchPath, log, (p) => (p === 'useradd' ? '/bin/false' : undefined)).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(
      `\`useradd --system --no-create-home --shell /usr/sbin/nologin --user-group ${absent}\` failed (exit 1`,
    );
  }, 10_000);

  it('refuses a user whose uid is 0: engines would run as root unawares', async () => {
    await expect(ensureEngineUser('root', searchPath, log)).rejects.toThrow(/whose uid is 0/);
  });

  it.runIf(rootCases)('makes a missing user (a system user with a group of its own), then finds it', async () => {
    const name = `hgt${process.pid}`;
    users.push(name);
    const { log: recording, lines } = recordingLog();
    const user = await ensureEngineUser(name, searchPath, recording);
    const id = (flag: string) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim());
    expect(user).toEqual({ name, uid: id('-u'), gid: id('-g') });
    expect(spawnSync('id', ['-gn', name], { encoding: 'utf8' }).stdout.trim()).toBe(name);
    // a system user: below the first uid of ordinary users, no login shell, no home made
    expect(user.uid).toBeLessThan(1000);
    const entry = spawnSync('getent', ['passwd', name], { encoding: 'utf8' }).stdout.trim().split(':');
    expect(entry[6]).toBe('/usr/sbin/nologin');
    expect(lstatSync(entry[5]!, { throwIfNoEntry: false })).toBeUndefined();
    expect(lines().filter((l) => l.msg === 'engine user made')).toHaveLength(1);
    // found, not made again
    expect(await ensureEngineUser(name, searchPath, recording)).toEqual(user);
    expect(lines().filter((l) => l.msg === 'engine user made')).toHaveLength(1);
  });
});

describe('traversalProblem', () => {
  const user = { uid: 4242, gid: 4243 };

  it('names the directory above the data dir that keeps the user out, and none once others may pass', () => {
    const top = tmp('hangar-traverse-');
    const data = join(top, 'a', 'data');
    mkdirSync(data, { recursive: true });
    chmodSync(join(top, 'a'), 0o700);
    chmodSync(top, 0o711);
    expect(traversalProblem(data, user)).toMatch(new RegExp(`^${join(top, 'a')} \\(mode 0700, owner uid \\d+\\)`));
    chmodSync(join(top, 'a'), 0o711);
    expect(traversalProblem(data, user)).toBeUndefined();
    // the data dir itself does not count (hangar sets its mode), unless it is not made yet
    chmodSync(data, 0o700);
    expect(traversalProblem(data, user)).toBeUndefined();
    expect(traversalProblem(join(data, 'not-yet', 'data'), user)).toMatch(new RegExp(`^${data} \\(mode 0700`));
  });

  it.runIf(rootCases)("lets the user's group through where others may not pass", () => {
    const top = tmp('hangar-traverse-');
    chmodSync(top, 0o711);
    const data = join(top, 'a', 'data');
    mkdirSync(data, { recursive: true });
    chmodSync(join(top, 'a'), 0o710);
    expect(traversalProblem(data, user)).toMatch(/mode 0710/);
    chownSync(join(top, 'a'), 0, user.gid);
    expect(traversalProblem(data, user)).toBeUndefined();
  });
});
