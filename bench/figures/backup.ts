import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Figure } from '../lib/context.js';
import { freePort } from '../lib/free-port.js';
import { createActive, deleteAll } from '../lib/instances.js';
import { RespClient } from '../lib/resp.js';
import { row } from '../lib/result.js';
import { now, sleep, until } from '../lib/time.js';

const MB = 1024 * 1024;

/** Runs a program to its end; rejects with its stderr unless it exits 0. */
function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}: ${err.slice(-500)}`))));
  });
}

/** Fills an instance with `mb` MB of incompressible values (1 MB each), through its primary. */
async function fill(port: number, password: string, mb: number): Promise<void> {
  const c = await RespClient.open(port, password);
  try {
    // base64 of random bytes: RDB compression cannot shrink it much, so the snapshot is ~mb MB
    for (let i = 0; i < mb; i++) await c.call('SET', `blob:${i}`, randomBytes((MB * 3) / 4).toString('base64'));
  } finally {
    c.close();
  }
}

export const backupFigure: Figure = {
  name: 'backup',
  title: 'backup and restore of a Redis instance holding 100 MB, until COMPLETED / ACTIVE again',
  ceiling:
    '`redis-cli --rdb` from the replica + a copy of the file, by hand; restore: copy the RDB, start redis-server on it until it answers',
  target: 'backup <= 3x ceiling; restore reported',
  async run(ctx) {
    const { hangar, api } = await ctx.opsDeployment();
    const mb = ctx.opts.quick ? 20 : 100;
    const backupMs: number[] = [];
    const restoreMs: number[] = [];
    const dumpMs: number[] = [];
    const loadMs: number[] = [];
    let snapshotBytes = 0;
    for (let round = 1; round <= ctx.opts.rounds; round++) {
      const name = `backup-${round}`;
      const [rec] = await createActive(api, [name]);
      const primary = hangar.engine(rec!.id, 'primary');
      const replica = hangar.engine(rec!.id, 'replica');
      await fill(primary.port, rec!.password, mb);
      // the replica has it all before anything is measured
      await until(
        'the replica in sync',
        async () => {
          const [p, r] = await Promise.all([RespClient.open(primary.port, rec!.password), RespClient.open(replica.port, rec!.password)]);
          try {
            const [pi, ri] = await Promise.all([p.info('replication'), r.info('replication')]);
            return Number(ri.slave_repl_offset) >= Number(pi.master_repl_offset) ? true : undefined;
          } finally {
            p.close();
            r.close();
          }
        },
        60_000,
        50,
      );

      // ceiling: redis-cli --rdb from the replica, then a copy of the file to where backups go
      const dir = ctx.procs.tempDir('rdb');
      const t0 = now();
      await run('redis-cli', ['-p', String(replica.port), '--no-auth-warning', '--rdb', join(dir, 'dump.rdb')], {
        ...process.env,
        REDISCLI_AUTH: rec!.password,
      });
      copyFileSync(join(dir, 'dump.rdb'), join(dir, 'copy.rdb'));
      dumpMs.push(now() - t0);
      snapshotBytes = statSync(join(dir, 'dump.rdb')).size;

      // hangar: the API's backup, until COMPLETED
      const b0 = now();
      const created = await api.ok('POST', `/v2/instances/${name}/backups/`, {});
      const id = created.body.data.id as string;
      await until(
        'the backup COMPLETED',
        async () => {
          const r = await api.get(`/v2/instances/${name}/backups/${id}/`);
          if (r.body.data.state === 'FAILED') throw new Error(`backup FAILED: ${r.body.data.state_reason}`);
          return r.body.data.state === 'COMPLETED' ? true : undefined;
        },
        600_000,
        5,
      );
      backupMs.push(now() - b0);

      // ceiling of a restore: the RDB copied into a new directory, redis-server started on it until it answers
      const restoreDir = join(dir, 'restore');
      mkdirSync(restoreDir);
      const port = await freePort();
      writeFileSync(join(restoreDir, 'redis.conf'), `port ${port}\nbind 127.0.0.1\ndir "${restoreDir}"\nappendonly no\nsave ""\n`);
      const l0 = now();
      copyFileSync(join(dir, 'dump.rdb'), join(restoreDir, 'dump.rdb'));
      const server = ctx.procs.spawn('redis-server', [join(restoreDir, 'redis.conf')], { stdio: 'ignore', cwd: restoreDir });
      await until(
        'redis-server loaded the RDB',
        async () => {
          try {
            const c = await RespClient.connect(port);
            try {
              return (await c.send(['PING'])) === 'PONG' ? true : undefined;
            } finally {
              c.close();
            }
          } catch {
            return undefined;
          }
        },
        120_000,
        2,
      );
      loadMs.push(now() - l0);
      await ctx.procs.stop(server);

      // hangar: the API's restore in place, until the instance is ACTIVE again on the restored data
      const r0 = now();
      await api.ok('POST', `/v2/instances/${name}/restore/`, { backup_id: id });
      await until(
        'ACTIVE again after the restore',
        async () => {
          const r = await api.get(`/v2/instances/${name}/restores/`);
          const latest = r.body.data[0];
          if (latest?.state === 'FAILED') throw new Error(`restore FAILED: ${latest.state_reason}`);
          if (latest?.state !== 'COMPLETED') return undefined;
          const inst = await api.get(`/v2/instances/${name}/`);
          return inst.body.data.state === 'ACTIVE' ? true : undefined;
        },
        600_000,
        5,
      );
      restoreMs.push(now() - r0);
      ctx.log(
        `backup round ${round}: ${(snapshotBytes / MB).toFixed(0)} MB RDB; backup ${backupMs.at(-1)!.toFixed(0)} ms (redis-cli --rdb + copy ${dumpMs.at(-1)!.toFixed(0)} ms); restore ${restoreMs.at(-1)!.toFixed(0)} ms (copy + load ${loadMs.at(-1)!.toFixed(0)} ms)`,
      );
      await ctx.procs.removeDir(dir);
      await deleteAll(api, [name]);
      await sleep(200);
    }
    const size = `${mb} MB dataset`;
    return [
      row({
        figure: 'backup',
        metric: `${size}: request -> COMPLETED`,
        unit: 'ms',
        hangar: backupMs,
        ceiling: { what: 'redis-cli --rdb from the replica + a copy of the file', values: dumpMs },
        target: { kind: 'ratio-at-most', value: 3 },
        note: `the snapshot: ${(snapshotBytes / MB).toFixed(1)} MB RDB; hangar also waits for the replica to catch up, hashes (SHA-256) and encrypts (AES-256-GCM) it, and writes it under a temporary name`,
      }),
      row({
        figure: 'backup',
        metric: `${size}: restore request -> ACTIVE`,
        unit: 'ms',
        hangar: restoreMs,
        ceiling: { what: 'copy the RDB and start one redis-server on it until it answers', values: loadMs },
        note: 'hangar reads and checks the whole backup (decryption, SHA-256) before it stops the engines, starts the primary on it, and waits for the replica to resync',
      }),
    ];
  },
};
