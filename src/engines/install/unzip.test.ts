import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeZip } from '../../../test/helpers/zip.js';
import { ZipError, unzip } from './unzip.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hangar-unzip-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Writes the zip and unpacks it into `<dir>/out`. */
async function unpack(zip: Buffer): Promise<string> {
  writeFileSync(join(dir, 'a.zip'), zip);
  mkdirSync(join(dir, 'out'));
  await unzip(join(dir, 'a.zip'), join(dir, 'out'));
  return join(dir, 'out');
}

describe('unzip', () => {
  it('unpacks stored and deflated files (a large one streamed), directories, modes and links that stay inside', async () => {
    const big = Buffer.alloc(5 << 20);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251;
    const out = await unpack(
      makeZip([
        { name: 'es/' },
        { name: 'es/bin/elasticsearch', data: '#!/bin/sh\n', mode: 0o755 },
        { name: 'es/config/jvm.options', data: '-Xms1g\n', deflate: true },
        { name: 'es/lib/big.jar', data: big, deflate: true },
        { name: 'es/lib/current', link: 'big.jar' },
        { name: 'es/private/', mode: 0o750 },
      ]),
    );
    expect(readFileSync(join(out, 'es/bin/elasticsearch'), 'utf8')).toBe('#!/bin/sh\n');
    expect(statSync(join(out, 'es/bin/elasticsearch')).mode & 0o777).toBe(0o755);
    expect(statSync(join(out, 'es/config/jvm.options')).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(out, 'es/lib/big.jar')).equals(big)).toBe(true);
    expect(readlinkSync(join(out, 'es/lib/current'))).toBe('big.jar');
    // every directory readable by the user the engines run as, whatever the archive or the umask says
    expect(statSync(join(out, 'es/private')).mode & 0o777).toBe(0o755);
    expect(statSync(join(out, 'es/config')).mode & 0o777).toBe(0o755);
  });

  it('unpacks what Info-ZIP makes, as unzip(1) does', async () => {
    // a real zip(1) archive when the program is here; makeZip's otherwise
    const src = join(dir, 'src');
    mkdirSync(join(src, 'pkg', 'bin'), { recursive: true });
    writeFileSync(join(src, 'pkg', 'bin', 'run'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    writeFileSync(join(src, 'pkg', 'README'), 'x'.repeat(100_000));
    let zip: Buffer;
    try {
      execFileSync('zip', ['-qry', join(dir, 'z.zip'), 'pkg'], { cwd: src });
      zip = readFileSync(join(dir, 'z.zip'));
    } catch {
      zip = makeZip([
        { name: 'pkg/bin/run', data: '#!/bin/sh\necho hi\n', mode: 0o755 },
        { name: 'pkg/README', data: 'x'.repeat(100_000), deflate: true },
      ]);
    }
    const out = await unpack(zip);
    expect(readFileSync(join(out, 'pkg/README'), 'utf8')).toBe('x'.repeat(100_000));
    expect(statSync(join(out, 'pkg/bin/run')).mode & 0o111).toBe(0o111);
  });

  it('refuses entries and links that would land outside the target, and damaged entries', async () => {
    await expect(unpack(makeZip([{ name: '../evil', data: 'x' }]))).rejects.toThrow(ZipError);
    expect(existsSync(join(dir, 'evil'))).toBe(false);
    rmSync(join(dir, 'out'), { recursive: true });
    await expect(unpack(makeZip([{ name: '/etc/evil', data: 'x' }]))).rejects.toThrow('leaves the target directory');
    rmSync(join(dir, 'out'), { recursive: true });
    await expect(unpack(makeZip([{ name: 'a/link', link: '../../outside' }]))).rejects.toThrow('points outside the target directory');
    expect(lstatSync(join(dir, 'out')).isDirectory()).toBe(true);
    rmSync(join(dir, 'out'), { recursive: true });
    await expect(unpack(makeZip([{ name: 'f', data: 'hello', deflate: true }], { corruptCrc: 'f' }))).rejects.toThrow('CRC mismatch');
    rmSync(join(dir, 'out'), { recursive: true });
    await expect(unpack(Buffer.from('not a zip at all'))).rejects.toThrow('not a zip archive');
  });
});
