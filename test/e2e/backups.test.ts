import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  ENGINES,
  HangarProcess,
  LOGIN,
  PASSWORD,
  canMount,
  engineVersion,
  enginesAvailable,
  portOf,
  type RedisRecord,
} from './helpers/hangar-process.js';
import { killAllUnder } from './helpers/processes.js';
import { connectRedis, connectRedisAs, enginePid, enginePort, eventually } from './helpers/redis.js';

/**
 * Backups and restores of real redis-server and valkey-server instances through hangar's HTTP
 * API and CLI: what a restore brings back is what the instance held when the backup was taken,
 * on the primary and its resynced replica, and it survives a restart of the engines (Redis 7 and
 * Valkey load the append-only directory at start, not dump.rdb). The CLI's and the backup
 * directory's cases are not the engine's: they run on Redis alone.
 */

const LOCAL = [{ cidr_mask: '127.0.0.1', description: 'this machine' }];
const KEYS = 2000;

async function finished(h: HangarProcess, name: string, id: string, ms = 60_000): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await h.get(`/v2/instances/${name}/backups/${id}/`);
    if (res.status !== 200) throw new Error(`backup ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.data.state === 'COMPLETED' || res.body.data.state === 'FAILED') return res.body.data;
    if (Date.now() > until) throw new Error(`backup ${id} still ${res.body.data.state}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Every file under a directory. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** Runs the built CLI against the hangar, logged in through the environment. */
function cli(h: HangarProcess, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env.PATH ?? '', HOME: cwd, HANGAR_URL: h.url, HANGAR_LOGIN: LOGIN, HANGAR_PASSWORD: PASSWORD };
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

for (const engine of ENGINES)
  describe.runIf(enginesAvailable(engine))(`backups of redis instances on the local runtime, engine ${engine}`, () => {
    let h: HangarProcess;
    let src: RedisRecord;
    let backup: any;
    const work = mkdtempSync(join(tmpdir(), 'hangar-e2e-bk-'));

    beforeAll(async () => {
      h = await HangarProcess.start();
      src = await h.createRedis('src', { engine, acls: LOCAL });
      const c = await connectRedis(portOf(src.public_connect_string), src.password);
      try {
        for (let i = 0; i < KEYS; i += 500) {
          const multi = c.multi();
          for (let j = i; j < i + 500; j++) multi.set(`before:${j}`, `value ${j}`);
          await multi.exec();
        }
        await c.set('big', 'x'.repeat(1024 * 1024));
      } finally {
        c.destroy();
      }
    }, 60_000);

    afterAll(async () => {
      await h?.destroy();
      rmSync(work, { recursive: true, force: true });
    });

    it('takes the snapshot on the replica; the download is that RDB, with the recorded size and SHA-256; stored encrypted', async () => {
      const res = await h.post('/v2/instances/src/backups/');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      backup = await finished(h, 'src', res.body.data.id);
      // the version of the server that took it (Valkey's own, not the Redis version it reports too)
      expect(backup).toMatchObject({ state: 'COMPLETED', format: 'rdb', engine_version: engineVersion(engine) });
      expect(backup.used_memory_bytes).toBeGreaterThan(1024 * 1024);
      // the replica saved; the primary never forked for it
      const dir = (role: string) => join(h.dataDir, 'instances', src.id, role);
      expect(existsSync(join(dir('replica'), 'dump.rdb'))).toBe(true);
      expect(existsSync(join(dir('primary'), 'dump.rdb'))).toBe(false);
      const dl = await fetch(`${h.url}/v2/instances/src/backups/${backup.id}/download`, { headers: { 'x-auth-token': h.authToken } });
      expect(dl.status).toBe(200);
      const rdb = Buffer.from(await dl.arrayBuffer());
      expect(rdb.subarray(0, 5).toString()).toBe('REDIS');
      expect(rdb.length).toBe(backup.size_bytes);
      expect(createHash('sha256').update(rdb).digest('hex')).toBe(backup.sha256);
      const [object] = filesUnder(join(h.dataDir, 'backups')).filter((f) => f.includes(backup.id));
      const stored = readFileSync(object!);
      expect(stored.subarray(0, 4).toString()).toBe('HGBK');
      expect(stored.includes(Buffer.from('value 1999'))).toBe(false);
      expect(filesUnder(join(h.dataDir, 'backups')).some((f) => f.endsWith('.partial'))).toBe(false);
    });

    it('restores in place: keys written before the backup are back, keys written after are gone, the replica resynced', async () => {
      const c = await connectRedis(portOf(src.public_connect_string), src.password);
      try {
        await c.set('after:1', 'written after the backup');
        await c.del('before:0');
      } finally {
        c.destroy();
      }
      const states = new Set<string>();
      const res = await h.post('/v2/instances/src/restore/', { backup_id: backup.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await h.waitFor(
        'src',
        (r) => {
          states.add(r?.state);
          return r?.state === 'ACTIVE';
        },
        60_000,
      );
      const restores = (await h.get('/v2/instances/src/restores/')).body.data;
      expect(restores[0]).toMatchObject({ id: res.body.data.id, backup_id: backup.id, state: 'COMPLETED', state_reason: null });
      const r = await connectRedis(portOf(src.public_connect_string), src.password);
      try {
        expect(await r.get('before:0')).toBe('value 0');
        expect(await r.get(`before:${KEYS - 1}`)).toBe(`value ${KEYS - 1}`);
        expect(await r.get('after:1')).toBeNull();
        expect(await r.dbSize()).toBe(KEYS + 1);
      } finally {
        r.destroy();
      }
      expect((await h.get('/v2/redis/src/connectedSlaves/')).body.data).toBe(1);
      // the replica holds the restored data too (a full resync)
      await eventually(
        'the replica has the restored keys',
        async () => {
          const rep = await connectRedis(enginePort(h.dataDir, src.id, 'replica'), src.password);
          try {
            return (await rep.dbSize()) === KEYS + 1 && (await rep.get('after:1')) === null;
          } finally {
            rep.destroy();
          }
        },
        20_000,
      );
    });

    it('keeps the restored data across a restart of the engines (the append-only directory has it)', async () => {
      const manifest = readFileSync(join(h.dataDir, 'instances', src.id, 'primary', 'appendonlydir', 'appendonly.aof.manifest'), 'utf8');
      expect(manifest).toMatch(/type b/);
      const before = enginePid(h.dataDir, src.id, 'primary');
      process.kill(before, 'SIGKILL');
      await eventually(
        'the primary runs again',
        () => {
          try {
            return enginePid(h.dataDir, src.id, 'primary') !== before;
          } catch {
            return false;
          }
        },
        20_000,
      );
      await h.waitFor('src', (r) => r?.state === 'ACTIVE', 30_000);
      await eventually(
        'the restarted primary answers with the restored keys',
        async () => {
          try {
            const c = await connectRedis(portOf(src.public_connect_string), src.password);
            try {
              return (await c.dbSize()) === KEYS + 1 && (await c.get('before:0')) === 'value 0' && (await c.get('after:1')) === null;
            } finally {
              c.destroy();
            }
          } catch {
            return false;
          }
        },
        20_000,
      );
    });

    it("a restore keeps the instance's Redis users and settings (hangar's, not the snapshot's); its operation SUCCEEDS once the instance serves", async () => {
      // both made after the backup was taken
      const user = await h.post('/v2/redis/src/users/', {
        username: 'app',
        password: 'app-password-1',
        keys: ['*'],
        commands: ['+@read', '+@connection'],
      });
      expect(user.status, JSON.stringify(user.body)).toBe(200);
      const set = await h.patch('/v2/redis/src/config/', { 'maxmemory-policy': 'allkeys-lru' });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      const res = await h.post('/v2/instances/src/restore/', { backup_id: backup.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const id = res.headers.get('x-operation-id');
      expect(id).toBe(res.body.data.id);
      let op: any;
      await eventually(
        'the restore operation to finish',
        async () => {
          op = (await h.get(`/v2/operations/${id}/`)).body.data;
          return ['SUCCEEDED', 'FAILED'].includes(op.state);
        },
        60_000,
      );
      expect(op).toMatchObject({ kind: 'restore', state: 'SUCCEEDED', progress: 100 });
      for (const step of ['reading', 'restore:staged', 'restore:engines-stopped', 'restore:data-swapped', 'restored'])
        expect(op.steps.map((s: any) => s.name)).toContain(step);
      expect((await h.get('/v2/instances/src/')).body.data.state).toBe('ACTIVE');
      const port = portOf(src.public_connect_string);
      const app = await connectRedisAs(port, 'app', 'app-password-1');
      try {
        expect(await app.get('before:7')).toBe('value 7');
      } finally {
        app.destroy();
      }
      await eventually(
        'the resynced replica knows the user',
        async () => {
          try {
            const rep = await connectRedisAs(enginePort(h.dataDir, src.id, 'replica'), 'app', 'app-password-1');
            rep.destroy();
            return true;
          } catch {
            return false;
          }
        },
        20_000,
      );
      expect((await h.get('/v2/redis/src/config/')).body.data).toMatchObject({ 'maxmemory-policy': 'allkeys-lru' });
      for (const role of ['primary', 'replica'] as const) {
        const c = await connectRedis(enginePort(h.dataDir, src.id, role), src.password);
        try {
          expect((await c.configGet('maxmemory-policy'))['maxmemory-policy'], role).toBe('allkeys-lru');
        } finally {
          c.destroy();
        }
      }
    });

    it('restores into a new instance with restore_from', async () => {
      const res = await h.post('/v2/instances/', h.redisBody('copy', { engine, restore_from: backup.id, acls: LOCAL }));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const copy = await h.waitFor('copy', (r) => r?.state === 'ACTIVE', 60_000);
      const c = await connectRedis(portOf(copy.public_connect_string), copy.password);
      try {
        expect(await c.dbSize()).toBe(KEYS + 1);
        expect(await c.get('before:7')).toBe('value 7');
        expect(await c.get('after:1')).toBeNull();
      } finally {
        c.destroy();
      }
      expect(copy.password).not.toBe(src.password);
    });

    it.runIf(engine === 'redis')('the CLI takes, lists, downloads and removes backups and restores, with progress', async () => {
      const created = await cli(h, ['backups', 'create', 'src'], work);
      expect(created.code, created.stderr).toBe(0);
      const id = /^id:\s+([0-9a-f]{24})$/m.exec(created.stdout)?.[1];
      expect(id).toBeDefined();
      expect(created.stderr).toMatch(new RegExp(`src backup ${id}: COMPLETED, [\\d.]+ [KM]B after`));
      const ls = await cli(h, ['backups', 'ls', 'src', '--json'], work);
      expect((JSON.parse(ls.stdout) as any[]).map((b) => b.id)).toContain(id);
      const file = join(work, 'src.rdb');
      const dl = await cli(h, ['backups', 'download', 'src', id!, '-o', file], work);
      expect(dl.code, dl.stderr).toBe(0);
      const sha = (JSON.parse((await cli(h, ['backups', 'ls', 'src', '--json'], work)).stdout) as any[]).find((b) => b.id === id).sha256;
      expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(sha);
      const restored = await cli(h, ['instances', 'restore', 'src', id!], work);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stderr).toMatch(new RegExp(`src: restored from ${id}, ACTIVE after`));
      expect(restored.stdout).toContain(`runs on the data of backup ${id}`);
      const rm = await cli(h, ['backups', 'rm', 'src', id!], work);
      expect(rm.code, rm.stderr).toBe(0);
      const gone = await cli(h, ['backups', 'download', 'src', id!, '-o', file], work);
      expect(gone.code).toBe(3);
      expect(gone.stderr).toContain(`backup "${id}" not found`);
    });
  });

describe.runIf(enginesAvailable() && canMount())('no space left in the backup directory', () => {
  let dir: string;
  let h: HangarProcess;
  let mounted = false;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-bkfull-'));
    mkdirSync(join(dir, 'backups'), { mode: 0o700 });
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'hangar-test-backups', join(dir, 'backups')], {
      encoding: 'utf8',
    });
    expect(mount.status, mount.stderr).toBe(0);
    mounted = true;
    h = await HangarProcess.start({ env: { HANGAR_BACKUP_DIR: join(dir, 'backups') } });
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
    if (mounted) spawnSync('umount', [join(dir, 'backups')]);
    await killAllUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the backup is FAILED with the reason, nothing is left in the directory, the instance serves on untouched', async () => {
    const inst = await h.createRedis('full', { acls: LOCAL });
    const c = await connectRedis(portOf(inst.public_connect_string), inst.password);
    try {
      // incompressible, so that the RDB is larger than the directory
      for (let i = 0; i < 6; i++) await c.set(`k${i}`, randomBytes(256 * 1024).toString('base64'));
      const res = await h.post('/v2/instances/full/backups/');
      const b = await finished(h, 'full', res.body.data.id);
      expect(b.state).toBe('FAILED');
      expect(b.state_reason).toMatch(/no space left in the backup directory/);
      expect(filesUnder(join(dir, 'backups'))).toEqual([]);
      expect((await h.get('/v2/instances/full/')).body.data.state).toBe('ACTIVE');
      expect(await c.get('k0')).toHaveLength(Math.ceil((256 * 1024) / 3) * 4);
    } finally {
      c.destroy();
    }
  });
});
