import { createWriteStream, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TerminalError } from '../../domain/errors.js';

/** A full disk does not heal by retrying: the instance must fail with the reason instead. */
function terminalIfFull(err: unknown, path: string): never {
  if ((err as NodeJS.ErrnoException).code === 'ENOSPC') {
    throw new TerminalError(`no space left on the device holding ${path}`, { cause: err });
  }
  throw err;
}

/** Creates a directory (and its parents) readable by the owner only. */
export function ensureDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (err) {
    terminalIfFull(err, path);
  }
}

export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Replaces a file atomically (write aside, then rename), mode 0600 since configuration holds
 * passwords. Does nothing when the content is already there; says whether it wrote.
 */
export function writeFileIfChanged(path: string, content: string): boolean {
  if (readText(path) === content) return false;
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, content, { mode: 0o600 });
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
 * dies, no file appears under `path`; a leftover `.partial` is replaced by the next write.
 * Resolves with the bytes written.
 */
export async function writeStreamAtomically(path: string, source: Readable): Promise<number> {
  const tmp = `${path}.partial`;
  const out = createWriteStream(tmp, { mode: 0o600, flush: true });
  try {
    await pipeline(source, out);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new Error(`no space left on the device holding ${path}`, { cause: err });
    throw err;
  }
  return out.bytesWritten;
}
