import {
  closeSync,
  constants,
  createWriteStream,
  fchownSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TerminalError } from '../../domain/errors.js';

/**
 * Who owns what is written for a unit when its processes run as another user than hangar (hangar
 * runs as root, its engines as the engine user): ids to hand files and directories to.
 */
export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** A full disk does not heal by retrying: the instance must fail with the reason instead. */
function terminalIfFull(err: unknown, path: string): never {
  if ((err as NodeJS.ErrnoException).code === 'ENOSPC') {
    throw new TerminalError(`no space left on the device holding ${path}`, { cause: err });
  }
  throw err;
}

/** Gives a path (itself only, never what a link points to) to `owner` unless it has it. */
function own(path: string, owner: Owner): boolean {
  const st = lstatSync(path);
  if (st.uid === owner.uid && st.gid === owner.gid) return false;
  lchownSync(path, owner.uid, owner.gid);
  return true;
}

/**
 * Creates a directory (and its parents) readable by the owner only. With `owner`, the
 * directories it creates, and `path` itself if it exists with another owner, become theirs.
 */
export function ensureDir(path: string, owner?: Owner): void {
  let first: string | undefined;
  try {
    first = mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (err) {
    terminalIfFull(err, path);
  }
  if (!owner) return;
  if (first === undefined) {
    own(path, owner);
    return;
  }
  // every directory made, from the first one down to `path`
  let dir = first;
  own(dir, owner);
  for (const part of relative(first, path).split(sep).filter(Boolean)) {
    dir = join(dir, part);
    own(dir, owner);
  }
}

/**
 * Gives `path` and everything under it to `owner`, without following links (a link in a unit's
 * directory may point anywhere: its target is left alone). Children first, `path` last: a walk cut
 * short leaves `path` with its old owner, which is what tells that it must be walked again.
 * Returns how many entries changed owner.
 */
export function chownTree(path: string, owner: Owner): number {
  let changed = 0;
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (st.isDirectory()) for (const name of readdirSync(path)) changed += chownTree(join(path, name), owner);
  if (own(path, owner)) changed++;
  return changed;
}

/**
 * A file's text, or undefined when there is none. A link in its place counts as none: hangar
 * (root) does not read through a link a unit's process may have made, and a write replaces it.
 */
export function readText(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP') return undefined;
    throw err;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens a new file for writing, mode 0600, refusing one that exists (a link left in its place
 * included: hangar, root, must not write through a link a unit's process may have made).
 */
function openNew(path: string): number {
  rmSync(path, { force: true });
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
}

/**
 * Replaces a file atomically (write aside, then rename), mode 0600 since configuration holds
 * passwords, owned by `owner` when given. Does nothing when the content is already there; says
 * whether it wrote.
 */
export function writeFileIfChanged(path: string, content: string, owner?: Owner): boolean {
  if (readText(path) === content) return false;
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    const fd = openNew(tmp);
    try {
      const data = Buffer.from(content);
      for (let at = 0; at < data.length; ) at += writeSync(fd, data, at);
      if (owner) fchownSync(fd, owner.uid, owner.gid);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    terminalIfFull(err, path);
  }
  return true;
}

/**
 * Writes a stream into `path` atomically: into `<path>.partial` first (fsynced), renamed once
 * complete. When `source` fails (a decryption or checksum error), the disk fills or the process
 * dies, no file appears under `path`; a leftover `.partial` is replaced by the next write. Owned
 * by `owner` when given. Resolves with the bytes written.
 */
export async function writeStreamAtomically(path: string, source: Readable, owner?: Owner): Promise<number> {
  const tmp = `${path}.partial`;
  let bytes = 0;
  try {
    const fd = openNew(tmp);
    try {
      if (owner) fchownSync(fd, owner.uid, owner.gid);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    const out = createWriteStream('', { fd, flush: true });
    await pipeline(source, out);
    bytes = out.bytesWritten;
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new Error(`no space left on the device holding ${path}`, { cause: err });
    throw err;
  }
  return bytes;
}
