import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
  constructor(
    message: string,
    /** The hangar holding the data dir, when known. */
    readonly pid?: number,
  ) {
    super(message);
  }
}

/**
 * Whether process `pid` is alive. A zombie (exited, not yet reaped by its parent) answers
 * `kill(pid, 0)` like a live process, yet holds nothing: /proc tells them apart (state Z or X).
 */
export function pidIsAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name in parentheses may hold spaces: the state follows the last ')'
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (err) {
    // No /proc (not Linux): kill() said it lives. On Linux the process went in between.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT' || !existsSync('/proc/self/stat');
  }
}

/**
 * The pid a lock file names; 0 when it names none; undefined when the file is gone. A file
 * just created by another starting hangar may still be empty: it is read again for a moment
 * before it counts as stale, so two hangars starting together never both take the lock.
 */
function readPid(file: string): number | undefined {
  for (let attempt = 0; ; attempt++) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if (/^\d+$/.test(text)) return Number(text);
    if (attempt >= 20) return 0;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}

/**
 * Makes sure one `hangar serve` at a time uses an SQLite data dir: a pid file created
 * exclusively; a pid file whose process is gone (hangar was killed) is taken over.
 * Returns the function that releases it.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'hangar.pid');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = readPid(file);
      if (pid === undefined) continue; // released meanwhile: try again
      if (pid > 0 && pid !== process.pid && pidIsAlive(pid)) {
        throw new DataDirInUseError(
          `the data dir ${dataDir} is in use by another hangar (pid ${pid}); stop it, or use another --data-dir, or PostgreSQL (--database-url) to run several replicas`,
          pid,
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new DataDirInUseError(`could not lock the data dir ${dataDir}`);
}
