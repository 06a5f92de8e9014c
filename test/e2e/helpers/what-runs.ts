import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { HangarProcess } from './hangar-process.js';
import { isAlive, processesUnder, type Proc } from './processes.js';

/**
 * One command line to the edge's HAProxy runtime API (`<data dir>/edge/admin.sock`, the
 * documented layout) and its answer.
 */
export function edgeCommand(dataDir: string, line: string, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: join(dataDir, 'edge', 'admin.sock') });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the edge did not answer "${line}"`));
    }, timeoutMs);
    socket.on('connect', () => socket.end(`${line}\n`));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** Processes that no other process of the list forked (a redis-server or valkey-server fork for a rewrite is not an engine). */
function roots(procs: readonly Proc[]): Proc[] {
  const pids = new Set(procs.map((p) => p.pid));
  return procs.filter((p) => !pids.has(p.ppid));
}

export interface WhatRuns {
  /** Engine processes by instance id, then role (`primary`, `replica`): their pids. */
  readonly engines: Map<string, Map<string, number[]>>;
  /** HAProxy master processes of the edge. */
  readonly edgeMasters: number[];
  /** Instance ids with listeners in the running edge, and their frontend names. */
  readonly frontends: Map<string, string[]>;
  /** Directories under `instances/`. */
  readonly instanceDirs: string[];
}

/** What runs under a data dir, read from /proc and from the edge itself. */
export async function whatRuns(dataDir: string): Promise<WhatRuns> {
  const engines = new Map<string, Map<string, number[]>>();
  const instancesDir = join(dataDir, 'instances');
  for (const p of roots(processesUnder(instancesDir).filter((x) => /redis|valkey/.test(x.program)))) {
    const m = /\/instances\/([^/]+)\/([^/]+)\/redis\.conf/.exec(p.cmdline);
    const [id, role] = m ? [m[1]!, m[2]!] : ['?', '?'];
    const byRole = engines.get(id) ?? new Map<string, number[]>();
    byRole.set(role, [...(byRole.get(role) ?? []), p.pid]);
    engines.set(id, byRole);
  }
  const haproxy = processesUnder(join(dataDir, 'edge')).filter((x) => x.program.includes('haproxy'));
  const edgeMasters = roots(haproxy).map((p) => p.pid);
  const frontends = new Map<string, string[]>();
  if (edgeMasters.length > 0) {
    const stat = await edgeCommand(dataDir, 'show stat');
    for (const line of stat.split('\n')) {
      const [name, sv] = line.split(',');
      const m = /^i-([0-9a-f]+)-/.exec(name ?? '');
      if (!m || sv !== 'FRONTEND') continue;
      frontends.set(m[1]!, [...(frontends.get(m[1]!) ?? []), name!]);
    }
  }
  // (a test may put other files there: only instance ids count)
  const instanceDirs = existsSync(instancesDir) ? readdirSync(instancesDir).filter((n) => /^[0-9a-f]{24}$/.test(n)) : [];
  return { engines, edgeMasters, frontends, instanceDirs };
}

/** The sources the running edge admits for an instance (its main allow list, through the runtime API). */
export async function edgeAllowList(dataDir: string, instanceId: string): Promise<string[]> {
  const answer = await edgeCommand(dataDir, `show acl ${join(dataDir, 'edge', 'allow', `${instanceId}.main.lst`)}`);
  return answer
    .split('\n')
    .map((l) => /^0x[0-9a-f]+ (\S+)$/.exec(l.trim())?.[1])
    .filter((x): x is string => x !== undefined)
    .sort();
}

/** Ports something listens on (TCP, IPv4 and IPv6), from /proc/net. */
export function listeningPorts(): Set<number> {
  const out = new Set<number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local address `hexip:hexport`, state 0A = LISTEN
      if (f[3] === '0A' && f[1]) out.add(parseInt(f[1].split(':')[1]!, 16));
    }
  }
  return out;
}

/** The ports of an instance's edge listeners in the configuration the edge runs (`bind addr:port` per frontend). */
function boundPorts(dataDir: string): Map<string, number> {
  const out = new Map<string, number>();
  const file = join(dataDir, 'edge', 'haproxy.cfg');
  if (!existsSync(file)) return out;
  let frontend: string | undefined;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const f = /^frontend (\S+)/.exec(line);
    if (f) frontend = f[1];
    const b = /^\s+bind \S+:(\d+)/.exec(line);
    if (b && frontend) out.set(frontend, Number(b[1]));
  }
  return out;
}

/**
 * What the API lists is exactly what runs: every instance it lists as serving has one process
 * per engine (its pid file naming it), listeners at the edge on its public and servicenet ports
 * and an allow list equal to its ACLs; a FAILED instance has nothing; nothing runs, listens or
 * lies in the data dir for an instance the API does not list; one edge master at most.
 */
export async function expectApiMatchesWhatRuns(h: HangarProcess): Promise<void> {
  const list = await h.get('/v2/instances/');
  expect(list.status).toBe(200);
  const records: any[] = list.body.data;
  const runs = await whatRuns(h.dataDir);
  const context = () => `API: ${JSON.stringify(records.map((r) => [r.name, r.id, r.state]))}\nhangar log:\n${h.log.slice(-4000)}`;
  const serving = records.filter((r) => r.state !== 'FAILED');
  const servingIds = new Set(serving.map((r) => r.id as string));
  const bound = boundPorts(h.dataDir);

  expect(
    [...runs.engines.keys()].filter((id) => !servingIds.has(id)),
    `engines of no listed instance\n${context()}`,
  ).toEqual([]);
  expect(
    [...runs.frontends.keys()].filter((id) => !servingIds.has(id)),
    `listeners of no listed instance\n${context()}`,
  ).toEqual([]);
  expect(
    runs.instanceDirs.filter((id) => !servingIds.has(id)),
    `data of no listed instance\n${context()}`,
  ).toEqual([]);
  expect(runs.edgeMasters.length, `edge masters ${runs.edgeMasters}\n${context()}`).toBeLessThanOrEqual(1);
  if (serving.length > 0) expect(runs.edgeMasters, `edge masters\n${context()}`).toHaveLength(1);

  for (const r of serving) {
    const engines = runs.engines.get(r.id);
    expect(Object.fromEntries(engines ?? []), `engines of ${r.name}\n${context()}`).toEqual({
      primary: [expect.any(Number)],
      replica: [expect.any(Number)],
    });
    for (const role of ['primary', 'replica']) {
      const pid = Number(readFileSync(join(h.dataDir, 'instances', r.id, role, 'process.pid'), 'utf8').trim());
      expect(engines!.get(role), `pid file of ${r.name}/${role}`).toEqual([pid]);
      expect(isAlive(pid)).toBe(true);
    }
    expect([...(runs.frontends.get(r.id) ?? [])].sort(), `listeners of ${r.name}\n${context()}`).toEqual([
      `i-${r.id}-public`,
      `i-${r.id}-servicenet`,
    ]);
    const pub = Number(new URL(r.public_connect_string).port);
    const svc = Number(new URL(r.servicenet_connect_string).port);
    expect(bound.get(`i-${r.id}-public`)).toBe(pub);
    expect(bound.get(`i-${r.id}-servicenet`)).toBe(svc);
    const listening = listeningPorts();
    expect(listening.has(pub) && listening.has(svc), `${r.name} listens on ${pub} and ${svc}`).toBe(true);
    const acls = await h.get(`/v2/instances/${r.name}/acls/`);
    const listed = (acls.body.data as any[]).map((a) => a.cidr_mask as string).sort();
    expect(await edgeAllowList(h.dataDir, r.id), `allow list of ${r.name}\n${context()}`).toEqual(listed);
  }
  const listening = listeningPorts();
  for (const r of records.filter((x) => x.state === 'FAILED')) {
    expect(runs.engines.has(r.id), `engines of FAILED ${r.name}`).toBe(false);
    expect(listening.has(Number(new URL(r.public_connect_string).port)), `listener of FAILED ${r.name}`).toBe(false);
    expect(runs.frontends.has(r.id), `listeners of FAILED ${r.name}`).toBe(false);
    expect(runs.instanceDirs, `data of FAILED ${r.name}`).not.toContain(r.id);
  }
}
