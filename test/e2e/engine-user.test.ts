import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable, portOf, type RedisRecord } from './helpers/hangar-process.js';
import { connectRedis, enginePid, eventually, pingOutcome } from './helpers/redis.js';

/**
 * A hangar running as root runs its engines as the engine user (HANGAR_ENGINE_USER, default
 * hangar-engine), made at its first start: real redis-server processes, their directories, a
 * backup and a restore, the adoption of running engines after a restart, and a data dir left by
 * a hangar that ran its engines as root. Only root can run hangar as root: CI runs as root, and
 * elsewhere these cases are left out, saying so.
 */

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
const ENGINE_USER = 'hangar-engine';

function runsAsRoot(): boolean {
  if (process.getuid?.() === 0 || process.env.CI === 'true') return true;
  console.warn('hangar runs engines as the engine user only when it runs as root, and this test does not: leaving these cases out');
  return false;
}

/** The uid and gid of a user, read with `id` (not with hangar's own code). */
function idsOf(name: string): { uid: number; gid: number } {
  const id = (flag: string) => spawnSync('id', [flag, name], { encoding: 'utf8' });
  const u = id('-u');
  const g = id('-g');
  if (u.status !== 0 || g.status !== 0) throw new Error(`no user ${name}: ${u.stderr}`);
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** The real, effective, saved and filesystem ids of a process (/proc/<pid>/status). */
function processIds(pid: number): { uid: number[]; gid: number[] } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const ids = (field: string) => /^[A-Za-z]+:\s+(.*)$/m.exec(status.split('\n').find((l) => l.startsWith(`${field}:`)) ?? '')![1]!;
  return { uid: ids('Uid').split(/\s+/).map(Number), gid: ids('Gid').split(/\s+/).map(Number) };
}

/** Every entry under `dir` (not following links), `dir` included. */
function tree(dir: string): string[] {
  const out = [dir];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tree(p));
    else out.push(p);
  }
  return out;
}

/** Entries under `dir` that are not owned by uid:gid, as `path uid:gid`. */
function notOwnedBy(dir: string, ids: { uid: number; gid: number }): string[] {
  return tree(dir)
    .map((p) => ({ p, st: lstatSync(p, { throwIfNoEntry: false }) }))
    .filter(({ st }) => st !== undefined && (st.uid !== ids.uid || st.gid !== ids.gid))
    .map(({ p, st }) => `${p} ${st!.uid}:${st!.gid}`);
}

/** Runs a command as the engine user (its uid and gid, no other group), as an engine would run. */
function asEngine(ids: { uid: number; gid: number }, command: string, args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(command, args, { uid: ids.uid, gid: ids.gid, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  return { status: r.status, stderr: r.stderr };
}

/** The log lines (JSON) of a hangar whose `msg` matches. */
function logLines(h: HangarProcess, msg: RegExp): Record<string, unknown>[] {
  return h.log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => typeof l.msg === 'string' && msg.test(l.msg));
}

async function finished(h: HangarProcess, path: string, ms = 60_000): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await h.get(path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.data.state === 'COMPLETED' || res.body.data.state === 'FAILED') return res.body.data;
    if (Date.now() > until) throw new Error(`${path} still ${res.body.data.state}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.runIf(enginesAvailable() && runsAsRoot())('engines run as the engine user when hangar runs as root', () => {
  let h: HangarProcess;
  let rec: RedisRecord;
  let engine: { uid: number; gid: number };
  const unitDir = (role: string) => join(h.dataDir, 'instances', rec.id, role);

  beforeAll(async () => {
    h = await HangarProcess.start();
    rec = await h.createRedis('owned', { acls: LOCAL });
    engine = idsOf(ENGINE_USER);
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('runs each engine as the engine user (made at the first start: a system user) and the edge as root, and says so', () => {
    expect(engine.uid).toBeGreaterThan(0);
    expect(engine.uid).toBeLessThan(1000);
    expect(logLines(h, /^engines run as the engine user$/)).toEqual([expect.objectContaining({ user: ENGINE_USER, ...engine })]);
    for (const role of ['primary', 'replica'] as const) {
      const ids = processIds(enginePid(h.dataDir, rec.id, role));
      expect({ role, ...ids }).toEqual({ role, uid: Array(4).fill(engine.uid), gid: Array(4).fill(engine.gid) });
    }
    const edge = Number(readFileSync(join(h.dataDir, 'edge', 'process.pid'), 'utf8'));
    expect(processIds(edge).uid).toEqual([0, 0, 0, 0]);
  });

  it("owns its instance's directories and all in them; the data dir lets its group through and no one else; hangar's secrets stay root's", () => {
    expect(notOwnedBy(join(h.dataDir, 'instances'), engine)).toEqual([]);
    expect(statSync(unitDir('primary')).mode & 0o777).toBe(0o700);
    expect(statSync(join(unitDir('primary'), 'redis.conf')).mode & 0o777).toBe(0o600);
    const data = statSync(h.dataDir);
    expect({ mode: (data.mode & 0o777).toString(8), uid: data.uid, gid: data.gid }).toEqual({ mode: '710', uid: 0, gid: engine.gid });
    for (const name of ['secret.key', 'hangar.sqlite']) {
      const st = statSync(join(h.dataDir, name));
      expect({ name, mode: (st.mode & 0o777).toString(8), uid: st.uid }).toEqual({ name, mode: '600', uid: 0 });
    }
  });

  it("cannot read hangar's secrets nor list the data dir or the edge, and reaches its own files", () => {
    for (const name of ['secret.key', 'hangar.sqlite']) {
      const r = asEngine(engine, 'cat', [join(h.dataDir, name)]);
      expect({ name, status: r.status, stderr: r.stderr }).toEqual({ name, status: 1, stderr: expect.stringMatching(/Permission denied/) });
    }
    for (const dir of [h.dataDir, join(h.dataDir, 'edge')]) {
      expect(asEngine(engine, 'ls', [dir]).stderr).toMatch(/Permission denied/);
    }
    expect(asEngine(engine, 'cat', [join(unitDir('primary'), 'redis.conf')]).status).toBe(0);
    expect(asEngine(engine, 'ls', [join(h.dataDir, 'instances')]).status).toBe(0);
  });

  it("backs up (hangar reads the engine's snapshot) and restores (the restored files are the engine user's)", async () => {
    const c = await connectRedis(portOf(rec.public_connect_string), rec.password);
    try {
      await c.set('kept', 'before the backup');
    } finally {
      c.destroy();
    }
    const taken = await h.post('/v2/instances/owned/backups/');
    expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    const backup = await finished(h, `/v2/instances/owned/backups/${taken.body.data.id}/`);
    expect(backup.state, JSON.stringify(backup)).toBe('COMPLETED');
    // written by the engine itself, as the engine user
    expect(lstatSync(join(unitDir('replica'), 'dump.rdb')).uid).toBe(engine.uid);
    const c2 = await connectRedis(portOf(rec.public_connect_string), rec.password);
    try {
      await c2.set('kept', 'after the backup');
    } finally {
      c2.destroy();
    }
    const restore = await h.post('/v2/instances/owned/restore/', { backup_id: backup.id });
    expect(restore.status, JSON.stringify(restore.body)).toBe(200);
    await eventually(
      'the restore to end',
      async () => {
        const list = (await h.get('/v2/instances/owned/restores/')).body.data as { id: string; state: string }[];
        return ['COMPLETED', 'FAILED'].includes(list.find((r) => r.id === restore.body.data.id)?.state ?? '');
      },
      60_000,
    );
    const done = ((await h.get('/v2/instances/owned/restores/')).body.data as { id: string }[]).find((r) => r.id === restore.body.data.id);
    expect(done).toMatchObject({ state: 'COMPLETED' });
    await h.waitFor('owned', (r) => r?.state === 'ACTIVE', 60_000);
    const c3 = await connectRedis(portOf(rec.public_connect_string), rec.password);
    try {
      expect(await c3.get('kept')).toBe('before the backup');
    } finally {
      c3.destroy();
    }
    // hangar staged the snapshot and built the new append-only directory: the engine user's, and its engines restarted as it
    expect(notOwnedBy(join(h.dataDir, 'instances'), engine)).toEqual([]);
    expect(readdirSync(join(unitDir('primary'), 'appendonlydir'))).toContain('appendonly.aof.1.base.rdb');
    for (const role of ['primary', 'replica'] as const) expect(processIds(enginePid(h.dataDir, rec.id, role)).uid[0]).toBe(engine.uid);
  });

  it('adopts the running engines after a restart of hangar: the same processes, still the engine user', async () => {
    const before = { primary: enginePid(h.dataDir, rec.id, 'primary'), replica: enginePid(h.dataDir, rec.id, 'replica') };
    await h.stop();
    await h.serve();
    await h.waitSupervising();
    await h.waitFor('owned', (r) => r?.state === 'ACTIVE');
    // a second pass of the supervisor's checks: nothing died and was started again
    await new Promise((r) => setTimeout(r, 1500));
    expect({ primary: enginePid(h.dataDir, rec.id, 'primary'), replica: enginePid(h.dataDir, rec.id, 'replica') }).toEqual(before);
    for (const pid of Object.values(before)) expect(processIds(pid).uid[0]).toBe(engine.uid);
    expect(h.log).not.toMatch(/"msg":"process started"/);
    expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');
    // nothing to hand over in a data dir already laid out
    expect(logLines(h, /handed over to the engine user/)).toEqual([]);
  });
});

describe.runIf(enginesAvailable() && runsAsRoot())('a data dir whose engines ran as root, served by a hangar with the engine user', () => {
  let h: HangarProcess;
  let rec: RedisRecord;

  beforeAll(async () => {
    // HANGAR_ENGINE_USER=root: engines run as root, as every hangar did before the engine user
    h = await HangarProcess.start({ serveEnv: { HANGAR_ENGINE_USER: 'root' } });
    rec = await h.createRedis('earlier', { acls: LOCAL });
  }, 60_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('is handed over at start, said once; the engines that run are adopted as they are, and run as the engine user from their next start', async () => {
    const primary = enginePid(h.dataDir, rec.id, 'primary');
    expect(processIds(primary).uid[0]).toBe(0);
    expect(statSync(join(h.dataDir, 'instances', rec.id, 'primary', 'redis.conf')).uid).toBe(0);
    expect(statSync(h.dataDir).mode & 0o777).toBe(0o700);
    await h.stop();

    await h.serve();
    await h.waitSupervising();
    const engine = idsOf(ENGINE_USER);
    expect(logLines(h, /handed over to the engine user/)).toEqual([
      expect.objectContaining({ user: ENGINE_USER, uid: engine.uid, entries: expect.any(Number) }),
    ]);
    expect(notOwnedBy(join(h.dataDir, 'instances'), engine)).toEqual([]);
    expect(statSync(h.dataDir).mode & 0o777).toBe(0o710);
    // adopted, still root until it starts again
    expect(enginePid(h.dataDir, rec.id, 'primary')).toBe(primary);
    expect(processIds(primary).uid[0]).toBe(0);
    process.kill(primary, 'SIGKILL');
    await eventually(
      'the primary runs again',
      () => {
        try {
          return enginePid(h.dataDir, rec.id, 'primary') !== primary;
        } catch {
          return false;
        }
      },
      20_000,
    );
    expect(processIds(enginePid(h.dataDir, rec.id, 'primary')).uid[0]).toBe(engine.uid);
    await h.waitFor('earlier', (r) => r?.state === 'ACTIVE', 30_000);
    expect(await pingOutcome(portOf(rec.public_connect_string), rec.password)).toBe('PONG');

    // said once: the next start finds nothing to hand over
    await h.stop();
    await h.serve();
    await h.waitSupervising();
    expect(logLines(h, /handed over to the engine user/)).toEqual([]);
  });
});
