import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../config.js';
import {
  ENGINE_DATA_DIR_MODE,
  engineUserName,
  ensureEngineDirs,
  ensureEngineUser,
  passwdEntry,
  traversalProblem,
  userAddCommand,
} from './engine-user.js';

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

const owner = (path: string) => {
  const st = lstatSync(path);
  return { uid: st.uid, gid: st.gid };
};

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

describe.runIf(rootCases)('ensureEngineDirs', () => {
  const user = { name: 'engine', uid: 4242, gid: 4243 };

  /** A data dir as an earlier hangar left it, running everything as root. */
  function earlierDataDir(): { dataDir: string; unit: string } {
    const top = tmp('hangar-dirs-');
    chmodSync(top, 0o711);
    const dataDir = join(top, 'data');
    const unit = join(dataDir, 'instances', '65a1b2c3d4e5f60718293a4b', 'primary');
    mkdirSync(join(unit, 'appendonlydir'), { recursive: true, mode: 0o700 });
    mkdirSync(join(dataDir, 'edge'), { mode: 0o700 });
    chmodSync(dataDir, 0o700);
    writeFileSync(join(dataDir, 'secret.key'), 'key', { mode: 0o600 });
    writeFileSync(join(dataDir, 'hangar.sqlite'), 'store', { mode: 0o600 });
    writeFileSync(join(unit, 'redis.conf'), 'port 1', { mode: 0o600 });
    writeFileSync(join(unit, 'appendonlydir', 'appendonly.aof.1.base.rdb'), 'REDIS', { mode: 0o600 });
    // a link an engine might have made: handed over itself, its target left alone
    symlinkSync(join(dataDir, 'secret.key'), join(unit, 'link'));
    return { dataDir, unit };
  }

  it("hands an earlier hangar's instances over, once and saying so; the data dir lets only the engine group through; hangar's files stay root's", () => {
    const { dataDir, unit } = earlierDataDir();
    const { log, lines } = recordingLog();
    ensureEngineDirs(dataDir, user, log);
    expect(statSync(dataDir).mode & 0o777).toBe(ENGINE_DATA_DIR_MODE);
    expect(owner(dataDir)).toEqual({ uid: 0, gid: user.gid });
    const instances = join(dataDir, 'instances');
    for (const p of [
      instances,
      join(instances, '65a1b2c3d4e5f60718293a4b'),
      unit,
      join(unit, 'redis.conf'),
      join(unit, 'appendonlydir'),
      join(unit, 'appendonlydir', 'appendonly.aof.1.base.rdb'),
      join(unit, 'link'),
    ]) {
      expect({ p, ...owner(p) }).toEqual({ p, uid: user.uid, gid: user.gid });
    }
    for (const p of ['secret.key', 'hangar.sqlite', 'edge']) expect({ p, ...owner(join(dataDir, p)) }).toEqual({ p, uid: 0, gid: 0 });
    expect(statSync(join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
    const said = lines().filter((l) => /handed over to the engine user/.test(l.msg));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ user: 'engine', uid: 4242, entries: 7 });
    // nothing more to hand over: nothing said
    ensureEngineDirs(dataDir, user, log);
    expect(lines().filter((l) => /handed over/.test(l.msg))).toHaveLength(1);
  });

  it("hands over a unit's directory left root's (a hangar killed between making and handing it over)", () => {
    const { dataDir, unit } = earlierDataDir();
    const { log, lines } = recordingLog();
    ensureEngineDirs(dataDir, user, log);
    const replica = join(dirname(unit), 'replica');
    mkdirSync(replica, { mode: 0o700 });
    writeFileSync(join(replica, 'redis.conf'), 'port 2', { mode: 0o600 });
    ensureEngineDirs(dataDir, user, log);
    expect(owner(join(replica, 'redis.conf'))).toEqual({ uid: user.uid, gid: user.gid });
    expect(
      lines()
        .filter((l) => /handed over/.test(l.msg))
        .at(-1),
    ).toMatchObject({ entries: 2 });
  });

  it('refuses, with what to do, a data dir the engine user cannot reach', () => {
    const top = tmp('hangar-dirs-');
    chmodSync(top, 0o700);
    const dataDir = join(top, 'data');
    mkdirSync(dataDir);
    expect(() => ensureEngineDirs(dataDir, user, pino({ level: 'silent' }))).toThrow(
      new RegExp(`engine user engine \\(uid 4242\\) cannot reach the data dir ${dataDir}: ${top} \\(mode 0700.*HANGAR_DATA_DIR`),
    );
  });
});
