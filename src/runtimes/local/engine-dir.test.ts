import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../config.js';
import { engineDirName, engineDirReport, engineDirUser, ensureEngineDirs, resolveEngineDir } from './engine-dir.js';
import { ENGINE_DATA_DIR_MODE } from './engine-user.js';

// Where the instances' directories of a data dir are. Changing owners needs root: CI runs as
// root; elsewhere those cases are left out, saying so.

const asRoot = process.getuid?.() === 0;
const rootCases = asRoot || process.env.CI === 'true';
if (!rootCases) console.warn('changing owners needs root: the ensureEngineDirs and engineDirReport cases are left out');

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A temporary directory others may pass through. */
function tmp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(d, 0o711);
  made.push(d);
  return d;
}

/** The documented name: the first 16 hex digits of the SHA-256 of the data dir's real path. */
const hashed = (realPath: string) => createHash('sha256').update(realPath).digest('hex').slice(0, 16);

/** A data dir in a directory of its own (`top`), which the engine user may pass or not (chmod top). */
function dataDirIn(prefix: string): { top: string; dataDir: string; base: string } {
  const root = tmp(prefix);
  const top = join(root, 'home');
  const dataDir = join(top, 'data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return { top, dataDir, base: join(root, 'var', 'lib', 'hangar-engines') };
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
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('resolveEngineDir', () => {
  const user = { uid: 4242, gid: 4243 };

  it('is <data dir>/instances when hangar does not run as root, whatever the rest', () => {
    const { top, dataDir, base } = dataDirIn('hangar-enginedir-');
    chmodSync(top, 0o700);
    mkdirSync(join(base, engineDirName(dataDir), '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    expect(resolveEngineDir(dataDir, undefined, base)).toEqual({ path: join(dataDir, 'instances'), outside: false });
    expect(engineDirUser(user, 1000)).toBeUndefined();
    expect(engineDirUser(user, 0)).toEqual(user);
    // engines as root (HANGAR_ENGINE_USER=root): root's reach, which is everywhere
    expect(engineDirUser(undefined, 0)).toEqual({ uid: 0, gid: 0 });
  });

  it('is <data dir>/instances when the engine user can pass through the directories above the data dir', () => {
    const { top, dataDir, base } = dataDirIn('hangar-enginedir-');
    chmodSync(top, 0o711);
    expect(resolveEngineDir(dataDir, user, base)).toEqual({ path: join(dataDir, 'instances'), outside: false });
  });

  it('is outside the data dir when it cannot, under a name of the real path of the data dir: the same at every start, through a link, before the data dir is made', () => {
    const { top, dataDir, base } = dataDirIn('hangar-enginedir-');
    chmodSync(top, 0o700);
    const expected = join(base, hashed(realpathSync(dataDir)));
    const dir = resolveEngineDir(dataDir, user, base);
    expect(dir).toEqual({
      path: expected,
      outside: true,
      reason: expect.stringMatching(
        new RegExp(`^the engine user cannot reach ${join(dataDir, 'instances')}: ${top} \\(mode 0700, owner uid \\d+\\)`),
      ),
    });
    expect(resolveEngineDir(dataDir, user, base)).toEqual(dir);
    const link = join(dirname(top), 'link');
    symlinkSync(dataDir, link);
    expect(resolveEngineDir(link, user, base).path).toBe(expected);
    // not made yet: named as it will be
    const later = join(top, 'later', 'data');
    expect(resolveEngineDir(later, user, base).path).toBe(join(base, hashed(join(realpathSync(top), 'later', 'data'))));
    // another data dir: another directory
    expect(resolveEngineDir(join(top, 'other'), user, base).path).not.toBe(expected);
  });

  it('keeps instances where they are: in the data dir once the engine user cannot reach it, outside it once it can', () => {
    const { top, dataDir, base } = dataDirIn('hangar-enginedir-');
    const inside = join(dataDir, 'instances');
    const outside = join(base, engineDirName(dataDir));
    chmodSync(top, 0o700);
    mkdirSync(join(inside, '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    expect(resolveEngineDir(dataDir, user, base)).toEqual({ path: inside, outside: false });
    // an empty instances/ holds nothing to keep
    rmSync(join(inside, '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    expect(resolveEngineDir(dataDir, user, base).path).toBe(outside);

    mkdirSync(join(outside, '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    chmodSync(top, 0o711);
    expect(resolveEngineDir(dataDir, user, base)).toEqual({
      path: outside,
      outside: true,
      reason: expect.stringMatching(/^an earlier start put them there .*: they stay, for their engines to be adopted$/),
    });
    // emptied (its last instance deleted): back into the data dir the user can reach
    rmSync(join(outside, '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    expect(resolveEngineDir(dataDir, user, base).path).toBe(inside);
  });
});

describe.runIf(rootCases)('ensureEngineDirs', () => {
  const user = { name: 'engine', uid: 4242, gid: 4243 };

  /** A data dir as an earlier hangar left it, running everything as root. */
  function earlierDataDir(): { dataDir: string; unit: string } {
    const top = tmp('hangar-dirs-');
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
    expect(ensureEngineDirs(dataDir, user, log)).toEqual({ path: join(dataDir, 'instances'), outside: false });
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
    expect(lines().filter((l) => /outside the data dir/.test(l.msg))).toEqual([]);
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

  it("puts the instances' directories outside a data dir the engine user cannot reach: the directories above made 0711 root's, its own 0700 the user's; the data dir stays 0700; said at each start", () => {
    const { top, dataDir, base } = dataDirIn('hangar-dirs-');
    chmodSync(top, 0o700);
    const { log, lines } = recordingLog();
    const dir = ensureEngineDirs(dataDir, user, log, base);
    const path = join(base, hashed(realpathSync(dataDir)));
    expect(dir).toMatchObject({ path, outside: true });
    for (const d of [dirname(dirname(base)), dirname(base), base]) {
      expect({ d, mode: modeOf(d), ...owner(d) }).toEqual({ d, mode: '711', uid: 0, gid: 0 });
    }
    expect({ mode: modeOf(path), ...owner(path) }).toEqual({ mode: '700', uid: user.uid, gid: user.gid });
    expect({ mode: modeOf(dataDir), ...owner(dataDir) }).toEqual({ mode: '700', uid: 0, gid: 0 });
    expect(lines().filter((l) => /outside the data dir/.test(l.msg))).toEqual([
      expect.objectContaining({ dir: path, dataDir, reason: expect.stringContaining(`${top} (mode 0700`) }),
    ]);
    // made for the user: nothing handed over
    expect(lines().filter((l) => /handed over/.test(l.msg))).toEqual([]);

    // a unit's directory made as root (a hangar killed before handing it over) is handed over at the next start
    const unit = join(path, '65a1b2c3d4e5f60718293a4b', 'primary');
    mkdirSync(unit, { recursive: true });
    writeFileSync(join(unit, 'redis.conf'), 'port 1');
    // once reachable, the data dir's instances stay outside it
    chmodSync(top, 0o711);
    expect(ensureEngineDirs(dataDir, user, log, base)).toMatchObject({ path, outside: true });
    expect(owner(join(unit, 'redis.conf'))).toEqual({ uid: user.uid, gid: user.gid });
    expect(lines().filter((l) => /outside the data dir/.test(l.msg))).toHaveLength(2);
  });

  it('refuses, naming what to do, a data dir whose instances/ holds instances the engine user cannot reach any more', () => {
    const { top, dataDir, base } = dataDirIn('hangar-dirs-');
    mkdirSync(join(dataDir, 'instances', '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    chmodSync(top, 0o700);
    const err = (() => {
      try {
        ensureEngineDirs(dataDir, user, pino({ level: 'silent' }), base);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^the engine user engine \\(uid 4242\\) cannot reach the data dir ${dataDir}: ${top} \\(mode 0700.*HANGAR_DATA_DIR.*hangar down\\) and move ${join(dataDir, 'instances')} to ${join(base, hashed(realpathSync(dataDir)))}`,
      ),
    );
  });

  it('refuses a directory for instances outside the data dir in a directory others may write to', () => {
    const { top, dataDir, base } = dataDirIn('hangar-dirs-');
    chmodSync(top, 0o700);
    mkdirSync(base, { recursive: true });
    chmodSync(base, 0o777);
    expect(() => ensureEngineDirs(dataDir, user, pino({ level: 'silent' }), base)).toThrow(
      new RegExp(
        `cannot reach the data dir ${dataDir}, nor use ${base}/[0-9a-f]{16} instead: ${base} must be a directory of root's .*mode 0777`,
      ),
    );
  });
});

describe.runIf(rootCases)('engineDirReport', () => {
  const user = { uid: 4242, gid: 4243 };

  it('says where the directories are, and what keeps the engines from them, without making anything', () => {
    const { top, dataDir, base } = dataDirIn('hangar-dirs-');
    chmodSync(top, 0o700);
    const path = join(base, engineDirName(dataDir));
    expect(engineDirReport(dataDir, user, base)).toEqual({ path, outside: true, reason: expect.stringContaining(`${top} (mode 0700`) });
    expect(lstatSync(base, { throwIfNoEntry: false })).toBeUndefined();
    // a user not made yet owns nothing
    expect(engineDirReport(dataDir, { uid: -1, gid: -1 }, base)).toMatchObject({ path, outside: true });
    mkdirSync(base, { recursive: true, mode: 0o770 });
    chmodSync(base, 0o770);
    expect(engineDirReport(dataDir, user, base).problem).toMatch(/must be a directory of root's that no one else may write to/);

    mkdirSync(join(dataDir, 'instances', '65a1b2c3d4e5f60718293a4b'), { recursive: true });
    expect(engineDirReport(dataDir, user, base)).toEqual({
      path: join(dataDir, 'instances'),
      outside: false,
      problem: expect.stringMatching(
        new RegExp(`cannot reach the data dir ${dataDir}, whose instances/ holds instances: ${top} \\(mode 0700`),
      ),
    });
  });
});
