import { readdirSync, readFileSync, readlinkSync, type Dirent } from 'node:fs';
import { join } from 'node:path';

export interface Proc {
  readonly pid: number;
  readonly ppid: number;
  /** Real path of the program it runs. */
  readonly program: string;
  readonly cmdline: string;
}

/**
 * The program a process runs; '' once a killed process has released its memory on the way out
 * (it still exits: state R, its files and sockets not yet closed). That is not "gone" yet, as
 * hangar does not take it for gone either: only a zombie or a reaped process is.
 */
function programOf(pid: number): string {
  try {
    return readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, '');
  } catch {
    return '';
  }
}

function read(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // exited, not yet reaped; a zombie main thread whose other threads still exit (and hold
    // the process's sockets) has not exited yet
    if (rest[0] === 'X' || (rest[0] === 'Z' && readdirSync(`/proc/${pid}/task`).length <= 1)) return undefined;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    return { pid, ppid: Number(rest[1]), program: programOf(pid), cmdline };
  } catch {
    return undefined;
  }
}

/** Live processes whose command line names a path under `dir` (engines show their config file). */
export function processesUnder(dir: string): Proc[] {
  const marker = dir.endsWith('/') ? dir : `${dir}/`;
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = read(Number(name));
    if (p?.cmdline.includes(marker)) out.push(p);
  }
  return out;
}

/** Every `process.pid` file under `dir` (the runtime writes one per process it starts), with its pid. */
export function pidFiles(dir: string): { file: string; pid: number }[] {
  const out: { file: string; pid: number }[] = [];
  const walk = (d: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'process.pid') out.push({ file: p, pid: Number(readFileSync(p, 'utf8').trim()) });
    }
  };
  walk(dir);
  return out;
}

export function isAlive(pid: number): boolean {
  return read(pid) !== undefined;
}

/** Kills (SIGKILL) every process the runtime started under `dir`: by its pid files, then by command line. */
export async function killAllUnder(dir: string): Promise<void> {
  const marker = dir.endsWith('/') ? dir : `${dir}/`;
  const targets = new Set<number>();
  for (const { pid } of pidFiles(dir)) if (read(pid)?.cmdline.includes(marker)) targets.add(pid);
  for (const p of processesUnder(dir)) targets.add(p.pid);
  for (const pid of targets) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const until = Date.now() + 5000;
  while (processesUnder(dir).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}
