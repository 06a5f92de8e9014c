import type { ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Processes } from './processes.js';
import { writeZonesFile } from './zones.js';
import { now, sleep } from './time.js';

/** The built binary of this checkout; `--bin` points the benchmark at another build. */
export const DEFAULT_BIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'bin.js');

export const PASSWORD = 'bench-password-long-enough';

/** The redis version every runtime here offers (`X.Y` of redis-server 7.0.x, and emulated). */
export const REDIS_VERSION = '7.0';

export interface HangarStart {
  /** Names the temp dir (`hangar-bench-<label>-*`). */
  readonly label: string;
  readonly runtime: 'local' | 'emulated';
  readonly bin: string;
  /** The accounts to create (the first one at start, the others through the operator CLI). */
  readonly accounts: readonly string[];
  /** `FIRST-LAST`: a private range, so that nothing else on the machine hands out the same ports. */
  readonly portRange?: string;
  readonly databaseUrl?: string;
  readonly maxInstances?: number;
  /** Extra arguments of node (e.g. `--cpu-prof`). */
  readonly nodeArgs?: readonly string[];
}

export interface ApiReply<T = any> {
  readonly status: number;
  readonly body: T;
  /** Milliseconds from sending the request to the whole answer. */
  readonly ms: number;
}

/** Arguments of node that profile a hangar (node --cpu-prof), its profile named after `label`, written to `dir` when it stops. */
export function cpuProfileArgs(dir: string, label: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${label}-${Date.now()}.cpuprofile`];
}

/** The API as one account sees it. */
export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  get headers(): Record<string, string> {
    return { 'x-auth-token': this.token };
  }

  async request<T = any>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
    const headers: Record<string, string> = { 'x-auth-token': this.token };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const t0 = now();
    const send = () => fetch(`${this.url}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    let res: Response;
    try {
      res = await send();
    } catch (err) {
      // A GET whose connection failed before any answer (a kept-alive socket the server closed
      // as it was reused, which a machine under heavy load makes likely) is sent once more; a
      // change is never repeated, and an answer, whatever its status, is never retried.
      if (method !== 'GET') throw err;
      res = await send();
    }
    const text = await res.text();
    const ms = now() - t0;
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, ms };
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = any>(path: string, body: unknown = {}) {
    return this.request<T>('POST', path, body);
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }

  /** Throws unless the status is 200. */
  async ok<T = any>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
    const r = await this.request<T>(method, path, body);
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  }
}

/** An engine of a local-runtime instance, as found in the data dir's documented layout. */
export interface EngineFiles {
  readonly port: number;
  readonly pid: number | undefined;
}

/**
 * `hangar serve` as users run it: the built binary in its own process, its own temp data dir,
 * its log in a file there, rate limit and instance quota raised for the run.
 */
export class BenchHangar {
  private constructor(
    private readonly procs: Processes,
    private readonly child: ChildProcess,
    readonly dataDir: string,
    readonly url: string,
    private readonly opts: HangarStart,
  ) {}

  static async start(procs: Processes, opts: HangarStart): Promise<BenchHangar> {
    const dataDir = procs.tempDir(opts.label);
    const [first, ...others] = opts.accounts;
    const env = hangarEnv({
      HANGAR_RATE_LIMIT: '1000000000',
      // stopped at once: nothing measures the drain of a stop
      HANGAR_DRAIN_PERIOD: '0',
      HANGAR_MAX_INSTANCES: String(opts.maxInstances ?? 1000),
      ...(first ? { HANGAR_BOOTSTRAP_LOGIN: first, HANGAR_BOOTSTRAP_PASSWORD: PASSWORD } : {}),
    });
    const args = [
      ...(opts.nodeArgs ?? []),
      opts.bin,
      'serve',
      '--runtime',
      opts.runtime,
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--zones',
      writeZonesFile(dataDir, opts.runtime),
      ...(opts.portRange ? ['--port-range', opts.portRange] : []),
      ...(opts.databaseUrl ? ['--database-url', opts.databaseUrl] : []),
    ];
    const logFile = join(dataDir, 'hangar.log');
    const fd = openSync(logFile, 'a');
    let child: ChildProcess;
    try {
      child = procs.spawn(process.execPath, args, { env, stdio: ['ignore', fd, fd], cwd: dataDir });
    } finally {
      closeSync(fd);
    }
    const url = await waitServing(child, logFile);
    const h = new BenchHangar(procs, child, dataDir, url, opts);
    await Promise.all(others.map((login) => h.createAccount(login)));
    return h;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get log(): string {
    try {
      return readFileSync(join(this.dataDir, 'hangar.log'), 'utf8');
    } catch {
      return '';
    }
  }

  /** Resident memory of the hangar process, in MB. */
  rssMb(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
  }

  /** CPU time (user + system) the hangar process has used so far, in ms. */
  cpuMs(): number {
    const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  }

  /** Runs an operator command of the same binary on the same store. */
  private async createAccount(login: string): Promise<void> {
    const args = [
      this.opts.bin,
      'accounts',
      'create',
      '--data-dir',
      this.dataDir,
      '--login',
      login,
      '--password',
      PASSWORD,
      ...(this.opts.databaseUrl ? ['--database-url', this.opts.databaseUrl] : []),
    ];
    const child = this.procs.spawn(process.execPath, args, { env: hangarEnv({}), stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`accounts create ${login}: ${err}`);
  }

  /** Logs in with HTTP Basic and returns the account's API. */
  async login(login: string): Promise<Api> {
    const basic = Buffer.from(`${login}:${PASSWORD}`).toString('base64');
    const res = await fetch(`${this.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } });
    if (res.status !== 200) throw new Error(`login ${login}: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { data: { token: string } };
    return new Api(this.url, body.data.token);
  }

  /** Port and pid of an engine of an instance (local runtime). */
  engine(instanceId: string, role: 'primary' | 'replica'): EngineFiles {
    const dir = join(this.dataDir, 'instances', instanceId, role);
    const port = Number(/^port (\d+)$/m.exec(readFileSync(join(dir, 'redis.conf'), 'utf8'))?.[1]);
    let pid: number | undefined;
    try {
      pid = Number(readFileSync(join(dir, 'process.pid'), 'utf8').trim());
    } catch {
      pid = undefined;
    }
    return { port, pid };
  }

  /** Stops hangar (SIGTERM), then every engine and edge it started, and removes its data dir. */
  async stop(): Promise<void> {
    await this.procs.stop(this.child);
    await this.procs.removeDir(this.dataDir);
  }

  /** Stops hangar only (its engines keep running, as in production); for CPU profiles written at exit. */
  async stopProcess(): Promise<void> {
    await this.procs.stop(this.child);
  }
}

/** Our environment without HANGAR_* settings, plus `extra`. */
function hangarEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANGAR_')) env[k] = v;
  return { ...env, ...extra };
}

async function waitServing(child: ChildProcess, logFile: string): Promise<string> {
  const deadline = now() + 60_000;
  for (;;) {
    let text = '';
    try {
      text = readFileSync(logFile, 'utf8');
    } catch {
      /* not yet */
    }
    const m = /hangar serving on (https?:\/\/[^/\s]+)/.exec(text);
    if (m) return m[1]!;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`hangar serve exited before serving:\n${text.slice(-3000)}`);
    if (now() > deadline) throw new Error(`hangar serve did not start within 60 s:\n${text.slice(-3000)}`);
    await sleep(20);
  }
}
