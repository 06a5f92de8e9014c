import { spawnSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

/** What the figures were measured on. */
export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly os: string;
  readonly node: string;
  readonly redisServer: string;
  readonly haproxy: string;
  readonly postgresql: string;
  /** 1-minute load average when the run started and ended: a busy machine makes noisy figures. */
  readonly loadAtStart: number;
  loadAtEnd?: number;
  /** The commit of the checkout the measured binary was built from, `+changes` when its src/ differs from it. */
  readonly commit: string;
}

function firstLine(cmd: string, args: string[], pattern: RegExp): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` } });
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  return pattern.exec(text)?.[1] ?? 'not found';
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    const r = await client.query<{ server_version: string }>('SHOW server_version');
    return r.rows[0]?.server_version.split(' ')[0] ?? 'unknown';
  } catch {
    return 'unreachable';
  } finally {
    await client.end().catch(() => {});
  }
}

/** The checkout a built binary (<root>/dist/src/cli/bin.js) comes from, as `<commit>[+changes]`. */
function commitOf(bin: string): string {
  const root = join(dirname(bin), '..', '..', '..');
  const git = (args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
  const commit = git(['rev-parse', '--short', 'HEAD']).stdout?.trim();
  if (!commit) return 'unknown';
  return git(['status', '--porcelain', '--', 'src']).stdout?.trim() ? `${commit}+changes` : commit;
}

export async function describeMachine(databaseUrl: string, bin: string): Promise<Machine> {
  const osRelease = spawnSync('sh', ['-c', '. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"'], { encoding: 'utf8' }).stdout.trim();
  return {
    cpu: cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    os: osRelease || 'unknown',
    node: process.version,
    redisServer: firstLine('redis-server', ['--version'], /v=(\S+)/),
    haproxy: firstLine('haproxy', ['-v'], /HAProxy version (\S+)/),
    postgresql: await postgresVersion(databaseUrl),
    loadAtStart: Math.round(loadavg()[0]! * 100) / 100,
    commit: commitOf(bin),
  };
}

export function machineLine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Linux ${m.kernel}, Node ${m.node}, redis-server ${m.redisServer}, HAProxy ${m.haproxy}, PostgreSQL ${m.postgresql}; load ${m.loadAtStart} at start${m.loadAtEnd !== undefined ? `, ${m.loadAtEnd} at end` : ''}; hangar ${m.commit}`;
}
