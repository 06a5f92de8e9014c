import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from './time.js';

/** Live processes whose command line names a path under `dir` (engines, the edge, ceilings started there). */
export function pidsUnder(dir: string): number[] {
  const marker = dir.endsWith('/') ? dir : `${dir}/`;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(marker)) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Data dirs (`--data-dir DIR`) of this process's own children whose command line names one under `prefix`. */
export function childDataDirs(prefix: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const dir = args[args.indexOf('--data-dir') + 1];
      if (args.includes('--data-dir') && dir?.startsWith(prefix)) out.push(dir);
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone already */
  }
}

/** SIGKILLs, by pid, every process started under `dir`, and waits until none is left (at most 10 s). */
export async function killUnder(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const pids = pidsUnder(dir);
    if (pids.length === 0) return;
    for (const pid of pids) kill(pid, 'SIGKILL');
    await sleep(20);
  }
}

/**
 * Everything the benchmark starts: child processes and temp dirs. At the end (and on Ctrl-C)
 * `stopAll` stops each child by its pid, then every process that names one of the temp dirs in
 * its command line (engines and edges that hangar started detached, ceilings' own servers), and
 * removes the dirs. Nothing else on the machine is touched.
 */
export class Processes {
  private readonly children = new Set<ChildProcess>();
  private readonly dirs = new Set<string>();
  private readonly cleanups = new Set<() => Promise<void>>();
  private stopping: Promise<void> | undefined;

  /** A fresh temp dir, removed by `stopAll` (or earlier by `removeDir`). */
  tempDir(label: string): string {
    const dir = mkdtempSync(join(tmpdir(), `hangar-bench-${label}-`));
    this.dirs.add(dir);
    return dir;
  }

  /** Kills what runs under the dir and removes it. */
  async removeDir(dir: string): Promise<void> {
    await killUnder(dir);
    rmSync(dir, { recursive: true, force: true });
    this.dirs.delete(dir);
  }

  /**
   * Runs `fn` at `stopAll`, after the processes are stopped (e.g. dropping a database);
   * `release` runs it now, `dismiss` forgets it.
   */
  defer(fn: () => Promise<void>): { release(): Promise<void>; dismiss(): void } {
    this.cleanups.add(fn);
    return {
      release: async () => {
        if (this.cleanups.delete(fn)) await fn();
      },
      dismiss: () => {
        this.cleanups.delete(fn);
      },
    };
  }

  spawn(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    if (this.stopping) throw new Error('the benchmark is stopping');
    const child = spawn(command, [...args], options);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    child.once('error', () => this.children.delete(child));
    return child;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
  async stop(child: ChildProcess, graceMs = 10_000): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => kill(child.pid!, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  stopAll(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all([...this.children].map((c) => this.stop(c, 5000)));
      for (const dir of [...this.dirs]) await this.removeDir(dir);
      for (const fn of [...this.cleanups]) {
        this.cleanups.delete(fn);
        await fn().catch((err: unknown) => process.stderr.write(`cleanup failed: ${(err as Error).message}\n`));
      }
    })();
    return this.stopping;
  }
}
