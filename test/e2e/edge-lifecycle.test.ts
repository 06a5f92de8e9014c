import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable, hangarDown as down, portOf } from './helpers/hangar-process.js';
import { isAlive, processesUnder } from './helpers/processes.js';
import { connectRedis, eventually, pingOutcome, tcpAccepts } from './helpers/redis.js';

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];

/** The edge's pid from its pid file, or undefined when there is none. */
function edgePid(dataDir: string): number | undefined {
  const file = join(dataDir, 'edge', 'process.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : undefined;
}

/** HAProxy processes of the data dir's edge. */
const edgeProcesses = (dataDir: string) => processesUnder(join(dataDir, 'edge')).filter((p) => p.program.includes('haproxy'));

/** One TCP connection through the edge from `from`, closed once the edge has admitted or refused it. */
function touch(port: number, from: string): Promise<void> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, localAddress: from });
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    // admitted: the engine waits for a command; refused: the edge closes at once
    s.once('connect', () => setTimeout(() => s.destroy(), 100));
  });
}

/** `hangar_edge_connections_total` of each instance, from /metrics. */
async function edgeCounters(url: string): Promise<Map<string, { admitted: number; refused: number }>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, { admitted: number; refused: number }>();
  for (const m of text.matchAll(/^hangar_edge_connections_total\{instance_id="(\w+)",outcome="(admitted|refused)"\} (\d+)$/gm)) {
    const c = out.get(m[1]!) ?? { admitted: 0, refused: 0 };
    c[m[2] as 'admitted' | 'refused'] = Number(m[3]);
    out.set(m[1]!, c);
  }
  return out;
}

/**
 * The edge as a process with a life of its own: it stops when its last instance is deleted (and
 * starts again with the next one), its connection counters go on across reloads and restarts,
 * and `hangar down` stops it and every engine, the instances coming back at the next serve.
 */
describe.runIf(enginesAvailable())('the edge and hangar down, on the local runtime', () => {
  let h: HangarProcess;

  beforeAll(async () => {
    h = await HangarProcess.start();
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('the edge exits when the last instance is deleted, and starts again with the next one', async () => {
    const a = await h.createRedis('alone', { acls: LOCAL });
    const first = edgePid(h.dataDir)!;
    expect(isAlive(first)).toBe(true);
    expect((await h.delete('/v2/instances/alone/')).status).toBe(200);
    await h.waitFor('alone', (r) => r === undefined);
    await eventually('no edge process left', () => edgeProcesses(h.dataDir).length === 0, 10_000);
    expect(isAlive(first)).toBe(false);
    expect(await tcpAccepts(portOf(a.public_connect_string))).toBe(false);
    // nothing to serve is no problem
    expect(await h.readyz()).toEqual({ status: 200, problems: [] });
    const b = await h.createRedis('next', { acls: LOCAL });
    expect(edgeProcesses(h.dataDir).length).toBeGreaterThan(0);
    expect(await pingOutcome(portOf(b.public_connect_string), b.password)).toBe('PONG');
  });

  it('hangar_edge_connections_total never goes down: across a reload (a create) and a restart of the edge', async () => {
    const c = await h.createRedis('counted', { acls: LOCAL });
    const port = portOf(c.public_connect_string);
    for (let i = 0; i < 5; i++) await touch(port, '127.0.0.1');
    for (let i = 0; i < 3; i++) await touch(port, '127.0.0.2');
    let last = { admitted: 0, refused: 0 };
    /** Reads the counters of `counted`, checking they never went down since the last read. */
    const read = async () => {
      const now = (await edgeCounters(h.url)).get(c.id) ?? { admitted: 0, refused: 0 };
      expect(now.admitted, `admitted went from ${last.admitted} to ${now.admitted}`).toBeGreaterThanOrEqual(last.admitted);
      expect(now.refused, `refused went from ${last.refused} to ${now.refused}`).toBeGreaterThanOrEqual(last.refused);
      last = now;
      return now;
    };
    await eventually(
      'the edge counted them',
      async () => {
        const n = await read();
        return n.admitted >= 5 && n.refused >= 3;
      },
      10_000,
    );

    // a create reloads the edge: its new worker counts from 0
    await h.createRedis('reloader', { acls: LOCAL });
    await read();
    await touch(port, '127.0.0.2');
    await eventually('the refusal after the reload is added', async () => (await read()).refused >= 4, 10_000);

    // the edge killed: hangar starts it again
    const before = edgePid(h.dataDir)!;
    process.kill(before, 'SIGKILL');
    await eventually(
      'a new edge',
      () => edgePid(h.dataDir) !== undefined && edgePid(h.dataDir) !== before && isAlive(edgePid(h.dataDir)!),
      15_000,
    );
    await h.waitFor('counted', (r) => r?.state === 'ACTIVE');
    await read();
    await touch(port, '127.0.0.2');
    await eventually('the refusal after the restart is added', async () => (await read()).refused >= 5, 10_000);
  });

  it('hangar down: refused while hangar serves; once it is stopped, stops every engine and the edge; the next serve brings them back with their data', async () => {
    const d = await h.createRedis('durable', { acls: LOCAL });
    const client = await connectRedis(portOf(d.public_connect_string), d.password);
    await client.set('kept', 'across hangar down');
    client.destroy();

    const refused = await down(h.dataDir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/hangar serve \(pid \d+\) runs on the data dir .*: stop it first/);
    expect(edgeProcesses(h.dataDir).length).toBeGreaterThan(0);

    expect(await h.stop()).toEqual({ code: 0, signal: null });
    // stopped, hangar leaves them serving
    expect(await pingOutcome(portOf(d.public_connect_string), d.password)).toBe('PONG');
    const instances = (await fetch(`${h.url}/v2/instances/`).catch(() => undefined)) === undefined;
    expect(instances).toBe(true);

    const res = await down(h.dataDir);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout) as { data_dir: string; stopped: string[]; instances: unknown[] };
    expect(out.data_dir).toBe(h.dataDir);
    // by the names people gave them (the ids beside, for scripts)
    expect(out.stopped).toEqual(expect.arrayContaining(['edge', 'durable/primary', 'durable/replica']));
    expect(out.stopped.join(' ')).not.toContain(d.id);
    expect(out.instances).toEqual(expect.arrayContaining([{ name: 'durable', login: expect.any(String), id: d.id }]));
    expect(processesUnder(h.dataDir)).toEqual([]);
    expect(await tcpAccepts(portOf(d.public_connect_string))).toBe(false);
    // again: nothing left to stop
    const again = await down(h.dataDir);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).stopped).toEqual([]);

    await h.serve();
    const back = await h.waitFor('durable', (r) => r?.state === 'ACTIVE');
    expect(back.public_connect_string).toBe(d.public_connect_string);
    await eventually(
      'the instance answers again',
      async () => (await pingOutcome(portOf(d.public_connect_string), d.password)) === 'PONG',
      20_000,
    );
    const after = await connectRedis(portOf(d.public_connect_string), d.password);
    try {
      expect(await after.get('kept')).toBe('across hangar down');
    } finally {
      after.destroy();
    }
  });
});
