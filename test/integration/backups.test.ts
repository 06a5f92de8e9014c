import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/domain/catalog.js';
import type { EmulatedEngine } from '../../src/engines/emulated/emulated-engines.js';
import { firstProductOf } from '../../src/engines/products.js';
import { Keyring } from '../../src/lib/secrets.js';
import { reencryptAll } from '../../src/store/keyring.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS, freshPostgres, POSTGRES_URL } from '../helpers/database.js';
import { type Account, Client, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';

// Backups and restores through the HTTP API on the emulated runtime, whose engines model what an
// instance holds (its MongoDB users): what is restored is what was there when the backup was
// taken. Objects go to a real directory (encrypted) or to s3rver. Real Redis: test/e2e/backups.test.ts.

type Backup = {
  id: string;
  state: string;
  state_reason: string | null;
  sha256: string | null;
  size_bytes: number | null;
  location: string;
  scheduled: boolean;
  instance_name: string;
};

/** Polls a backup until it is COMPLETED or FAILED. */
async function finished(who: Client, name: string, id: string, ms = 10_000): Promise<Backup> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await who.get(`/v2/instances/${name}/backups/${id}/`);
    if (res.status !== 200) throw new Error(`backup ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.data.state === 'COMPLETED' || res.body.data.state === 'FAILED') return res.body.data;
    if (Date.now() > until) throw new Error(`backup ${id} still ${res.body.data.state}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function backUp(who: Client, name: string): Promise<Backup> {
  const res = await who.post(`/v2/instances/${name}/backups/`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data.state).toBe('PENDING');
  return finished(who, name, res.body.data.id);
}

/** The emulated engine of a service: what an instance holds, written as a client would. */
const engineOf = (th: TestHangar, service: string) =>
  th.hangar.zones.targets()[0]!.engines.require(firstProductOf(service as Service).name) as EmulatedEngine;
const idOf = async (who: Client, name: string): Promise<string> => (await who.get(`/v2/instances/${name}/`)).body.data.id;

/** Polls until `condition` holds (10 s at most). */
async function eventually(condition: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Holds the runtime's work, and resolves once a pass of the instance waits at the hold: passes of
 * an instance run one at a time, so none is past the hold then, able to run what is asked next.
 */
async function holdPasses(th: TestHangar, who: Client, name: string): Promise<() => void> {
  const release = th.hold();
  try {
    const id = await idOf(who, name);
    th.hangar.reconciler.enqueue(id);
    await eventually(async () => th.runtime.held.has(id));
    return release;
  } catch (err) {
    release();
    throw err;
  }
}

/** Every file under a directory. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

describe.each(DIALECTS)('backups on %s (emulated runtime, directory storage)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  const backupDir = () => join(th.config.dataDir, 'backups');

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect }));
    await alice.ready(mongoBody('docs'));
    await alice.ready(redisBody('cache'));
    await bob.ready(redisBody('cache'));
  });
  afterAll(() => th?.close());

  describe('200', () => {
    it('takes a backup: PENDING, then COMPLETED with size, SHA-256 and where it is; listed newest first', async () => {
      const first = await backUp(alice, 'cache');
      const second = await backUp(alice, 'cache');
      expect(second).toMatchObject({
        state: 'COMPLETED',
        state_reason: null,
        scheduled: false,
        instance_name: 'cache',
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(second.size_bytes).toBeGreaterThan(0);
      expect(second.location).toMatch(new RegExp(`^file://.*/backups/[0-9a-f]{24}/${second.id}\\.emulated\\.hgb$`));
      const list = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
      expect(list.map((b) => b.id)).toEqual([second.id, first.id]);
      expect(JSON.stringify(list)).not.toMatch(/data_key|dataKey/);
    });

    it('keeps the object encrypted at rest, and downloads it decrypted with its SHA-256', async () => {
      engineOf(th, 'mongodb').write(await idOf(alice, 'docs'), 'secret-doc', 'plain-to-look-for');
      const b = await backUp(alice, 'docs');
      const [file] = filesUnder(backupDir()).filter((f) => f.includes(b.id));
      const stored = readFileSync(file!);
      expect(stored.subarray(0, 4).toString()).toBe('HGBK');
      expect(stored.includes(Buffer.from('plain-to-look-for'))).toBe(false);
      const res = await alice.get(`/v2/instances/docs/backups/${b.id}/download`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
      expect(res.headers.get('x-backup-sha256')).toBe(b.sha256);
      const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
      expect(createHash('sha256').update(text).digest('hex')).toBe(b.sha256);
      expect(text).toContain('plain-to-look-for');
    });

    it('restores in place: RESTORING, then ACTIVE with what the backup held and nothing written after it; users stay', async () => {
      const id = await idOf(alice, 'docs');
      const mongo = engineOf(th, 'mongodb');
      expect(
        (
          await alice.post('/v2/mongodb/docs/databases/app/users', {
            username: 'app',
            password: 'a-password-long-enough',
            roles: [{ role: 'read', db: 'app' }],
          })
        ).status,
      ).toBe(200);
      mongo.write(id, 'before', '1');
      const b = await backUp(alice, 'docs');
      mongo.write(id, 'after', '2');
      const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ backup_id: b.id, kind: 'in_place', state: 'PENDING', instance_name: 'docs' });
      expect((await alice.get('/v2/instances/docs/')).body.data.state).toMatch(/^(RESTORING|ACTIVE)$/);
      await alice.waitFor('docs', (r) => r?.state === 'ACTIVE');
      const restores = (await alice.get('/v2/instances/docs/restores/')).body.data;
      expect(restores[0]).toMatchObject({ id: res.body.data.id, state: 'COMPLETED', state_reason: null });
      expect(mongo.dataOf(id)).toMatchObject({ before: '1' });
      expect(mongo.dataOf(id).after).toBeUndefined();
      // users are hangar's: applied again to the restored data
      expect(th.mongodb.usersOf(id, 'app').map((u) => u.name)).toEqual(['app']);
    });

    it('restores into a new instance with restore_from, also after the backed-up instance is deleted', async () => {
      await alice.ready(mongoBody('short-lived'));
      engineOf(th, 'mongodb').write(await idOf(alice, 'short-lived'), 'kept', 'yes');
      const b = await backUp(alice, 'short-lived');
      await alice.delete('/v2/instances/short-lived/');
      await alice.waitGone('short-lived');
      // its backups stay, listed under the name it had
      const listed = (await alice.get('/v2/instances/short-lived/backups/')).body.data as Backup[];
      expect(listed.map((x) => x.id)).toEqual([b.id]);
      // a new instance of that name lists them beside its own
      await alice.ready(mongoBody('short-lived'));
      expect(((await alice.get('/v2/instances/short-lived/backups/')).body.data as Backup[]).map((x) => x.id)).toEqual([b.id]);
      expect((await alice.get(`/v2/instances/short-lived/backups/${b.id}/`)).status).toBe(200);
      const created = await alice.post('/v2/instances/', mongoBody('reborn', 'mongodb_replica_set', { restore_from: b.id }));
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const rec = await alice.waitFor('reborn', (r) => r?.state === 'ACTIVE');
      expect(engineOf(th, 'mongodb').dataOf(rec.id)).toEqual({ kept: 'yes' });
      const restores = (await alice.get('/v2/instances/reborn/restores/')).body.data;
      expect(restores).toEqual([expect.objectContaining({ backup_id: b.id, kind: 'new_instance', state: 'COMPLETED' })]);
    });

    it('deletes a backup: gone from the list and from the storage', async () => {
      const b = await backUp(alice, 'cache');
      expect(filesUnder(backupDir()).some((f) => f.includes(b.id))).toBe(true);
      const res = await alice.delete(`/v2/instances/cache/backups/${b.id}/`);
      expect(res.status).toBe(200);
      const events = (await alice.get('/v2/events/?limit=5')).body.data as { action: string; target: string }[];
      expect(events[0]).toMatchObject({ action: 'backup.delete', target: `instance:cache/backup:${b.id}` });
      expect((await alice.get(`/v2/instances/cache/backups/${b.id}/`)).status).toBe(404);
      expect(filesUnder(backupDir()).some((f) => f.includes(b.id))).toBe(false);
    });

    it('reads and sets the backup policy', async () => {
      expect((await alice.get('/v2/instances/cache/backup-policy/')).body.data).toEqual({
        schedule: 'off',
        every_hours: null,
        daily_at: null,
        keep_last: null,
        keep_days: null,
        next_run: null,
      });
      const res = await alice.request('PUT', '/v2/instances/cache/backup-policy/', {
        body: { schedule: 'daily', daily_at: '03:30', keep_last: 5 },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({
        schedule: 'daily',
        daily_at: '03:30',
        keep_last: 5,
        keep_days: null,
        next_run: expect.stringMatching(/ 03:30:00$/),
      });
      expect((await alice.get('/v2/instances/cache/backup-policy/')).body.data).toEqual(res.body.data);
      await alice.request('PUT', '/v2/instances/cache/backup-policy/', { body: { schedule: 'off' } });
    });
  });

  describe('400', () => {
    it('refuses a backup of another service (a MongoDB backup into Redis), in place and with restore_from', async () => {
      const b = await backUp(alice, 'docs');
      const res = await alice.post('/v2/instances/cache/restore/', { backup_id: b.id });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'backup_id' });
      expect(res.body.message).toMatch(/mongodb backup.*redis instance/);
      const created = await alice.post('/v2/instances/', redisBody('wrong', { restore_from: b.id }));
      expect(created.status).toBe(400);
      expect(created.body).toMatchObject({ code: 'INVALID_VALUE', field: 'restore_from' });
      expect((await alice.get('/v2/instances/wrong/')).status).toBe(404);
    });

    it("refuses a snapshot of another engine's format, in place and with restore_from; nothing recorded", async () => {
      // engines of one service keep their data differently: mongod's archives, FerretDB's SQLite files
      const b = await backUp(alice, 'docs');
      await th.hangar.store.db.updateTable('backups').set({ format: 'ferretdb-sqlite' }).where('id', '=', b.id).execute();
      const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'backup_id' });
      expect(res.body.message).toMatch(/is a ferretdb-sqlite snapshot; the engine of this instance restores emulated snapshots only/);
      const created = await alice.post('/v2/instances/', mongoBody('other-format', 'mongodb_singledb', { restore_from: b.id }));
      expect(created.status).toBe(400);
      expect(created.body).toMatchObject({ code: 'INVALID_VALUE', field: 'restore_from' });
      expect((await alice.get('/v2/instances/other-format/')).status).toBe(404);
      expect((await alice.get('/v2/instances/docs/')).body.data.state).toBe('ACTIVE');
    });

    it('refuses restore_from into a plan smaller than what the instance used, naming the plans that fit', async () => {
      const b = await backUp(alice, 'cache');
      await th.hangar.store.db
        .updateTable('backups')
        .set({ used_bytes: 700 * 1024 * 1024 })
        .where('id', '=', b.id)
        .execute();
      const res = await alice.post('/v2/instances/', redisBody('small', { restore_from: b.id }));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'plan' });
      expect(res.body.message).toMatch(/"plan" 500 MB is smaller than what the instance of backup .* used \(700 MB\)/);
      expect(res.body.allowed).toEqual([1000, 2500, 5000, 10000, 20000, 50000, 75000, 100000]);
    });

    it('refuses a policy that is not one, naming the field', async () => {
      const put = (body: unknown) => alice.request('PUT', '/v2/instances/cache/backup-policy/', { body });
      expect((await put({ schedule: 'hourly' })).body).toMatchObject({
        code: 'INVALID_VALUE',
        field: 'schedule',
        allowed: ['off', 'every', 'daily'],
      });
      expect((await put({ schedule: 'every' })).body).toMatchObject({ code: 'INVALID_VALUE', field: 'every_hours' });
      expect((await put({ schedule: 'daily', daily_at: '24:00' })).body).toMatchObject({ code: 'INVALID_VALUE', field: 'daily_at' });
      expect((await put({ schedule: 'off', daily_at: '03:00' })).body).toMatchObject({ code: 'INVALID_VALUE', field: 'daily_at' });
      expect((await put({ schedule: 'off', keep_last: 0 })).body).toMatchObject({ code: 'INVALID_VALUE', field: 'keep_last' });
      expect((await put({ schedule: 'off', extra: 1 })).status).toBe(400);
    });

    it('takes no body but {} when asked for a backup', async () => {
      expect((await alice.post('/v2/instances/cache/backups/', { now: true })).body).toMatchObject({ code: 'INVALID_BODY' });
    });
  });

  describe('404', () => {
    it("another account's backup is the same 404 as a missing one, for every route", async () => {
      const b = await backUp(alice, 'cache');
      for (const res of [
        await bob.get(`/v2/instances/cache/backups/${b.id}/`),
        await bob.delete(`/v2/instances/cache/backups/${b.id}/`),
        await bob.get(`/v2/instances/cache/backups/${b.id}/download`),
        await bob.post('/v2/instances/cache/restore/', { backup_id: b.id }),
        await bob.post('/v2/instances/', redisBody('theirs', { restore_from: b.id })),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ code: 'BACKUP_NOT_FOUND', message: `backup "${b.id}" not found` });
      }
      expect((await alice.get(`/v2/instances/cache/backups/${b.id}/`)).status).toBe(200);
      expect((await alice.get(`/v2/instances/docs/backups/${b.id}/`)).status).toBe(404);
    });

    it('an instance that does not exist (or never had backups)', async () => {
      for (const res of [
        await alice.get('/v2/instances/nothing/backups/'),
        await alice.post('/v2/instances/nothing/backups/'),
        await alice.post('/v2/instances/nothing/restore/', { backup_id: '6560a1f2c3d4e5f607182950' }),
        await alice.get('/v2/instances/nothing/backup-policy/'),
        await alice.get('/v2/instances/nothing/restores/'),
      ]) {
        expect(res.body.code).toBe('INSTANCE_NOT_FOUND');
      }
    });
  });

  describe('409', () => {
    it('a second backup while one is in the making gets 409 naming it', async () => {
      await th.hangar.backups.runner.stop();
      try {
        const first = await alice.post('/v2/instances/cache/backups/');
        const second = await alice.post('/v2/instances/cache/backups/');
        expect(second.status).toBe(409);
        expect(second.body.code).toBe('BACKUP_IN_PROGRESS');
        expect(second.body.message).toContain(first.body.data.id);
        // a restore waits for the backup too, and a backup in the making cannot be deleted
        const done = (await alice.get('/v2/instances/cache/backups/')).body.data.find((b: Backup) => b.state === 'COMPLETED');
        expect((await alice.post('/v2/instances/cache/restore/', { backup_id: done.id })).body.code).toBe('BACKUP_IN_PROGRESS');
        expect((await alice.delete(`/v2/instances/cache/backups/${first.body.data.id}/`)).body.code).toBe('BACKUP_IN_PROGRESS');
        expect((await alice.get(`/v2/instances/cache/backups/${first.body.data.id}/download`)).body.code).toBe('BACKUP_NOT_COMPLETED');
      } finally {
        th.hangar.backups.runner.start();
      }
      const list = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
      await finished(alice, 'cache', list[0]!.id);
    });

    it('a restore of an instance that is not ACTIVE', async () => {
      const b = await backUp(alice, 'cache');
      const release = await holdPasses(th, alice, 'cache');
      try {
        expect((await alice.post('/v2/instances/cache/restore/', { backup_id: b.id })).status).toBe(200);
        expect((await alice.get('/v2/instances/cache/')).body.data.state).toBe('RESTORING');
        const again = await alice.post('/v2/instances/cache/restore/', { backup_id: b.id });
        expect(again.status).toBe(409);
        expect(again.body).toMatchObject({ code: 'OPERATION_IN_PROGRESS', message: expect.stringContaining('RESTORING') });
        expect((await alice.post('/v2/instances/cache/backups/')).body.code).toBe('INSTANCE_NOT_READY');
      } finally {
        release();
      }
      await alice.waitFor('cache', (r) => r?.state === 'ACTIVE');
    });
  });

  describe('422', () => {
    it('refuses to restore a backup whose object changed, naming the problem; the instance is untouched', async () => {
      const id = await idOf(alice, 'docs');
      engineOf(th, 'mongodb').write(id, 'still-here', '1');
      const b = await backUp(alice, 'docs');
      engineOf(th, 'mongodb').write(id, 'written-later', '2');
      const [file] = filesUnder(backupDir()).filter((f) => f.includes(b.id));
      const bytes = readFileSync(file!);
      bytes[bytes.length - 20]! ^= 0xff;
      writeFileSync(file!, bytes);
      const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('BACKUP_CORRUPT');
      expect(res.body.message).toMatch(new RegExp(`backup "${b.id}" is corrupt.*the instance is untouched.*authentication failed`));
      const rec = (await alice.get('/v2/instances/docs/')).body.data;
      expect(rec.state).toBe('ACTIVE');
      expect(engineOf(th, 'mongodb').dataOf(rec.id)).toMatchObject({ 'still-here': '1', 'written-later': '2' });
      expect((await alice.post('/v2/instances/', mongoBody('from-corrupt', 'mongodb_replica_set', { restore_from: b.id }))).body.code).toBe(
        'BACKUP_CORRUPT',
      );
    });

    it('refuses a restore whose recorded SHA-256 no longer matches', async () => {
      const b = await backUp(alice, 'docs');
      await th.hangar.store.db
        .updateTable('backups')
        .set({ sha256: 'f'.repeat(64) })
        .where('id', '=', b.id)
        .execute();
      const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.status).toBe(422);
      expect(res.body.message).toMatch(/its SHA-256 is [0-9a-f]{64} .* not the f{64}/);
    });

    it('a missing object is corrupt too', async () => {
      const b = await backUp(alice, 'docs');
      for (const f of filesUnder(backupDir()).filter((x) => x.includes(b.id))) rmSync(f);
      const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.body).toMatchObject({ code: 'BACKUP_CORRUPT', message: expect.stringContaining('missing from the backup storage') });
    });
  });

  describe('a restore that fails once recorded', () => {
    it('in place: the instance serves on with its data, and the restore is FAILED with the reason', async () => {
      const id = await idOf(alice, 'docs');
      engineOf(th, 'mongodb').write(id, 'untouched', 'yes');
      const b = await backUp(alice, 'docs');
      const release = await holdPasses(th, alice, 'docs');
      let restoreId: string;
      try {
        const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
        expect(res.status).toBe(200);
        restoreId = res.body.data.id;
        // the object goes after the request checked it, before the restore ran
        for (const f of filesUnder(backupDir()).filter((x) => x.includes(b.id))) rmSync(f);
      } finally {
        release();
      }
      await eventually(async () => (await alice.get('/v2/instances/docs/restores/')).body.data[0].state === 'FAILED');
      expect((await alice.get('/v2/instances/docs/restores/')).body.data[0]).toMatchObject({
        id: restoreId!,
        state: 'FAILED',
        state_reason: 'its object is missing from the backup storage',
      });
      await alice.waitFor('docs', (r) => r?.state === 'ACTIVE');
      expect(engineOf(th, 'mongodb').dataOf(id)).toMatchObject({ untouched: 'yes' });
    });

    it('into a new instance: the instance is FAILED with the reason', async () => {
      const b = await backUp(alice, 'docs');
      const release = th.hold();
      try {
        expect((await alice.post('/v2/instances/', mongoBody('doomed', 'mongodb_replica_set', { restore_from: b.id }))).status).toBe(200);
        for (const f of filesUnder(backupDir()).filter((x) => x.includes(b.id))) rmSync(f);
      } finally {
        release();
      }
      const rec = await alice.waitFor('doomed', (r) => r?.state === 'FAILED');
      expect(rec.state_reason).toBe(`the restore of backup ${b.id} failed: its object is missing from the backup storage`);
      await alice.delete('/v2/instances/doomed/');
    });
  });

  describe('/metrics', () => {
    it('has the age and size of the last successful backup per instance, and backup durations', async () => {
      const b = await backUp(alice, 'cache');
      const text = (await th.anonymous().get('/metrics')).body as string;
      const id = (await alice.get('/v2/instances/cache/')).body.data.id;
      expect(text).toMatch(
        new RegExp(`hangar_backup_last_success_age_seconds\\{instance_id="${id}",instance_name="cache",service="redis"\\} [0-9.e+-]+`),
      );
      expect(text).toContain(`hangar_backup_last_size_bytes{instance_id="${id}",instance_name="cache",service="redis"} ${b.size_bytes}`);
      expect(text).toMatch(/hangar_backup_duration_seconds_count\{kind="backup",service="redis",outcome="completed"\} [1-9]/);
      expect(text).toMatch(/hangar_backup_duration_seconds_count\{kind="restore",service="mongodb",outcome="completed"\} [1-9]/);
    });
  });
});

describe.each(DIALECTS)('backups and restores as operations (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  const backupDir = () => join(th.config.dataDir, 'backups');

  beforeAll(async () => {
    ({ th, alice } = await startWithTwoAccounts({ dialect }));
    await alice.ready(mongoBody('docs'));
  });
  afterAll(() => th?.close());

  /** The operation an answer started, from its headers (X-Operation-Id, Location). */
  function started(res: { status: number; body: any; headers: Headers }): string {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.headers.get('x-operation-id');
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(res.headers.get('location')).toBe(`/v2/operations/${id}/`);
    return id!;
  }

  /** Waits until the operation is finished; returns it, and the instance's state when it was. */
  async function ended(id: string, instance?: string): Promise<{ op: any; state?: string }> {
    for (const until = Date.now() + 10_000; ; ) {
      const op = (await alice.get(`/v2/operations/${id}/`)).body.data;
      if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state)) {
        return { op, ...(instance ? { state: (await alice.get(`/v2/instances/${instance}/`)).body.data?.state } : {}) };
      }
      if (Date.now() > until) throw new Error(`operation ${id} still ${op.state}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const names = (op: any) => op.steps.map((s: any) => s.name);

  it('a backup is the `backup` operation of its id: X-Operation-Id and Location, its steps and progress, SUCCEEDED with its size and SHA-256', async () => {
    const res = await alice.post('/v2/instances/docs/backups/');
    const id = started(res);
    expect(id).toBe(res.body.data.id);
    const { op } = await ended(id);
    const b = await finished(alice, 'docs', id);
    expect(op).toMatchObject({
      kind: 'backup',
      state: 'SUCCEEDED',
      progress: 100,
      instance_name: 'docs',
      cancellable: true,
      error: null,
      requested_by: { login: alice.login, credential: 'token' },
      request_id: res.headers.get('x-request-id'),
      detail: { backup_id: id, scheduled: false, size_bytes: b.size_bytes, sha256: b.sha256 },
    });
    expect(b.state).toBe('COMPLETED');
    expect(names(op)).toEqual(['recorded', 'started', 'snapshot', 'storing', 'succeeded']);
    expect(op.steps.find((s: any) => s.name === 'succeeded').message).toBe(`${b.size_bytes} bytes stored at ${b.location}`);
    // a finished backup's operation cannot be cancelled any more
    expect((await alice.post(`/v2/operations/${id}/cancel`)).body).toMatchObject({ code: 'OPERATION_NOT_CANCELLABLE' });
  });

  it('a restore in place is the `restore` operation of its id; it SUCCEEDS once the instance serves the restored data', async () => {
    const b = await backUp(alice, 'docs');
    const res = await alice.post('/v2/instances/docs/restore/', { backup_id: b.id });
    const id = started(res);
    expect(id).toBe(res.body.data.id);
    const { op, state } = await ended(id, 'docs');
    expect(state).toBe('ACTIVE');
    expect(op).toMatchObject({
      kind: 'restore',
      state: 'SUCCEEDED',
      progress: 100,
      cancellable: false,
      detail: { backup_id: b.id, in_place: true },
    });
    expect(names(op)).toEqual(['recorded', 'reading', 'emulated:restore-staged', 'restored', 'succeeded']);
    expect(op.steps.map((s: any) => s.at.$date)).toEqual([...op.steps.map((s: any) => s.at.$date)].sort((x, y) => x - y));
  });

  it('a create with restore_from is a create operation naming its restore; the `restore` operation SUCCEEDS with it', async () => {
    const b = await backUp(alice, 'docs');
    const res = await alice.post('/v2/instances/', mongoBody('from-backup', 'mongodb_replica_set', { restore_from: b.id }));
    const create = await ended(started(res), 'from-backup');
    expect(create.op).toMatchObject({
      kind: 'create',
      state: 'SUCCEEDED',
      detail: { restore_from: b.id, restore_id: expect.stringMatching(/^[0-9a-f]{24}$/) },
    });
    const restoreId = create.op.detail.restore_id;
    const restore = await ended(restoreId, 'from-backup');
    expect(restore.op).toMatchObject({
      kind: 'restore',
      state: 'SUCCEEDED',
      instance_name: 'from-backup',
      detail: { backup_id: b.id, in_place: false },
    });
    expect(restore.state).toBe('ACTIVE');
    expect((await alice.get('/v2/instances/from-backup/restores/')).body.data.map((r: any) => r.id)).toEqual([restoreId]);
  });

  it('a restore that fails once recorded is a FAILED operation saying why; into a new instance its create fails too', async () => {
    const b = await backUp(alice, 'docs');
    const release = await holdPasses(th, alice, 'docs');
    let inPlace: string;
    let create: string;
    try {
      inPlace = started(await alice.post('/v2/instances/docs/restore/', { backup_id: b.id }));
      create = started(await alice.post('/v2/instances/', mongoBody('never-restored', 'mongodb_replica_set', { restore_from: b.id })));
      // the object goes after the requests checked it, before the restores ran
      for (const f of filesUnder(backupDir()).filter((x) => x.includes(b.id))) rmSync(f);
    } finally {
      release();
    }
    const failed = { state: 'FAILED', error: { code: 'BACKUP_CORRUPT', message: 'its object is missing from the backup storage' } };
    expect((await ended(inPlace!)).op).toMatchObject({ kind: 'restore', ...failed });
    const created = (await ended(create!)).op;
    expect(created).toMatchObject({ kind: 'create', state: 'FAILED', error: { code: 'INSTANCE_FAILED' } });
    expect((await ended(created.detail.restore_id)).op).toMatchObject({ kind: 'restore', ...failed });
    await alice.waitFor('docs', (r) => r?.state === 'ACTIVE');
  });

  it('a restore of an instance deleted before it ran is CANCELLED', async () => {
    await alice.ready(mongoBody('going'));
    const b = await backUp(alice, 'going');
    const release = await holdPasses(th, alice, 'going');
    let id: string;
    try {
      id = started(await alice.post('/v2/instances/going/restore/', { backup_id: b.id }));
      expect((await alice.delete('/v2/instances/going/')).status).toBe(200);
    } finally {
      release();
    }
    expect((await ended(id!)).op).toMatchObject({ kind: 'restore', state: 'CANCELLED', error: null });
    expect((await ended(id!)).op.steps.at(-1).message).toBe('the instance was deleted');
  });
});

describe('backups that fail', () => {
  it('an unwritable backup directory: the backup is FAILED with the reason, the instance untouched, nothing listed half-written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-bk-'));
    const notADir = join(dir, 'file');
    writeFileSync(notADir, 'a file where the backup directory should be');
    const th = await startTestHangar({ env: { HANGAR_BACKUP_DIR: join(notADir, 'backups') } });
    try {
      const alice = await th.signup();
      await alice.ready(redisBody('cache'));
      const b = await backUp(alice, 'cache');
      expect(b.state).toBe('FAILED');
      expect(b.state_reason).toMatch(/^the backup storage failed: the backup directory .* cannot be written \(ENOTDIR\)/);
      expect(b.sha256).toBeNull();
      expect((await alice.get('/v2/instances/cache/')).body.data).toMatchObject({ state: 'ACTIVE' });
      expect((await alice.post('/v2/instances/cache/restore/', { backup_id: b.id })).body.code).toBe('BACKUP_NOT_COMPLETED');
    } finally {
      await th.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a download of a backup that no longer matches is cut short: fewer bytes than Content-Length', async () => {
    const th = await startTestHangar({ listen: true });
    try {
      const alice = await th.signup();
      await alice.ready(redisBody('cache'));
      engineOf(th, 'redis').write(await idOf(alice, 'cache'), 'k', 'v'.repeat(100_000));
      const b = await backUp(alice, 'cache');
      await th.hangar.store.db
        .updateTable('backups')
        .set({ sha256: 'f'.repeat(64) })
        .where('id', '=', b.id)
        .execute();
      const token = (alice.auth as { token: string }).token;
      const res = await fetch(`${th.url}/v2/instances/cache/backups/${b.id}/download`, { headers: { 'x-auth-token': token } });
      expect(res.status).toBe(200);
      expect(Number(res.headers.get('content-length'))).toBe(b.size_bytes);
      let received = 0;
      const read = (async () => {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
      })();
      await expect(read).rejects.toThrow();
      expect(received).toBeLessThan(b.size_bytes!);
    } finally {
      await th.close();
    }
  });

  it('S3 storage unreachable: FAILED with the reason, the instance untouched', async () => {
    const th = await startTestHangar({
      env: {
        HANGAR_BACKUP_S3_BUCKET: 'nowhere',
        HANGAR_BACKUP_S3_ENDPOINT: 'http://127.0.0.1:9',
        HANGAR_BACKUP_S3_ACCESS_KEY_ID: 'k',
        HANGAR_BACKUP_S3_SECRET_ACCESS_KEY: 's',
      },
    });
    try {
      const alice = await th.signup();
      await alice.ready(redisBody('cache'));
      const b = await backUp(alice, 'cache');
      expect(b.state).toBe('FAILED');
      expect(b.state_reason).toMatch(
        /^the backup storage failed: storing s3:\/\/nowhere\/hangar\/.*: the object storage is unreachable \(ECONNREFUSED\)/,
      );
      expect((await alice.get('/v2/instances/cache/')).body.data.state).toBe('ACTIVE');
    } finally {
      await th.close();
    }
  });

  it('a backup whose hangar died while it ran is FAILED after the restart, and what it wrote is removed', async () => {
    const th = await startTestHangar();
    try {
      const alice = await th.signup();
      await alice.ready(redisBody('cache'));
      await th.hangar.backups.runner.stop();
      const id = (await alice.post('/v2/instances/cache/backups/')).body.data.id as string;
      // as a replica that died while storing it leaves it: RUNNING under its name, a partial object
      const row = await th.hangar.store.db.selectFrom('backups').select('storage_key').where('id', '=', id).executeTakeFirstOrThrow();
      await th.hangar.store.db
        .updateTable('backups')
        .set({ state: 'RUNNING', lease_owner: 'gone:1', lease_expires_at: Date.now() + 60_000 })
        .where('id', '=', id)
        .execute();
      const partial = join(th.config.dataDir, 'backups', `${row.storage_key}.partial`);
      mkdirSync(join(partial, '..'), { recursive: true });
      writeFileSync(partial, 'half');
      await th.restart();
      const b = await finished(new Client(th.target, alice.auth), 'cache', id);
      expect(b).toMatchObject({ state: 'FAILED', state_reason: expect.stringMatching(/^hangar stopped while the backup ran/) });
      expect(existsSync(partial)).toBe(false);
    } finally {
      await th.close();
    }
  });
});

describe('schedules and retention (a test clock)', () => {
  let clock = Date.UTC(2026, 10, 26, 10, 0, 0);
  const now = () => clock;
  let th: TestHangar;
  let alice: Account;

  beforeAll(async () => {
    th = await startTestHangar({ backupClock: now });
    alice = await th.signup();
    await alice.ready(redisBody('cache'));
  });
  afterAll(() => th?.close());

  const scheduled = async () => ((await alice.get('/v2/instances/cache/backups/')).body.data as Backup[]).filter((b) => b.scheduled);

  it('fires every N hours, once per due run, keeps the last K; the schedule survives a restart', async () => {
    const set = await alice.request('PUT', '/v2/instances/cache/backup-policy/', {
      body: { schedule: 'every', every_hours: 6, keep_last: 2 },
    });
    expect(set.status).toBe(200);
    // the schedule counts from when it was set (the API's clock); move the test clock past it
    const next = Date.parse(`${set.body.data.next_run.replace(' ', 'T')}Z`);
    clock = next - 1000;
    await th.hangar.backups.scheduler.tick();
    expect(await scheduled()).toEqual([]);
    for (let i = 1; i <= 3; i++) {
      const before = (await scheduled()).map((b) => b.id);
      clock += 6 * 3_600_000;
      await th.hangar.backups.scheduler.tick();
      await th.hangar.backups.scheduler.tick();
      const list = await scheduled();
      const fresh = list.filter((b) => !before.includes(b.id));
      expect(fresh.length).toBe(1);
      await finished(alice, 'cache', fresh[0]!.id);
      // its operation, of its id, was asked by nobody
      expect((await alice.get(`/v2/operations/${fresh[0]!.id}/`)).body.data).toMatchObject({
        kind: 'backup',
        requested_by: null,
        detail: { scheduled: true },
      });
      await th.hangar.backups.scheduler.tick();
      expect((await scheduled()).length).toBe(Math.min(i, 2));
    }
    const kept = await scheduled();
    expect(kept.length).toBe(2);
    expect(kept.every((b) => b.state === 'COMPLETED' && b.scheduled)).toBe(true);
    // still due after a restart: fires once, not once per missed run
    clock += 24 * 3_600_000;
    await th.restart();
    const again = new Client(th.target, alice.auth);
    await th.hangar.backups.scheduler.tick();
    await th.hangar.backups.scheduler.tick();
    const after = ((await again.get('/v2/instances/cache/backups/')).body.data as Backup[]).filter((b) => b.scheduled);
    expect(after.filter((b) => !kept.some((k) => k.id === b.id)).length).toBe(1);
    const policy = (await again.get('/v2/instances/cache/backup-policy/')).body.data;
    expect(Date.parse(`${policy.next_run.replace(' ', 'T')}Z`)).toBe(clock + 6 * 3_600_000);
    alice = Object.assign(again, { login: alice.login, password: alice.password });
  });

  it('daily at HH:MM UTC, and retention by age prunes what is older than D days', async () => {
    const set = await alice.request('PUT', '/v2/instances/cache/backup-policy/', {
      body: { schedule: 'daily', daily_at: '03:00', keep_days: 1 },
    });
    expect(set.body.data.next_run).toMatch(/ 03:00:00$/);
    for (const b of await scheduled()) await finished(alice, 'cache', b.id);
    const before = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
    // two days on: everything finished more than a day before the clock goes
    clock = Date.parse(`${set.body.data.next_run.replace(' ', 'T')}Z`) + 2 * 86_400_000;
    await th.hangar.backups.scheduler.tick();
    const after = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
    expect(after.some((b) => before.some((x) => x.id === b.id))).toBe(false);
    const fresh = after.filter((b) => b.scheduled);
    expect(fresh.length).toBe(1);
    await finished(alice, 'cache', fresh[0]!.id);
    const policy = (await alice.get('/v2/instances/cache/backup-policy/')).body.data;
    expect(policy.next_run).toMatch(/ 03:00:00$/);
    expect(Date.parse(`${policy.next_run.replace(' ', 'T')}Z`)).toBeGreaterThan(clock);
  });

  it('a deleted instance keeps its backups until their retention ends', async () => {
    await alice.request('PUT', '/v2/instances/cache/backup-policy/', { body: { schedule: 'off', keep_days: 3 } });
    const kept = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
    expect(kept.length).toBeGreaterThan(0);
    await alice.delete('/v2/instances/cache/');
    await alice.waitGone('cache');
    await th.hangar.backups.scheduler.tick();
    expect(((await alice.get('/v2/instances/cache/backups/')).body.data as Backup[]).map((b) => b.id)).toEqual(kept.map((b) => b.id));
    clock += 4 * 86_400_000;
    await th.hangar.backups.scheduler.tick();
    expect((await alice.get('/v2/instances/cache/backups/')).status).toBe(404);
  });
});

describe.runIf(POSTGRES_URL !== undefined)('two replicas on one PostgreSQL', () => {
  it('fire a due schedule once', async () => {
    let clock = Date.now();
    const pg = await freshPostgres();
    const key = randomBytes(32).toString('base64');
    const env = { HANGAR_SECRET_KEY: key };
    const a = await startTestHangar({ databaseUrl: pg.url, env, backupClock: () => clock });
    const b = await startTestHangar({ databaseUrl: pg.url, env: { ...env, HANGAR_REPLICA_ID: 'second' }, backupClock: () => clock });
    try {
      const alice = await a.signup();
      await alice.ready(redisBody('cache'));
      const set = await alice.request('PUT', '/v2/instances/cache/backup-policy/', { body: { schedule: 'every', every_hours: 1 } });
      // next_run is shown to the second
      clock = Date.parse(`${set.body.data.next_run.replace(' ', 'T')}Z`) + 1000;
      await Promise.all([
        a.hangar.backups.scheduler.tick(),
        b.hangar.backups.scheduler.tick(),
        a.hangar.backups.scheduler.tick(),
        b.hangar.backups.scheduler.tick(),
      ]);
      const list = (await alice.get('/v2/instances/cache/backups/')).body.data as Backup[];
      expect(list.length).toBe(1);
      expect(list[0]!.scheduled).toBe(true);
      await finished(alice, 'cache', list[0]!.id);
      // with that backup done (nothing in the making to refuse another), the run is still taken
      await Promise.all([b.hangar.backups.scheduler.tick(), a.hangar.backups.scheduler.tick()]);
      expect(((await alice.get('/v2/instances/cache/backups/')).body.data as Backup[]).length).toBe(1);
    } finally {
      await b.close();
      await a.close();
      await pg.drop();
    }
  });
});

describe('key rotation', () => {
  it('keeps old backups readable once the old key is gone', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-rot-'));
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    let th = await startTestHangar({ dataDir, env: { HANGAR_SECRET_KEY: oldKey.toString('base64') } });
    try {
      const alice = await th.signup();
      await alice.ready(mongoBody('docs'));
      engineOf(th, 'mongodb').write(await idOf(alice, 'docs'), 'across', 'rotation');
      const b = await backUp(alice, 'docs');
      await th.stop();
      // hangar secrets rotate with HANGAR_SECRET_KEY=NEW,OLD: every sealed value, data keys included
      const { openStore } = await import('../../src/store/database.js');
      const store = await openStore({ dataDir, databaseUrl: undefined });
      await reencryptAll(store.db, new Keyring([newKey, oldKey]));
      await store.close();
      th = await startTestHangar({ dataDir, env: { HANGAR_SECRET_KEY: newKey.toString('base64') } });
      const again = new Client(th.target, alice.auth);
      const dl = await again.get(`/v2/instances/docs/backups/${b.id}/download`);
      expect(dl.status).toBe(200);
      expect(
        createHash('sha256')
          .update(typeof dl.body === 'string' ? dl.body : JSON.stringify(dl.body))
          .digest('hex'),
      ).toBe(b.sha256);
      const res = await again.post('/v2/instances/docs/restore/', { backup_id: b.id });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const rec = await again.waitFor('docs', (r) => r?.state === 'ACTIVE');
      expect(engineOf(th, 'mongodb').dataOf(rec.id)).toEqual({ across: 'rotation' });
    } finally {
      await th.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('S3-compatible storage (s3rver, a stand-in for S3 started by the test)', () => {
  let server: S3rver;
  let s3: S3Client;
  let th: TestHangar;
  let alice: Account;
  const bucket = 'hangar-backups';
  const s3dir = mkdtempSync(join(tmpdir(), 'hangar-s3rver-'));

  beforeAll(async () => {
    server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3dir });
    const { port } = await server.run();
    const endpoint = `http://127.0.0.1:${port}`;
    s3 = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    th = await startTestHangar({
      env: {
        HANGAR_BACKUP_S3_BUCKET: bucket,
        HANGAR_BACKUP_S3_ENDPOINT: endpoint,
        HANGAR_BACKUP_S3_PREFIX: 'team-a/',
        HANGAR_BACKUP_S3_ACCESS_KEY_ID: 'S3RVER',
        HANGAR_BACKUP_S3_SECRET_ACCESS_KEY: 'S3RVER',
      },
    });
    alice = await th.signup();
    await alice.ready(mongoBody('docs'));
  });
  afterAll(async () => {
    await th?.close();
    s3?.destroy();
    await server?.close();
    rmSync(s3dir, { recursive: true, force: true });
  });

  it('stores encrypted objects in the bucket, restores from them and removes them', async () => {
    const id = await idOf(alice, 'docs');
    engineOf(th, 'mongodb').write(id, 'in-s3', 'plain-in-s3');
    const b = await backUp(alice, 'docs');
    expect(b.state, b.state_reason ?? '').toBe('COMPLETED');
    const key = `team-a/${id}/${b.id}.emulated.hgb`;
    expect(b.location).toBe(`s3://${bucket}/${key}`);
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const stored = Buffer.from(await object.Body!.transformToByteArray());
    expect(stored.subarray(0, 4).toString()).toBe('HGBK');
    expect(stored.includes(Buffer.from('plain-in-s3'))).toBe(false);
    engineOf(th, 'mongodb').write(id, 'later', 'x');
    expect((await alice.post('/v2/instances/docs/restore/', { backup_id: b.id })).status).toBe(200);
    await alice.waitFor('docs', (r) => r?.state === 'ACTIVE');
    expect(engineOf(th, 'mongodb').dataOf(id)).toEqual({ 'in-s3': 'plain-in-s3' });
    expect((await alice.delete(`/v2/instances/docs/backups/${b.id}/`)).status).toBe(200);
    await expect(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).rejects.toMatchObject({ name: 'NotFound' });
  });
});
