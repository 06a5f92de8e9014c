import { createReadStream, createWriteStream, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { type BackupStorage, StorageError } from './backup-storage.js';

/** The suffix of an object being written; never listed, removed with the object. */
const PARTIAL = '.partial';

/**
 * Backup objects as files under a directory (mode 0600, directories 0700). An object is written
 * to `<key>.partial`, fsynced, and renamed to `<key>` once complete.
 */
export class DirectoryStorage implements BackupStorage {
  readonly kind = 'directory' as const;
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private path(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`backup key ${key} leaves the backup directory`);
    return path;
  }

  location(key: string): string {
    return pathToFileURL(this.path(key)).href;
  }

  async put(key: string, body: Readable, signal?: AbortSignal): Promise<number> {
    const path = this.path(key);
    const tmp = `${path}${PARTIAL}`;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const out = createWriteStream(tmp, { mode: 0o600, flush: true });
      await pipeline(body, out, ...(signal ? [{ signal }] : []));
      renameSync(tmp, path);
      return out.bytesWritten;
    } catch (err) {
      try {
        rmSync(tmp, { force: true });
      } catch {
        /* the directory itself is the problem: there is nothing to remove */
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT')
        throw new StorageError('full', `no space left in the backup directory ${this.root}`, { cause: err });
      if (code === 'EACCES' || code === 'EROFS' || code === 'ENOENT' || code === 'ENOTDIR' || code === 'EIO') {
        throw new StorageError('unavailable', `the backup directory ${this.root} cannot be written (${code})`, { cause: err });
      }
      throw err;
    }
  }

  async get(key: string): Promise<Readable> {
    const path = this.path(key);
    try {
      statSync(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new StorageError('not-found', `the backup object ${path} is missing`, { cause: err });
      throw new StorageError('unavailable', `the backup object ${path} cannot be read (${code})`, { cause: err });
    }
    return createReadStream(path);
  }

  async remove(key: string): Promise<void> {
    const path = this.path(key);
    rmSync(`${path}${PARTIAL}`, { force: true });
    rmSync(path, { force: true });
  }
}
