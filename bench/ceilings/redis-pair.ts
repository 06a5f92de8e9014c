/**
 * Ceilings of the create, resize and delete figures, by hand: a redis-server primary and a
 * replica configured as hangar configures them (AOF, diskless sync with
 * `repl-diskless-sync-delay 0`, passwords), spawned directly and polled every millisecond.
 * - sync: from spawning the primary to `master_link_status:up` on the replica;
 * - config set: one `CONFIG SET maxmemory` on the primary, answered;
 * - stop: from SIGTERM of both to both processes gone (once the replica wrote its first AOF,
 *   before which it ignores SIGTERM).
 * Usage: node redis-pair.js DIR SEQUENTIAL CONCURRENT  (prints one JSON line)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../lib/free-port.js';
import { RespClient } from '../lib/resp.js';
import { now, sleep, until } from '../lib/time.js';

const PASSWORD = 'ceiling-password';
const [dirArg, seqArg, concArg] = process.argv.slice(2);
if (!dirArg) throw new Error('usage: redis-pair.js DIR SEQUENTIAL CONCURRENT');
const baseDir = dirArg;
const sequential = Number(seqArg ?? 5);
const concurrent = Number(concArg ?? 0);

interface Engine {
  readonly child: ChildProcess;
  readonly port: number;
  readonly exited: Promise<void>;
}

let serial = 0;

function config(dir: string, port: number, primaryPort?: number): string {
  return [
    'bind 127.0.0.1',
    `port ${port}`,
    'daemonize no',
    'logfile ""',
    `dir "${dir}"`,
    'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"',
    `requirepass "${PASSWORD}"`,
    `masterauth "${PASSWORD}"`,
    'maxmemory 500mb',
    'appendonly yes',
    'appendfsync everysec',
    'save ""',
    'repl-diskless-sync yes',
    'repl-diskless-sync-delay 0',
    ...(primaryPort ? [`replicaof 127.0.0.1 ${primaryPort}`] : []),
  ].join('\n');
}

async function startEngine(role: string, primaryPort?: number): Promise<Engine> {
  const dir = join(baseDir, `${process.pid}-${serial++}-${role}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const file = join(dir, 'redis.conf');
  writeFileSync(file, config(dir, port, primaryPort));
  const child = spawn('redis-server', [file], { stdio: 'ignore', cwd: dir });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, port, exited };
}

/** Connects (retrying while refused) and authenticates. */
async function client(port: number): Promise<RespClient> {
  return until(
    `redis on ${port}`,
    async () => {
      try {
        return await RespClient.open(port, PASSWORD);
      } catch {
        return undefined;
      }
    },
    10_000,
    1,
  );
}

interface Pair {
  readonly primary: Engine;
  readonly replica: Engine;
  readonly primaryClient: RespClient;
  readonly replicaClient: RespClient;
  readonly syncMs: number;
}

async function startPair(t0: number): Promise<Pair> {
  const primary = await startEngine('primary');
  const primaryClient = await client(primary.port);
  const replica = await startEngine('replica', primary.port);
  const replicaClient = await client(replica.port);
  await until(
    'replica in sync',
    async () => ((await replicaClient.info('replication')).master_link_status === 'up' ? true : undefined),
    10_000,
    1,
  );
  return { primary, replica, primaryClient, replicaClient, syncMs: now() - t0 };
}

/** Waits until neither engine has an AOF rewrite running or scheduled (a replica ignores SIGTERM before). */
async function settled(p: Pair): Promise<void> {
  for (const c of [p.primaryClient, p.replicaClient]) {
    await until(
      'AOF written',
      async () => {
        const i = await c.info('persistence');
        return i.aof_rewrite_in_progress === '0' && i.aof_rewrite_scheduled === '0' && i.aof_enabled === '1' ? true : undefined;
      },
      10_000,
      5,
    );
  }
}

async function stopPair(p: Pair): Promise<number> {
  p.primaryClient.close();
  p.replicaClient.close();
  const t0 = now();
  p.primary.child.kill('SIGTERM');
  p.replica.child.kill('SIGTERM');
  await Promise.all([p.primary.exited, p.replica.exited]);
  return now() - t0;
}

const out = {
  sequential: { syncMs: [] as number[], configSetMs: [] as number[], stopMs: [] as number[] },
  concurrent: { syncMs: [] as number[], allMs: 0 },
};
const all: Pair[] = [];
try {
  for (let i = 0; i < sequential; i++) {
    const pair = await startPair(now());
    all.push(pair);
    out.sequential.syncMs.push(pair.syncMs);
    const t0 = now();
    await pair.primaryClient.call('CONFIG', 'SET', 'maxmemory', String((1000 + i) * 1024 * 1024));
    out.sequential.configSetMs.push(now() - t0);
    await settled(pair);
    out.sequential.stopMs.push(await stopPair(pair));
  }
  if (concurrent > 0) {
    const t0 = now();
    const pairs = await Promise.all(Array.from({ length: concurrent }, () => startPair(t0)));
    all.push(...pairs);
    out.concurrent.allMs = now() - t0;
    out.concurrent.syncMs = pairs.map((p) => p.syncMs);
    await Promise.all(pairs.map((p) => settled(p).then(() => stopPair(p))));
  }
} finally {
  for (const p of all)
    for (const e of [p.primary, p.replica]) if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
  await sleep(0);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
