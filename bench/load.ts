/**
 * The load run: many concurrent API clients for a while, mixing reads and writes over many
 * instances of one hangar, counting 5xx answers and lost writes (both must be zero) and
 * reporting latency percentiles.
 *
 * A lost write is a change the API answered 200 that is not what hangar shows and runs once the
 * run is over and the instances have settled:
 * - an ACL add answered 200 (and not deleted afterwards by a delete answered 200) that the API
 *   does not list, or (local runtime) the edge does not admit;
 * - an ACL delete answered 200 whose ACL the API still lists, or the edge still admits;
 * - a rename answered 200 after which the instance is not found under its new name;
 * - a resize answered 200 after which the instance's plan, or (local runtime) its engine's
 *   `maxmemory`, is not the new plan.
 *
 * Run alone: `node dist/bench/load.js [--clients 200] [--duration 60] [--instances 100]
 * [--runtime local|emulated] [--quick] [--profile DIR]`; it prints the result as JSON.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuProfileArgs } from './lib/hangar.js';
import { writeZonesFile } from './lib/zones.js';

export interface LoadOptions {
  /** A shorter, smaller run (checks that it works). */
  readonly quick?: boolean;
  /** Concurrent clients, each sending one request after the other. Default 200. */
  readonly clients?: number;
  /** How long the clients run. Default 60. */
  readonly durationS?: number;
  /** Redis instances the clients work on. Default 100. */
  readonly instances?: number;
  /** The hangar binary (dist/src/cli/bin.js of this checkout by default). */
  readonly bin?: string;
  /** `local` (real engines and edge; default) or `emulated`. */
  readonly runtime?: 'local' | 'emulated';
  /** Ports the hangar hands out (FIRST-LAST); below the kernel's ephemeral ports. */
  readonly portRange?: string;
  /** Directory for a CPU profile of the hangar under load (node --cpu-prof), written when it stops. */
  readonly profileDir?: string;
  readonly log?: (message: string) => void;
}

/** Percentiles of request latency, in milliseconds. */
export interface Latency {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export interface LoadResult extends Latency {
  readonly clients: number;
  readonly durationS: number;
  readonly instances: number;
  readonly runtime: 'local' | 'emulated';
  /** Requests answered during the run. */
  readonly requests: number;
  readonly requestsPerSecond: number;
  /** Answers with a 5xx status. */
  readonly fiveXx: number;
  /** Requests that got no answer at all (connection refused or reset). */
  readonly transportErrors: number;
  /** Changes answered 200 and not found afterwards (see the definition above). */
  readonly lostWrites: number;
  /** Writes answered 200, by kind. */
  readonly writes: Readonly<Record<string, number>>;
  /** Answers by status code. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Latency percentiles of all requests (for the benchmark table). */
  readonly latencyMs: Latency;
  /** Latency of reads and of writes apart. */
  readonly byKind: { readonly read: Latency; readonly write: Latency };
  /** Latency of each kind of write (acl add, acl delete, rename, resize), whatever its answer. */
  readonly byWrite: Readonly<Record<string, Latency>>;
  /** The first lost writes, described, to find them. */
  readonly lost: readonly string[];
}

const LOGIN = 'load@bench.test';
const PASSWORD = 'load-bench-password';
/** ACLs a client keeps at most on its instance (the quota per instance is 100). */
const ACLS_PER_CLIENT = 4;
const METRICS = ['connectedSlaves', 'spaceUsage', 'maxMemoryPolicy', 'maxClients'];

interface Reply {
  readonly status: number;
  readonly body: any;
  readonly ms: number;
}

/** A keep-alive HTTP client of the API with the account's token. */
class Client {
  private readonly agent: Agent;
  token = '';

  constructor(
    readonly url: string,
    sockets: number,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets });
  }

  call(method: string, path: string, body?: unknown, auth?: string): Promise<Reply> {
    const u = new URL(path, this.url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = auth ? { authorization: auth } : { 'x-auth-token': this.token };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, ms: performance.now() - t0 });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** `hangar serve` of the binary under test, in a temp data dir. */
async function startHangar(
  bin: string,
  runtime: 'local' | 'emulated',
  dataDir: string,
  portRange: string,
  maxInstances: number,
  profileDir: string | undefined,
): Promise<{ child: ChildProcess; url: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANGAR_')) env[k] = v;
  const args = [
    ...(profileDir ? cpuProfileArgs(profileDir, 'load') : []),
    bin,
    'serve',
    '--runtime',
    runtime,
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--port-range',
    portRange,
    '--log-level',
    'warn',
    // one account makes all the requests: no rate limit in the way of the measure
    '--rate-limit',
    '1000000000',
    '--max-instances',
    String(maxInstances),
    '--zones',
    writeZonesFile(dataDir, runtime),
  ];
  const child = spawn(process.execPath, args, {
    env: { ...env, HANGAR_BOOTSTRAP_LOGIN: LOGIN, HANGAR_BOOTSTRAP_PASSWORD: PASSWORD, HANGAR_DRAIN_PERIOD: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hangar did not start within 30 s: ${err}`)), 30_000);
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString('utf8');
      const m = /hangar serving on (https?:\/\/[^/\s]+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hangar exited (code ${code}) before serving: ${err}`));
    });
  });
  return { child, url };
}

/** Stops hangar (SIGTERM), then every process it started under the data dir (by pid), and removes the dir. */
async function cleanup(child: ChildProcess | undefined, dataDir: string): Promise<void> {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  }
  const marker = `${dataDir}/`;
  for (let attempt = 0; attempt < 250; attempt++) {
    const pids = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .filter((n) => {
        try {
          return readFileSync(`/proc/${n}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(marker);
        } catch {
          return false;
        }
      });
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  rmSync(dataDir, { recursive: true, force: true });
}

/** One command line to the edge's HAProxy runtime API, and its answer. */
function edgeCommand(dataDir: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: join(dataDir, 'edge', 'admin.sock') });
    const chunks: Buffer[] = [];
    s.setTimeout(5000, () => s.destroy(new Error('the edge did not answer')));
    s.on('connect', () => s.end(`${line}\n`));
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** What the running edge admits for an instance. */
async function edgeAdmits(dataDir: string, id: string): Promise<Set<string>> {
  const answer = await edgeCommand(dataDir, `show acl ${join(dataDir, 'edge', 'allow', `${id}.main.lst`)}`);
  return new Set(
    answer
      .split('\n')
      .map((l) => /^0x[0-9a-f]+ (\S+)$/.exec(l.trim())?.[1])
      .filter((x): x is string => x !== undefined),
  );
}

/** `CONFIG GET maxmemory` of an instance's primary, straight on its loopback port, with the instance password. */
function engineMaxmemory(dataDir: string, id: string, password: string): Promise<number> {
  const port = Number(/^port (\d+)$/m.exec(readFileSync(join(dataDir, 'instances', id, 'primary', 'redis.conf'), 'utf8'))![1]);
  const resp = (args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let text = '';
    s.setTimeout(5000, () => s.destroy(new Error('the engine did not answer')));
    s.on('connect', () => s.write(resp(['AUTH', password]) + resp(['CONFIG', 'GET', 'maxmemory'])));
    s.on('data', (c: Buffer) => {
      text += c.toString('utf8');
      const m = /\+OK\r\n\*2\r\n\$9\r\nmaxmemory\r\n\$\d+\r\n(\d+)\r\n/.exec(text);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on('error', reject);
  });
}

function percentiles(values: number[]): Latency {
  if (values.length === 0) return { p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: Math.round(sorted[sorted.length - 1]! * 100) / 100 };
}

/** The state of one instance as the clients' answered writes left it. */
interface Tracked {
  readonly id: string;
  readonly password: string;
  name: string;
  plan: number;
  resized: boolean;
  /** ACLs whose add was answered 200 and not deleted since: cidr -> id. */
  readonly acls: Map<string, string>;
  /** ACLs whose delete was answered 200. */
  readonly deleted: Set<string>;
}

/** Runs the load; see the module comment. */
export async function runLoad(opts: LoadOptions = {}): Promise<LoadResult> {
  const quick = opts.quick ?? false;
  const clients = opts.clients ?? 200;
  const durationS = opts.durationS ?? (quick ? 10 : 60);
  const count = opts.instances ?? (quick ? 20 : 100);
  const runtime = opts.runtime ?? 'local';
  const bin = opts.bin ?? join(import.meta.dirname, '..', 'src', 'cli', 'bin.js');
  const log = opts.log ?? ((m: string) => process.stderr.write(`[load] ${m}\n`));
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-load-'));
  let child: ChildProcess | undefined;
  let api: Client | undefined;
  try {
    const started = await startHangar(bin, runtime, dataDir, opts.portRange ?? '27000-28999', count + 10, opts.profileDir);
    child = started.child;
    api = new Client(started.url, clients + 8);
    const login = await api.call('GET', '/v2/tokens/', undefined, `Basic ${Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64')}`);
    if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
    api.token = login.body.data.token;
    const version = runtime === 'local' ? '7.0' : '7.0.15';
    const tracked = await createInstances(api, count, version, log);
    log(`${count} instances ACTIVE; ${clients} clients for ${durationS} s`);

    const stats = {
      all: [] as number[],
      read: [] as number[],
      write: [] as number[],
      statuses: {} as Record<string, number>,
      fiveXx: 0,
      transport: 0,
      writes: {} as Record<string, number>,
      byWrite: {} as Record<string, number[]>,
    };
    const note = (kind: 'read' | 'write', r: Reply | undefined, what?: string) => {
      if (!r) {
        stats.transport++;
        return;
      }
      stats.all.push(r.ms);
      stats[kind].push(r.ms);
      if (what !== undefined) {
        stats.byWrite[what] ??= [];
        stats.byWrite[what].push(r.ms);
      }
      stats.statuses[r.status] = (stats.statuses[r.status] ?? 0) + 1;
      if (r.status >= 500) stats.fiveXx++;
    };
    const wrote = (what: string) => (stats.writes[what] = (stats.writes[what] ?? 0) + 1);
    const until = Date.now() + durationS * 1000;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
    const elapsed = (Date.now() - t0) / 1000;

    async function client(c: number): Promise<void> {
      const inst = tracked[c % count]!;
      const owner = c < count;
      const mine: string[] = [];
      let seq = 0;
      while (Date.now() < until) {
        const roll = Math.random() * 100;
        const call = (method: string, path: string, body?: unknown) => api!.call(method, path, body).catch(() => undefined);
        if (roll < 5) {
          note('read', await call('GET', '/v2/instances/'));
        } else if (roll < 30) {
          note('read', await call('GET', `/v2/instances/${inst.name}/`));
        } else if (roll < 45) {
          note('read', await call('GET', `/v2/instances/${inst.name}/acls/`));
        } else if (roll < 65) {
          note('read', await call('GET', `/v2/redis/${inst.name}/${METRICS[seq % METRICS.length]}/`));
        } else if (roll < 90 || !owner) {
          if (mine.length < ACLS_PER_CLIENT && (roll < 80 || mine.length === 0)) {
            const cidr = `10.${c}.${(seq >> 8) & 255}.${seq & 255}`;
            const r = await call('POST', `/v2/instances/${inst.name}/acls/`, { cidr_mask: cidr, description: `load ${c}` });
            note('write', r, 'acl add');
            if (r?.status === 200) {
              inst.acls.set(cidr, r.body.data);
              mine.push(cidr);
              wrote('acl add');
            }
          } else {
            const cidr = mine.shift()!;
            const r = await call('DELETE', `/v2/instances/${inst.name}/acls/${inst.acls.get(cidr)}/`);
            note('write', r, 'acl delete');
            if (r?.status === 200) {
              inst.acls.delete(cidr);
              inst.deleted.add(cidr);
              wrote('acl delete');
            } else {
              mine.push(cidr);
            }
          }
        } else if (roll < 95 || inst.resized) {
          // the owner renames its instance back and forth
          const to = inst.name.endsWith('-r') ? inst.name.slice(0, -2) : `${inst.name}-r`;
          const r = await call('POST', `/v2/instances/${inst.name}/rename/`, { name: to });
          note('write', r, 'rename');
          if (r?.status === 200) {
            inst.name = to;
            wrote('rename');
          }
        } else {
          const r = await call('POST', `/v2/redis/${inst.name}/resize/`, { new_plan: 1000 });
          note('write', r, 'resize');
          if (r?.status === 200) {
            inst.plan = 1000;
            inst.resized = true;
            wrote('resize');
          }
        }
        seq++;
      }
    }

    log(`${stats.all.length} requests in ${elapsed.toFixed(1)} s; ${stats.fiveXx} 5xx; checking the writes`);
    const lost = await checkWrites(api, tracked, runtime === 'local' ? dataDir : undefined);
    const all = percentiles(stats.all);
    return {
      clients,
      durationS,
      instances: count,
      runtime,
      requests: stats.all.length,
      requestsPerSecond: Math.round(stats.all.length / elapsed),
      fiveXx: stats.fiveXx,
      transportErrors: stats.transport,
      lostWrites: lost.length,
      writes: stats.writes,
      statuses: stats.statuses,
      ...all,
      latencyMs: all,
      byKind: { read: percentiles(stats.read), write: percentiles(stats.write) },
      byWrite: Object.fromEntries(Object.entries(stats.byWrite).map(([k, ms]) => [k, percentiles(ms)])),
      lost: lost.slice(0, 20),
    };
  } finally {
    api?.close();
    await cleanup(child, dataDir);
  }
}

/** Creates the instances, ten at a time, and waits until all are ACTIVE. */
async function createInstances(api: Client, count: number, version: string, log: (m: string) => void): Promise<Tracked[]> {
  const out: Tracked[] = [];
  for (let i = 0; i < count; i += 10) {
    const batch = Array.from({ length: Math.min(10, count - i) }, (_, j) => `load-${i + j}`);
    const replies = await Promise.all(
      batch.map((name) =>
        api.call('POST', '/v2/instances/', { name, plan: 500, service: 'redis', type: 'redis_ha_instance', version, zone: 'US-Dallas' }),
      ),
    );
    replies.forEach((r, j) => {
      if (r.status !== 200) throw new Error(`create ${batch[j]}: ${r.status} ${JSON.stringify(r.body)}`);
      out.push({
        id: r.body.data.id,
        password: r.body.data.password,
        name: batch[j]!,
        plan: 500,
        resized: false,
        acls: new Map(),
        deleted: new Set(),
      });
    });
  }
  await settled(api, 300_000);
  log(`created ${count} instances`);
  return out;
}

/** Waits until every instance is ACTIVE (nothing building, resizing or degraded). */
async function settled(api: Client, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const list = await api.call('GET', '/v2/instances/');
    const waiting = (list.body.data as any[]).filter((r) => r.state !== 'ACTIVE');
    if (list.status === 200 && waiting.length === 0) return;
    if (Date.now() > until)
      throw new Error(`instances not ACTIVE after ${ms} ms: ${waiting.map((r) => `${r.name} ${r.state}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Every write answered 200 is what hangar shows and runs; returns the lost ones, described. */
async function checkWrites(api: Client, tracked: readonly Tracked[], dataDir: string | undefined): Promise<string[]> {
  await settled(api, 120_000);
  const lost: string[] = [];
  const byId = new Map(((await api.call('GET', '/v2/instances/')).body.data as any[]).map((r) => [r.id as string, r]));
  for (const t of tracked) {
    const rec = byId.get(t.id);
    if (!rec) {
      lost.push(`instance ${t.id} (${t.name}) is not listed`);
      continue;
    }
    if (rec.name !== t.name) lost.push(`rename: ${t.id} is called ${rec.name}, not ${t.name}`);
    if (rec.plan !== t.plan) lost.push(`resize: ${t.name} is on plan ${rec.plan}, not ${t.plan}`);
    const listed = new Set(
      ((await api.call('GET', `/v2/instances/${rec.name}/acls/`)).body.data as any[]).map((a) => a.cidr_mask as string),
    );
    // the edge may take a pass to follow the last changes: look again for a few seconds
    let admitted = dataDir ? await edgeAdmits(dataDir, t.id) : listed;
    for (let i = 0; i < 50 && dataDir && !sameSet(admitted, listed); i++) {
      await new Promise((r) => setTimeout(r, 100));
      admitted = await edgeAdmits(dataDir, t.id);
    }
    for (const cidr of t.acls.keys()) {
      if (!listed.has(cidr)) lost.push(`acl add: ${cidr} on ${t.name} is not listed`);
      if (!admitted.has(cidr)) lost.push(`acl add: ${cidr} on ${t.name} is not admitted by the edge`);
    }
    for (const cidr of t.deleted) {
      if (listed.has(cidr)) lost.push(`acl delete: ${cidr} on ${t.name} is still listed`);
      if (admitted.has(cidr)) lost.push(`acl delete: ${cidr} on ${t.name} is still admitted by the edge`);
    }
    if (dataDir) {
      const maxmemory = await engineMaxmemory(dataDir, t.id, t.password);
      if (maxmemory !== t.plan * 1024 * 1024) lost.push(`resize: the engine of ${t.name} has maxmemory ${maxmemory}, not ${t.plan} MB`);
    }
  }
  return lost;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}

/** The command line: options as flags, the result as JSON on stdout. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string' },
      duration: { type: 'string' },
      instances: { type: 'string' },
      runtime: { type: 'string' },
      bin: { type: 'string' },
      'port-range': { type: 'string' },
      profile: { type: 'string' },
      quick: { type: 'boolean' },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const runtime = values.runtime === 'emulated' ? 'emulated' : 'local';
  const result = await runLoad({
    quick: values.quick ?? false,
    ...(values.clients ? { clients: num(values.clients)! } : {}),
    ...(values.duration ? { durationS: num(values.duration)! } : {}),
    ...(values.instances ? { instances: num(values.instances)! } : {}),
    ...(values.bin ? { bin: values.bin } : {}),
    ...(values['port-range'] ? { portRange: values['port-range'] } : {}),
    ...(values.profile ? { profileDir: values.profile } : {}),
    runtime,
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  process.exitCode = result.fiveXx === 0 && result.lostWrites === 0 && result.transportErrors === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
