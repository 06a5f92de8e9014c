import { spawn } from 'node:child_process';
import type { Processes } from './processes.js';

export interface RedisBenchmarkOptions {
  readonly port: number;
  readonly password: string;
  readonly clients: number;
  readonly requests: number;
  /** Comma-separated tests (`set,get`, `ping_mbulk`). */
  readonly tests: string;
  readonly pipeline?: number;
  /** false: a new connection for every request (redis-benchmark -k 0). */
  readonly keepAlive?: boolean;
  /** Over TLS, verifying the server against this CA file (--tls --cacert). */
  readonly caFile?: string;
}

/** Requests per second by test name (SET, GET, PING_MBULK), from redis-benchmark --csv. */
export async function redisBenchmark(procs: Processes, o: RedisBenchmarkOptions): Promise<Record<string, number>> {
  const args = [
    '-h',
    '127.0.0.1',
    '-p',
    String(o.port),
    '-a',
    o.password,
    '-c',
    String(o.clients),
    '-n',
    String(o.requests),
    '-t',
    o.tests,
    '-P',
    String(o.pipeline ?? 1),
    '-k',
    o.keepAlive === false ? '0' : '1',
    ...(o.caFile ? ['--tls', '--cacert', o.caFile] : []),
    '--csv',
  ];
  const child = procs.spawn('redis-benchmark', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('exit', resolve);
    child.once('error', reject);
  });
  if (code !== 0) throw new Error(`redis-benchmark exited with ${code}: ${err.slice(-500)}`);
  const result: Record<string, number> = {};
  for (const line of out.split('\n')) {
    const m = /^"([A-Z_]+)","([\d.]+)"/.exec(line.trim());
    if (m) result[m[1]!] = Number(m[2]);
  }
  if (Object.keys(result).length === 0) throw new Error(`redis-benchmark printed no result: ${out.slice(-500)} ${err.slice(-500)}`);
  return result;
}

/** Whether redis-benchmark is installed (Debian: redis-tools). */
export function hasRedisBenchmark(): Promise<boolean> {
  return new Promise((resolve) => {
    const c = spawn('redis-benchmark', ['--version'], { stdio: 'ignore' });
    c.once('error', () => resolve(false));
    c.once('exit', (code) => resolve(code === 0));
  });
}

/** Whether redis-benchmark speaks TLS (built with it: its help names --tls). */
export function redisBenchmarkHasTls(): Promise<boolean> {
  return new Promise((resolve) => {
    const c = spawn('redis-benchmark', ['--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    c.stdout!.on('data', (d: Buffer) => (text += d.toString()));
    c.stderr!.on('data', (d: Buffer) => (text += d.toString()));
    c.once('error', () => resolve(false));
    c.once('close', () => resolve(/--tls\b/.test(text)));
  });
}
