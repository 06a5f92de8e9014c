import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { fetchClearOfStaleConnections } from '../../helpers/fetch.js';
import { claimPortRange } from '../../helpers/ports.js';
import { killAllUnder } from './processes.js';

/**
 * Every hangar process of this test file not destroyed yet. A test that times out never reaches
 * its `finally`: what it started is killed when the file ends, rather than left running (with its
 * engines and edge) to load the machine for the files after it.
 */
const undestroyed = new Set<HangarProcess>();
afterAll(async () => {
  for (const h of [...undestroyed]) await h.destroy({ kill: true });
});

/** The built binary (`npm run build`; `npm test` builds first). */
export const BIN = join(import.meta.dirname, '..', '..', '..', 'dist', 'src', 'cli', 'bin.js');

/** The account every hangar process of these tests creates at its first start. */
export const LOGIN = 'e2e@example.com';
export const PASSWORD = 'correct-horse-battery-staple';
/**
 * How long a start may take before it counts as hung (its threads are dumped): a start takes
 * about a second of CPU, and on a busy 2-core machine it waits its turn for the CPU many times.
 */
const START_MS = 45_000;

/** The environment of the spawned commands: ours without HANGAR_* settings, which flags replace. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANGAR_')) env[k] = v;
  return { ...env, ...extra };
}

/** Each thread of a process with its state and where the kernel has it wait (a diagnosis of a hang). */
function threadsOf(pid: number): string {
  const read = (f: string) => {
    try {
      return readFileSync(f, 'utf8').trim();
    } catch {
      return '?';
    }
  };
  try {
    return readdirSync(`/proc/${pid}/task`)
      .map((tid) => {
        const state = /^State:\s*(.*)$/m.exec(read(`/proc/${pid}/task/${tid}/status`))?.[1] ?? '?';
        const stack = read(`/proc/${pid}/task/${tid}/stack`).split('\n').slice(0, 6).join(' < ');
        return `thread ${tid} (${read(`/proc/${pid}/task/${tid}/comm`)}): ${state}, waits in ${read(`/proc/${pid}/task/${tid}/wchan`)}; ${stack}`;
      })
      .join('\n');
  } catch {
    return `process ${pid} is gone`;
  }
}

/**
 * The engines of the redis service: the tests of engine behaviour run on each (`describe` per
 * engine), the others on Redis alone.
 */
export const ENGINES = ['redis', 'valkey'] as const;
export type EngineName = (typeof ENGINES)[number];

/** Each engine's server program, and where to get it. */
const SERVERS: Record<EngineName, { program: string; install: string }> = {
  redis: { program: 'redis-server', install: 'apt-get install redis-server' },
  valkey: {
    program: 'valkey-server',
    install:
      'apt-get install -t bookworm-backports valkey-server (Debian 12, with a bookworm-backports source; Debian 13 and Ubuntu 24.04 have it in their main archive)',
  },
};

const has = (bin: string) => spawnSync('sh', ['-c', `PATH="$PATH:/usr/sbin:/sbin" command -v ${bin}`], { stdio: 'ignore' }).status === 0;

/** What the local runtime needs here to run instances of `engine`, or the packages to install. */
export function missingEngines(engine: EngineName = 'redis'): string[] {
  return [has(SERVERS[engine].program) ? undefined : SERVERS[engine].program, has('haproxy') ? undefined : 'haproxy'].filter(
    (x): x is string => x !== undefined,
  );
}

/**
 * Whether the real-engine tests (of `engine`, Redis by default) can run. In CI a missing engine
 * fails the run (it must be installed there); elsewhere the tests are left out with a message
 * saying what to install.
 */
export function enginesAvailable(engine: EngineName = 'redis'): boolean {
  const missing = missingEngines(engine);
  if (missing.length === 0) return true;
  const how = missing.map((m) => (m === SERVERS[engine].program ? SERVERS[engine].install : `apt-get install ${m}`));
  const message = `the local runtime tests${engine === 'redis' ? '' : ` on ${engine}`} need ${missing.join(' and ')}: ${how.join('; ')}`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/**
 * Whether tests that mount filesystems (tmpfs) can run: they need root. CI runs as root, so
 * there a missing privilege fails the run; elsewhere the tests are left out with a message.
 */
export function canMount(): boolean {
  if (process.getuid?.() === 0) return true;
  const message = 'the filesystem fault tests mount tmpfs and need root';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** How a hangar process is started. */
export interface HangarOptions {
  /** Shared with other processes (replicas of one host); a new temp dir when left out. */
  readonly dataDir?: string;
  /** PostgreSQL instead of SQLite in the data dir. */
  readonly databaseUrl?: string;
  readonly portRange?: { readonly first: number; readonly last: number };
  /** `local` (default) or `emulated`. */
  readonly runtime?: 'local' | 'emulated';
  /** Extra settings of every start (HANGAR_*); `serve(env)` adds more for one start. */
  readonly env?: Record<string, string>;
  /** Seconds a lease lasts (HANGAR_LEASE_TTL); short by default, so that tests do not wait on a dead one's. */
  readonly leaseTtl?: number;
  /** Create the account at start, if it does not exist (the first process of a store does). Default true. */
  readonly createAccount?: boolean;
}

/** A hangar process (`hangar serve`) with a data dir and a logged-in account. */
export class HangarProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<Exit> = Promise.resolve({ code: 0, signal: null });
  private current = { text: '' };
  url = '';
  private token = '';
  readonly dataDir: string;
  /** Ports this hangar hands out. */
  readonly portRange: { first: number; last: number };
  private readonly ownsDataDir: boolean;

  private constructor(
    readonly opts: HangarOptions,
    portRange: { first: number; last: number },
  ) {
    this.ownsDataDir = opts.dataDir === undefined;
    this.dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'hangar-e2e-'));
    this.portRange = portRange;
    undestroyed.add(this);
  }

  /**
   * Starts `hangar serve` (which creates the account at its first start), logs in. Its ports come
   * from a range claimed for this test process (test/helpers/ports.ts): no other test, of this run
   * or of another checkout running at the same time, hands out one of them, so the engines and
   * edge listeners of two tests never compete for a port (and a port a test frees on purpose is
   * taken by nobody else).
   */
  static async start(opts: HangarOptions & { serveEnv?: Record<string, string> } = {}): Promise<HangarProcess> {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (npm test does)`);
    const h = new HangarProcess(opts, opts.portRange ?? (await claimPortRange()));
    await h.serve(opts.serveEnv);
    return h;
  }

  /** Another replica on the same data dir, store and port range, without an account of its own. */
  static async replicaOf(other: HangarProcess, serveEnv?: Record<string, string>): Promise<HangarProcess> {
    return HangarProcess.start({ ...other.opts, dataDir: other.dataDir, portRange: other.portRange, createAccount: false, serveEnv });
  }

  /** Starts `hangar serve` on this data dir (again, after a stop or a kill); `env` adds settings for this start only. */
  async serve(env: Record<string, string> = {}): Promise<void> {
    const args = [
      BIN,
      'serve',
      '--runtime',
      this.opts.runtime ?? 'local',
      '--port',
      '0',
      '--data-dir',
      this.dataDir,
      '--port-range',
      `${this.portRange.first}-${this.portRange.last}`,
      '--log-level',
      'info',
      // a replica of another host would wait for a dead one's leases to expire: keep them short
      '--lease-ttl',
      String(this.opts.leaseTtl ?? 2),
    ];
    if (this.opts.databaseUrl) args.push('--database-url', this.opts.databaseUrl);
    const account: Record<string, string> =
      this.opts.createAccount === false ? {} : { HANGAR_BOOTSTRAP_LOGIN: LOGIN, HANGAR_BOOTSTRAP_PASSWORD: PASSWORD };
    // stopped at once unless a test asks for a drain (HANGAR_DRAIN_PERIOD)
    const child = spawn(process.execPath, args, {
      env: childEnv({ HANGAR_DRAIN_PERIOD: '0', ...account, ...this.opts.env, ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    // each process writes to its own buffer: a stopped one must not add to the next one's
    const output = { text: '' };
    this.current = output;
    child.stdout!.on('data', (c: Buffer) => (output.text += c.toString('utf8')));
    const exited = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    this.exited = exited;
    this.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        // what each of its threads waits on, read before it is killed: a start that hangs says where
        const where = child.pid === undefined ? '' : threadsOf(child.pid);
        // not left running: the caller has no process to stop when the start fails
        child.kill('SIGKILL');
        reject(new Error(`hangar serve did not start within ${START_MS / 1000} s:\n${output.text}\n${where}`));
      }, START_MS);
      child.stderr!.on('data', (c: Buffer) => {
        output.text += c.toString('utf8');
        const m = /hangar serving on (https?:\/\/[^/\s]+)/.exec(output.text);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`hangar serve exited before serving:\n${output.text}`));
      });
    });
    const basic = Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64');
    const res = await fetch(`${this.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } });
    const body = (await res.json()) as { data: { token: string } };
    this.token = body.data.token;
  }

  /** Resolves once this hangar supervises the engines (it owns the runtime and adopted what runs). */
  async waitSupervising(ms = 15_000): Promise<void> {
    const until = Date.now() + ms;
    while (!this.supervising) {
      if (Date.now() > until) throw new Error(`hangar does not supervise the engines after ${ms} ms:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Whether this process has taken the runtime over and adopted what runs (it says so in its log). */
  get supervising(): boolean {
    const line = (this.opts.runtime ?? 'local') === 'local' ? 'local runtime supervising' : 'this replica owns the runtime';
    return this.log.includes(`"msg":"${line}"`);
  }

  /** The pid of the hangar process. */
  get pid(): number {
    return this.child!.pid!;
  }

  /** Whether the process runs. */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** What hangar wrote since it last started (its log), for failure messages. */
  get log(): string {
    return this.current.text;
  }

  /** The last `count` lines of its log at level warn or above, cut to 600 characters: what it said, for a failed test. */
  warnings(count = 15): string[] {
    return this.log
      .split('\n')
      .filter((l) => /"level":[45]0/.test(l))
      .slice(-count)
      .map((l) => l.slice(0, 600));
  }

  /** Resolves when the process has exited (or rejects after `ms`, with its log). */
  async waitExit(ms = 30_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`hangar did not exit within ${ms} ms:\n${this.log}`)), ms);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGTERM and wait for the exit. */
  async stop(): Promise<Exit> {
    if (this.running) this.child!.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL (a crash) and wait for the exit. */
  async kill(): Promise<Exit> {
    if (this.running) this.child!.kill('SIGKILL');
    return this.exited;
  }

  /** Stops hangar, kills every process it started under the data dir, removes the data dir (if it made it). */
  async destroy(opts: { kill?: boolean } = {}): Promise<void> {
    undestroyed.delete(this);
    await (opts.kill ? this.kill() : this.stop());
    if (!this.ownsDataDir) return;
    await killAllUnder(this.dataDir);
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  async request<T = any>(method: string, path: string, body?: unknown): Promise<Reply<T>> {
    const headers: Record<string, string> = { 'x-auth-token': this.token };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetchClearOfStaleConnections(`${this.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: the test sees the text */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  /** The token this process's account logged in with (X-Auth-Token). */
  get authToken(): string {
    return this.token;
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = any>(path: string, body?: unknown) {
    return this.request<T>('POST', path, body ?? {});
  }
  patch<T = any>(path: string, body?: unknown) {
    return this.request<T>('PATCH', path, body ?? {});
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }

  /** GET /readyz: its status and problems. */
  async readyz(): Promise<{ status: number; problems: string[] }> {
    const res = await fetch(`${this.url}/readyz`);
    const body = (await res.json()) as { problems?: string[] };
    return { status: res.status, problems: body.problems ?? [] };
  }

  /** Polls an instance until `predicate` holds for its record (undefined once it is gone). */
  async waitFor(name: string, predicate: (rec: any) => boolean, ms = 30_000): Promise<any> {
    const until = Date.now() + ms;
    let last: Reply | undefined;
    while (Date.now() < until) {
      last = await this.get(`/v2/instances/${name}/`);
      const rec = last.status === 200 ? last.body.data : undefined;
      if (predicate(rec)) return rec;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(
      `instance ${name} did not reach the expected state; last answer ${JSON.stringify(last?.body)}\nhangar log:\n${this.log}`,
    );
  }

  /**
   * The body of a redis create request: on Redis (no `engine`, as the spec's clients send it),
   * or on the engine `extra.engine` names, at the version of its server installed here.
   */
  redisBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const engine = (extra.engine as EngineName | undefined) ?? 'redis';
    return { name, plan: 500, service: 'redis', type: 'redis_ha_instance', version: engineVersion(engine), zone: 'US-Dallas', ...extra };
  }

  /** Creates a redis instance (on `extra.engine`, Redis by default) and waits until it is ACTIVE; returns its record. */
  async createRedis(name: string, extra: Record<string, unknown> = {}): Promise<RedisRecord> {
    const res = await this.post('/v2/instances/', this.redisBody(name, extra));
    if (res.status !== 200) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return this.waitFor(name, (r) => r?.state === 'ACTIVE');
  }

  /** The installed redis-server version as X.Y.Z (what the local runtime offers). */
  async redisVersion(): Promise<string> {
    return redisVersion();
  }
}

const installed = new Map<EngineName, string>();

/** The version of an engine's server installed here, as X.Y.Z (what the local runtime offers of it). */
export function engineVersion(engine: EngineName): string {
  let v = installed.get(engine);
  if (v === undefined) {
    const out = spawnSync(SERVERS[engine].program, ['--version'], { encoding: 'utf8' }).stdout ?? '';
    v = /v=(\d+\.\d+\.\d+)/.exec(out)?.[1];
    if (v === undefined) throw new Error(`${SERVERS[engine].program} --version says no version: ${SERVERS[engine].install}`);
    installed.set(engine, v);
  }
  return v;
}

/** The server program of an engine (`redis-server`, `valkey-server`). */
export function serverProgram(engine: EngineName): string {
  return SERVERS[engine].program;
}

/** The installed redis-server version as X.Y.Z. */
export function redisVersion(): string {
  return engineVersion('redis');
}

export interface RedisRecord {
  id: string;
  name: string;
  engine: string;
  version: string;
  state: string;
  state_reason?: string;
  plan: number;
  password: string;
  connect_string: string;
  public_connect_string: string;
  servicenet_connect_string: string;
}

/** The port of a `redis://host:port` connection string. */
export function portOf(connectString: string): number {
  return Number(new URL(connectString).port);
}
