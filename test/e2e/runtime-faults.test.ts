import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, canMount, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { Observer } from './helpers/observe.js';
import { connectRedis, enginePid, enginePort, eventually, pingOutcome } from './helpers/redis.js';
import { isAlive } from './helpers/processes.js';
import { expectApiMatchesWhatRuns } from './helpers/what-runs.js';

/**
 * Faults on a running system, on real redis-server and HAProxy processes: hangar notices each
 * within 5 s, says so (the instance DEGRADED with the reason, a problem in /readyz) and heals
 * what can be healed; every other instance keeps working.
 */

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];

const connections = new WeakMap<Server, Set<Socket>>();

/** A process of the test holding `port` on loopback: a stranger to hangar (it accepts connections and says nothing). */
function stranger(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const open = new Set<Socket>();
    const s = createServer((socket) => {
      socket.on('error', () => {});
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    });
    connections.set(s, open);
    s.once('error', (err) => {
      // say who holds the port: a test that cannot take it has shown nothing about hangar
      const holders = spawnSync('ss', ['-tanpH', `sport = :${port}`], { encoding: 'utf8' }).stdout;
      reject(new Error(`${err.message}; sockets on the port:\n${holders}`, { cause: err }));
    });
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/**
 * Sends `GET /readyz` on a socket of its own and resolves once the request is in the kernel's
 * hands (connected and written), so that a hangar paused now finds it waiting when it resumes;
 * the returned promise gives the answer.
 */
async function readyzQueued(url: string, requestId: string): Promise<{ answer: Promise<{ status: number; problems: string[] }> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  const answer = new Promise<{ status: number; problems: string[] }>((resolve, reject) => {
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { problems?: string[] };
      resolve({ status, problems: body.problems ?? [] });
    });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(`GET /readyz HTTP/1.1\r\nHost: ${hostname}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  });
  return { answer };
}

/** Stops the stranger, and closes what it accepted (an engine may still hold a connection to it). */
function closeServer(s: Server | undefined): Promise<void> {
  if (!s) return Promise.resolve();
  for (const socket of connections.get(s) ?? []) socket.destroy();
  return new Promise<void>((r) => s.close(() => r()));
}

describe.runIf(enginesAvailable())('faults on a running system, on the local runtime', () => {
  let h: HangarProcess;
  const inst: Record<string, RedisRecord> = {};
  const names = ['killed', 'moved', 'edgy', 'readonly', 'blocked'];

  beforeAll(async () => {
    h = await HangarProcess.start();
    const made = await Promise.all(names.map((n) => h.createRedis(n, { acls: LOCAL })));
    names.forEach((n, i) => {
      inst[n] = made[i]!;
    });
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
  });

  /** Every instance ACTIVE and answering, /readyz ready: the state each case starts from and ends in. */
  async function allHealthy(): Promise<void> {
    for (const n of names) {
      await h.waitFor(n, (r) => r?.state === 'ACTIVE', 20_000);
      await eventually(
        `${n} answers`,
        async () => (await pingOutcome(portOf(inst[n]!.public_connect_string), inst[n]!.password)) === 'PONG',
        10_000,
      );
    }
    await eventually('/readyz is ready', async () => (await h.readyz()).status === 200, 10_000);
  }

  /** Whether hangar's log has the instance's state changing to `state` with a reason matching `reason`. */
  function saidInLog(name: string, state: string, reason: RegExp): boolean {
    return h.log.split('\n').some((line) => {
      if (!line.includes('"msg":"instance state"')) return false;
      const entry = JSON.parse(line) as { name?: string; to?: string; reason?: string };
      return entry.name === name && entry.to === state && reason.test(entry.reason ?? '');
    });
  }

  interface LogEntry {
    readonly time: number;
    readonly msg?: string;
    readonly request_id?: string;
    readonly duration_ms?: number;
  }

  /** hangar's log lines so far, parsed. */
  function logEntries(): LogEntry[] {
    const out: LogEntry[] = [];
    for (const line of h.log.split('\n')) {
      try {
        if (line.startsWith('{')) out.push(JSON.parse(line) as LogEntry);
      } catch {
        /* a line still being written */
      }
    }
    return out;
  }

  /** hangar paused (SIGSTOP) while `fault` runs, so that it finds the fault done when it resumes. */
  async function whilePaused(fault: () => Promise<void>): Promise<void> {
    process.kill(h.pid, 'SIGSTOP');
    try {
      await fault();
    } finally {
      process.kill(h.pid, 'SIGCONT');
    }
  }

  /** Prints when the instance was seen DEGRADED and ACTIVE again, for the record. */
  function report(what: string, watch: Observer): void {
    const degraded = watch.firstState('DEGRADED')?.at;
    const active = [...watch.states].reverse().find((x) => x.state === 'ACTIVE')?.at;
    console.info(`${what}: DEGRADED seen after ${degraded ?? '-'} ms, ACTIVE again after ${active ?? '-'} ms`);
  }

  it('an engine process killed: DEGRADED with the reason and a /readyz problem within 5 s, restarted with its data, ACTIVE again', async () => {
    await allHealthy();
    const i = inst.killed!;
    const c = await connectRedis(portOf(i.public_connect_string), i.password);
    await c.set('kept', 'across a kill');
    c.destroy();
    const watch = new Observer(h, i.name);
    try {
      process.kill(enginePid(h.dataDir, i.id, 'primary'), 'SIGKILL');
      await watch.until(
        'DEGRADED naming the primary',
        () => watch.firstState('DEGRADED', /primary/) !== undefined || saidInLog(i.name, 'DEGRADED', /primary/),
        5000,
      );
      await watch.until('a /readyz problem naming the instance', () => watch.firstProblem(new RegExp(i.id)) !== undefined, 5000);
      await watch.until('ACTIVE again', () => watch.states.at(-1)?.state === 'ACTIVE' && watch.states.length > 1);
    } finally {
      await watch.stop();
    }
    // one degraded instance is said, but does not take the API out of a load balancer's rotation
    expect(watch.firstProblem(new RegExp(i.id))?.ready).toBe(200);
    report('engine killed', watch);
    const again = await connectRedis(portOf(i.public_connect_string), i.password);
    try {
      expect(await again.get('kept')).toBe('across a kill');
    } finally {
      again.destroy();
    }
    await allHealthy();
    await expectApiMatchesWhatRuns(h);
  });

  it('an engine port taken by a stranger while the engine is down: the engine moves to a free port, clients keep their address', async () => {
    await allHealthy();
    const i = inst.moved!;
    const c = await connectRedis(portOf(i.public_connect_string), i.password);
    await c.set('kept', 'across a move');
    c.destroy();
    const taken = enginePort(h.dataDir, i.id, 'primary');
    let held: Server | undefined;
    const watch = new Observer(h, i.name);
    try {
      await whilePaused(async () => {
        const pid = enginePid(h.dataDir, i.id, 'primary');
        process.kill(pid, 'SIGKILL');
        await eventually('the engine is gone', () => !isAlive(pid));
        // the killed engine's connections can hold its port for a moment after it is gone
        // (seen: FIN-WAIT-1 towards the paused hangar): take it as soon as the kernel lets go
        let refusal: Error | undefined;
        await eventually(
          'the stranger takes the engine port',
          async () => {
            try {
              held = await stranger(taken);
              return true;
            } catch (err) {
              refusal = err as Error;
              return false;
            }
          },
          10_000,
        ).catch((err: Error) => {
          throw new Error(`${err.message}: ${refusal?.message}`);
        });
      });
      await watch.until(
        'DEGRADED saying the port is taken and moved',
        () => watch.firstState('DEGRADED', new RegExp(`port ${taken}.*in use by another process; moving engine.primary`)) !== undefined,
        5000,
      );
      await watch.until('a /readyz problem naming the instance', () => watch.firstProblem(new RegExp(i.id)) !== undefined, 5000);
      await watch.until('ACTIVE again', () => watch.states.at(-1)?.state === 'ACTIVE' && watch.states.length > 1, 20_000);
    } finally {
      await watch.stop();
    }
    report('engine port taken', watch);
    try {
      const moved = enginePort(h.dataDir, i.id, 'primary');
      expect(moved).not.toBe(taken);
      // the stranger still has its port; the instance answers at the address it always had
      expect(held!.listening).toBe(true);
      const again = await connectRedis(portOf(i.public_connect_string), i.password);
      try {
        expect(await again.get('kept')).toBe('across a move');
        expect((await again.info('replication')).includes('connected_slaves:1')).toBe(true);
      } finally {
        again.destroy();
      }
      await allHealthy();
      await expectApiMatchesWhatRuns(h);
    } finally {
      await closeServer(held);
    }
  });

  it('the edge process killed: the instances are DEGRADED, /readyz says the edge is down, the edge is started again', async () => {
    await allHealthy();
    const i = inst.edgy!;
    const watch = new Observer(h, i.name);
    let ready: { answer: Promise<{ status: number; problems: string[] }> } | undefined;
    let killedAt = 0;
    const READYZ_ID = `readyz-edge-dead-${Date.now()}`;
    try {
      // hangar restarts the edge within a few tens of milliseconds: a /readyz sent while the
      // edge is dead and hangar paused is taken before anything could restart it
      await whilePaused(async () => {
        const edge = Number(readFileSync(join(h.dataDir, 'edge', 'process.pid'), 'utf8').trim());
        killedAt = Date.now();
        process.kill(edge, 'SIGKILL');
        await eventually('the edge is gone', () => !isAlive(edge));
        ready = await readyzQueued(h.url, READYZ_ID);
      });
      const answer = await ready!.answer;
      // hangar takes the request and the edge's death in the order its event loop sees them: on
      // a busy machine the edge may be serving again (hangar's log says when) before hangar
      // answers the request (its hooks run before the readiness check does), and then "ready"
      // is the truth; otherwise the edge is down
      let taken: LogEntry | undefined;
      await eventually('the /readyz request in the log', () => {
        taken = logEntries().find((e) => e.request_id === READYZ_ID);
        return taken !== undefined;
      });
      const servingAgain = logEntries().find((e) => e.msg === 'edge started' && e.time >= killedAt);
      // what hangar logged from the kill on, shown when the answer is not the one expected
      const since = `hangar's log since the kill (at ${killedAt}):\n${logEntries()
        .filter((e) => e.time >= killedAt - 50)
        .map((e) => JSON.stringify(e))
        .join('\n')}`;
      if (servingAgain && servingAgain.time <= taken!.time) {
        expect(answer.status, since).toBe(200);
      } else {
        expect(answer.status, since).toBe(503);
        expect(answer.problems, since).toContain('the edge (haproxy) is not running');
      }
      // said in the instance's state too (a client polling closely may miss so short a while:
      // hangar's log of state changes has it)
      await watch.until(
        'DEGRADED saying the edge is down',
        () => watch.firstState('DEGRADED', /edge/) !== undefined || saidInLog(i.name, 'DEGRADED', /edge/),
        5000,
      );
      await watch.until('ACTIVE again', () => watch.states.at(-1)?.state === 'ACTIVE' && watch.states.length > 1);
    } finally {
      await watch.stop();
    }
    report('edge killed', watch);
    await allHealthy();
    await expectApiMatchesWhatRuns(h);
  });

  it.runIf(canMount())(
    'the data dir of one instance unwritable: DEGRADED and a /readyz problem within 5 s, the engines keep serving, ACTIVE once writable again',
    async () => {
      await allHealthy();
      const i = inst.readonly!;
      const dir = join(h.dataDir, 'instances', i.id);
      // A read-only filesystem mounted over the instance's directory: every write hangar tries
      // there fails with EROFS, as on a disk the kernel turned read-only after I/O errors (root
      // ignores permission bits, not a read-only mount). The engines keep the files they have
      // open and their working directory on the filesystem underneath, so they serve on.
      const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'hangar-test-ro', dir], { encoding: 'utf8' });
      expect(mount.status, mount.stderr).toBe(0);
      const watch = new Observer(h, i.name);
      try {
        await watch.until(
          'DEGRADED saying the data dir is not writable',
          () => watch.firstState('DEGRADED', /not writable \(EROFS\)/) !== undefined,
          5000,
        );
        await watch.until(
          'a /readyz problem naming the instance',
          () => watch.firstProblem(new RegExp(`${i.id}.*not writable`)) !== undefined,
          5000,
        );
        expect(await pingOutcome(portOf(i.public_connect_string), i.password)).toBe('PONG');
        for (const other of names.filter((n) => n !== i.name))
          expect((await h.get(`/v2/instances/${other}/`)).body.data.state).toBe('ACTIVE');
        // hangar leaves it as it is while the fault lasts: still DEGRADED a few retries later
        await new Promise((r) => setTimeout(r, 1500));
        expect((await h.get(`/v2/instances/${i.name}/`)).body.data.state).toBe('DEGRADED');
      } finally {
        spawnSync('umount', [dir]);
      }
      try {
        await watch.until('ACTIVE once writable', () => watch.states.at(-1)?.state === 'ACTIVE', 10_000);
      } finally {
        await watch.stop();
      }
      report('data dir read-only (ACTIVE after the unmount)', watch);
      await allHealthy();
      await expectApiMatchesWhatRuns(h);
    },
  );

  it("an edge listener's port taken by a stranger: that instance DEGRADED and left out of the edge, every other one served, and back once the port is free", async () => {
    await allHealthy();
    const i = inst.blocked!;
    const port = portOf(i.public_connect_string);
    let held: Server | undefined;
    const watch = new Observer(h, i.name);
    try {
      await whilePaused(async () => {
        // the edge and its workers (its process group) die, which frees the listeners' ports
        const edge = Number(readFileSync(join(h.dataDir, 'edge', 'process.pid'), 'utf8').trim());
        process.kill(-edge, 'SIGKILL');
        await eventually('the port is free', async () => {
          try {
            held = await stranger(port);
            return true;
          } catch {
            return false;
          }
        });
      });
      await watch.until(
        'DEGRADED saying the port is taken',
        () => watch.firstState('DEGRADED', new RegExp(`port ${port} .*in use by another process`)) !== undefined,
        5000,
      );
      await watch.until(
        'a /readyz problem naming the instance',
        () => watch.firstProblem(new RegExp(`${i.id}.*port ${port}`)) !== undefined,
        5000,
      );
      for (const other of names.filter((n) => n !== i.name)) {
        await h.waitFor(other, (r) => r?.state === 'ACTIVE', 10_000);
        expect(await pingOutcome(portOf(inst[other]!.public_connect_string), inst[other]!.password), other).toBe('PONG');
      }
      // still left out, and retried, while the stranger holds the port
      await new Promise((r) => setTimeout(r, 1500));
      expect((await h.get(`/v2/instances/${i.name}/`)).body.data.state).toBe('DEGRADED');
      await closeServer(held);
      held = undefined;
      await watch.until('ACTIVE once the port is free', () => watch.states.at(-1)?.state === 'ACTIVE', 10_000);
    } finally {
      await watch.stop();
      await closeServer(held);
    }
    report('edge listener port taken (ACTIVE after the stranger left)', watch);
    expect(await pingOutcome(port, i.password)).toBe('PONG');
    await allHealthy();
    await expectApiMatchesWhatRuns(h);
  });
});
