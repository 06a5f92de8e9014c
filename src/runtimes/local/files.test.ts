import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { chownTree, ensureDir, readText, writeFileIfChanged, writeStreamAtomically } from './files.js';

// What hangar writes in a unit's directory, which may belong to the engine user while hangar
// runs as root: never through a link the unit's processes could have put there, and owned by the
// unit's user when it has one. Changing owners needs root (CI runs as root).

const rootCases = process.getuid?.() === 0 || process.env.CI === 'true';
if (!rootCases) console.warn('changing owners needs root: those cases of the unit files are left out');

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A unit's directory, and a file outside it that a link inside points to. */
function unitWithLink(linkName: string): { dir: string; outside: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-files-'));
  made.push(dir);
  const outside = join(dir, 'outside');
  writeFileSync(outside, "not the unit's", { mode: 0o600 });
  ensureDir(join(dir, 'unit'));
  symlinkSync(outside, join(dir, 'unit', linkName));
  return { dir, outside };
}

describe('files in a unit directory', () => {
  it('a link in place of a file is neither read nor written through: a write replaces the link', () => {
    const { dir, outside } = unitWithLink('redis.conf');
    const path = join(dir, 'unit', 'redis.conf');
    expect(readText(path)).toBeUndefined();
    expect(writeFileIfChanged(path, 'port 1\n')).toBe(true);
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('port 1\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(outside, 'utf8')).toBe("not the unit's");
  });

  it('a stream write replaces a link left where it writes aside (`.partial`), never writing through it', async () => {
    const { dir, outside } = unitWithLink('restore.rdb.partial');
    const path = join(dir, 'unit', 'restore.rdb');
    expect(await writeStreamAtomically(path, Readable.from([Buffer.from('REDIS0011')]))).toBe(9);
    expect(readFileSync(path, 'utf8')).toBe('REDIS0011');
    expect(readFileSync(outside, 'utf8')).toBe("not the unit's");
  });

  it.runIf(rootCases)("gives what it writes to the unit's user, and a tree to it without following links", async () => {
    const owner = { uid: 4242, gid: 4243 };
    const { dir, outside } = unitWithLink('link');
    const unit = join(dir, 'unit');
    ensureDir(join(unit, 'appendonlydir.restore', 'deeper'), owner);
    for (const d of [join(unit, 'appendonlydir.restore'), join(unit, 'appendonlydir.restore', 'deeper')]) {
      expect({ d, uid: statSync(d).uid, gid: statSync(d).gid }).toEqual({ d, ...owner });
    }
    // the existing directory above, not made by the call, is not
    expect(statSync(unit).uid).toBe(0);
    // an existing directory named is given to it (the unit's own, made by another hangar)
    ensureDir(unit, owner);
    expect(statSync(unit).uid).toBe(4242);
    writeFileIfChanged(join(unit, 'redis.conf'), 'port 1\n', owner);
    await writeStreamAtomically(join(unit, 'restore.rdb'), Readable.from([Buffer.from('REDIS')]), owner);
    for (const f of ['redis.conf', 'restore.rdb']) expect({ f, uid: statSync(join(unit, f)).uid }).toEqual({ f, uid: 4242 });
    writeFileSync(join(unit, 'made-by-tar'), 'x');
    expect(chownTree(unit, owner)).toBe(2); // made-by-tar and the link itself
    expect(lstatSync(join(unit, 'link')).uid).toBe(4242);
    expect(statSync(outside).uid).toBe(0);
    expect(chownTree(unit, owner)).toBe(0);
  });
});
