import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../helpers/ports.js';

/** Where Debian's PostgreSQL 15 keeps its programs. */
const BIN = '/usr/lib/postgresql/15/bin';

/**
 * Whether a PostgreSQL cluster of a test's own can be made here: the server binaries, a
 * `postgres` user, and root to run them as that user. In CI they must be there; elsewhere the
 * tests are left out with a message.
 */
export function privatePostgresAvailable(): boolean {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const ok = existsSync(join(BIN, 'initdb')) && uid.status === 0 && process.getuid?.() === 0;
  if (ok) return true;
  const message = `the store outage tests need PostgreSQL 15's server (${BIN}) and root to run it as the postgres user`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/** Runs a PostgreSQL program as the postgres user; throws with its output when it fails. */
function asPostgres(program: string, args: readonly string[]): string {
  const r = spawnSync('runuser', ['-u', 'postgres', '--', join(BIN, program), ...args], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${program} ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/**
 * A PostgreSQL cluster of one test, never the machine's shared one: its own data dir (owned by
 * postgres, in a temp dir), its own free port on loopback, its own socket directory.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** initdb, start, and a database `hangar`. */
  static async create(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-pg-'));
    chownSync(
      dir,
      Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()),
      Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()),
    );
    asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const pg = new PrivatePostgres(dir, await freePort());
    pg.start();
    asPostgres('createdb', ['-h', '127.0.0.1', '-p', String(pg.port), '-U', 'postgres', 'hangar']);
    return pg;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/hangar`;
  }

  start(): void {
    asPostgres('pg_ctl', [
      '-D',
      join(this.dir, 'data'),
      '-l',
      join(this.dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  /** Stops the server (fast: connections are closed, transactions rolled back). */
  stop(): void {
    asPostgres('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }

  /** The server's processes: the postmaster and what it forked. */
  private processes(): number[] {
    const main = Number(readFileSync(join(this.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const out = [main];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === main) out.push(Number(name));
      } catch {
        /* gone */
      }
    }
    return out;
  }

  /** Freezes the server (SIGSTOP to all its processes): connections open, nothing answers. */
  freeze(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGSTOP');
  }

  thaw(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGCONT');
  }

  /** Stops the server if it runs and removes everything. */
  destroy(): void {
    try {
      this.thaw();
    } catch {
      /* not running */
    }
    spawnSync('runuser', ['-u', 'postgres', '--', join(BIN, 'pg_ctl'), '-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop'], {
      stdio: 'ignore',
    });
    rmSync(this.dir, { recursive: true, force: true });
  }
}
