import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, chmod, mkdir, open, symlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, normalize, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, createInflateRaw, inflateRawSync } from 'node:zlib';

/** A zip archive hangar cannot unpack (damaged, encrypted, or with a path that leaves the target). */
export class ZipError extends Error {
  override name = 'ZipError';
}

interface Entry {
  readonly name: string;
  readonly method: number;
  readonly crc: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localOffset: number;
  /** Unix mode bits (file type and permissions), when the archive was made on Unix. */
  readonly mode: number | undefined;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** Entries up to this size are inflated in memory; larger ones are streamed. */
const IN_MEMORY = 1 << 20;

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, position);
  if (bytesRead !== length) throw new ZipError('the archive ends early');
  return buf;
}

/** The central directory's place and size, from the end records (zip64 when the archive needs it). */
async function centralDirectory(fh: FileHandle, fileSize: number): Promise<{ offset: number; size: number; count: number }> {
  const tail = Math.min(fileSize, 22 + 0xffff);
  const buf = await readAt(fh, fileSize - tail, tail);
  let at = -1;
  for (let i = buf.length - 22; i >= 0; i--) {
    if (buf.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new ZipError('not a zip archive (no end of central directory)');
  let count = buf.readUInt16LE(at + 10);
  let size = buf.readUInt32LE(at + 12);
  let offset = buf.readUInt32LE(at + 16);
  if (at >= 20 && buf.readUInt32LE(at - 20) === ZIP64_LOCATOR) {
    const z = await readAt(fh, Number(buf.readBigUInt64LE(at - 20 + 8)), 56);
    if (z.readUInt32LE(0) !== ZIP64_EOCD) throw new ZipError('damaged zip64 end record');
    count = Number(z.readBigUInt64LE(32));
    size = Number(z.readBigUInt64LE(40));
    offset = Number(z.readBigUInt64LE(48));
  }
  return { offset, size, count };
}

function parseEntries(cd: Buffer, count: number): Entry[] {
  const entries: Entry[] = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CENTRAL) throw new ZipError('damaged central directory');
    const madeBy = cd.readUInt16LE(p + 4);
    const flags = cd.readUInt16LE(p + 8);
    if (flags & 1) throw new ZipError('encrypted entries are not supported');
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let compressedSize = cd.readUInt32LE(p + 20);
    let size = cd.readUInt32LE(p + 24);
    let localOffset = cd.readUInt32LE(p + 42);
    const name = cd.toString('utf8', p + 46, p + 46 + nameLen);
    // zip64: the sizes and offset that do not fit in 32 bits are in extra field 0x0001, in this order
    let e = p + 46 + nameLen;
    const extraEnd = e + extraLen;
    while (e + 4 <= extraEnd) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let q = e + 4;
        if (size === 0xffffffff) {
          size = Number(cd.readBigUInt64LE(q));
          q += 8;
        }
        if (compressedSize === 0xffffffff) {
          compressedSize = Number(cd.readBigUInt64LE(q));
          q += 8;
        }
        if (localOffset === 0xffffffff) localOffset = Number(cd.readBigUInt64LE(q));
      }
      e += 4 + len;
    }
    const external = cd.readUInt32LE(p + 38);
    const mode = madeBy >> 8 === 3 ? external >>> 16 : undefined;
    entries.push({ name, method: cd.readUInt16LE(p + 10), crc: cd.readUInt32LE(p + 16), compressedSize, size, localOffset, mode });
    p = extraEnd + commentLen;
  }
  return entries;
}

/** The path of an entry under `root`, refused when it would land outside it. */
function target(root: string, name: string): string {
  const clean = normalize(name.replace(/\\/g, '/'));
  if (isAbsolute(clean) || clean === '..' || clean.startsWith(`..${sep}`))
    throw new ZipError(`entry "${name}" leaves the target directory`);
  const out = resolve(root, clean);
  if (out !== root && !out.startsWith(`${root}${sep}`)) throw new ZipError(`entry "${name}" leaves the target directory`);
  return out;
}

/** Checks the CRC-32 of what passes through. */
function crcCheck(expected: number, name: string): Transform {
  let crc = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      crc = crc32(chunk, crc);
      done(null, chunk);
    },
    flush(done) {
      done(crc >>> 0 === expected >>> 0 ? null : new ZipError(`entry "${name}" is damaged (CRC mismatch)`));
    },
  });
}

/**
 * Unpacks the zip archive `file` into `dir` (which must exist): files with their Unix
 * permissions (0644 or 0755 when the archive has none), directories, and symbolic links whose
 * target stays inside `dir`. Stored and deflated entries; zip64 archives too. Each entry's
 * CRC-32 is checked. `onEntry` hears of each entry written.
 */
export async function unzip(file: string, dir: string, onEntry?: (done: number, total: number) => void): Promise<{ entries: number }> {
  const root = resolve(dir);
  const fh = await open(file, 'r');
  try {
    const { size: fileSize } = await fh.stat();
    const cd = await centralDirectory(fh, fileSize);
    const entries = parseEntries(await readAt(fh, cd.offset, cd.size), cd.count);
    const links: { path: string; to: string }[] = [];
    const made = new Set<string>();
    const mkdirp = async (d: string) => {
      if (made.has(d)) return;
      await mkdir(d, { recursive: true, mode: 0o755 });
      // what the umask took away: the cache is read by the user the engines run as
      for (let p = d; p !== root && !made.has(p); p = dirname(p)) {
        await chmod(p, 0o755);
        made.add(p);
      }
    };
    let done = 0;
    for (const entry of entries) {
      const path = target(root, entry.name);
      const type = entry.mode === undefined ? 0 : entry.mode & S_IFMT;
      if (entry.name.endsWith('/') || type === S_IFDIR) {
        await mkdirp(path);
        onEntry?.(++done, entries.length);
        continue;
      }
      if (entry.method !== 0 && entry.method !== 8) throw new ZipError(`entry "${entry.name}" uses compression method ${entry.method}`);
      const local = await readAt(fh, entry.localOffset, 30);
      if (local.readUInt32LE(0) !== LOCAL) throw new ZipError(`entry "${entry.name}": damaged local header`);
      const start = entry.localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      await mkdirp(dirname(path));
      const perm = entry.mode !== undefined && entry.mode & 0o777 ? entry.mode & 0o777 : 0o644;
      if (type === S_IFLNK) {
        links.push({ path, to: (await content(fh, entry, start)).toString('utf8') });
      } else if (entry.compressedSize <= IN_MEMORY) {
        await writeFile(path, await content(fh, entry, start), { mode: perm });
        await chmod(path, perm);
      } else {
        const input = createReadStream(file, { start, end: start + entry.compressedSize - 1 });
        const output = createWriteStream(path, { mode: perm });
        if (entry.method === 8) await pipeline(input, createInflateRaw(), crcCheck(entry.crc, entry.name), output);
        else await pipeline(input, crcCheck(entry.crc, entry.name), output);
        await chmod(path, perm);
      }
      onEntry?.(++done, entries.length);
    }
    // Links last, so that no file is written through one.
    for (const link of links) {
      const resolved = resolve(dirname(link.path), link.to);
      if (isAbsolute(link.to) || (resolved !== root && !resolved.startsWith(`${root}${sep}`))) {
        throw new ZipError(`link "${link.path.slice(root.length + 1)}" points outside the target directory (${link.to})`);
      }
      await symlink(link.to, link.path);
      onEntry?.(++done, entries.length);
    }
    return { entries: entries.length };
  } finally {
    await fh.close();
  }
}

/** An entry's bytes, inflated and checked (for small entries and link targets). */
async function content(fh: FileHandle, entry: Entry, start: number): Promise<Buffer> {
  const raw = await readAt(fh, start, entry.compressedSize);
  const data = entry.method === 8 ? inflateRawSync(raw) : raw;
  if (data.length !== entry.size || crc32(data) >>> 0 !== entry.crc >>> 0)
    throw new ZipError(`entry "${entry.name}" is damaged (CRC mismatch)`);
  return data;
}
