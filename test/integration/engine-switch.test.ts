import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatedEngine } from '../../src/engines/emulated/emulated-engines.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar, startWithTwoAccounts } from '../helpers/hangar.js';
import { SseReader } from '../helpers/sse.js';

// POST /v2/redis/<name>/engine/ through the HTTP API on the emulated runtime, whose engines keep
// an instance's data, users and settings: the switch keeps them, the record shows the new engine
// once done, and what is refused is refused with the reason. Real engines under a writing client:
// test/e2e/engine-switch.test.ts.

const SWITCH = { engine: 'valkey', version: '8.0.1' };
/** Versions the emulated runtime offers of Valkey. */
const VALKEY_VERSIONS = ['8.0.1', '8.0', '7.2.4', '7.2'];

/** The emulated engines (one model per instance, whichever product's engine drives it). */
const models = (th: TestHangar) => th.hangar.zones.targets()[0]!.engines.require('redis') as EmulatedEngine;

async function operation(who: Account, id: string, done = true): Promise<any> {
  const until = Date.now() + 10_000;
  for (;;) {
    const op = (await who.get(`/v2/operations/${id}/`)).body.data;
    if (!done || ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state)) return op;
    if (Date.now() > until) throw new Error(`operation ${id} still ${op.state}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(DIALECTS)('POST /v2/redis/<name>/engine/ on %s', (dialect) => {
  let th: TestHangar, alice: Account, bob: Account;

  beforeAll(async () => {
    ({ th, alice, bob } = await startWithTwoAccounts({ dialect, listen: true }));
    await alice.ready(redisBody('r'));
    await alice.ready(redisBody('v', { engine: 'valkey', version: '8.0.1' }));
    await alice.ready(mongoBody('m'));
    await bob.ready(redisBody('bobs'));
  });
  afterAll(() => th.close());

  describe('200', () => {
    it('moves a Redis instance to Valkey: ACTIVE throughout, the operation follows it, and the record changes once done, keeping what it holds', async () => {
      const before = await alice.ready(redisBody('sw', { acls: [{ cidr_mask: '198.51.100.7', description: 'app' }] }));
      expect(before).toMatchObject({ engine: 'redis', version: '7.0.15' });
      models(th).write(before.id, 'kept', 'across the switch');
      expect(
        (
          await alice.post('/v2/redis/sw/users/', {
            username: 'app',
            password: 'app-password-1',
            keys: ['app:*'],
            commands: ['+@read'],
          })
        ).status,
      ).toBe(200);
      expect((await alice.patch('/v2/redis/sw/config/', { 'maxmemory-policy': 'allkeys-lru' })).status).toBe(200);
      await alice.waitFor('sw', (r) => r?.state === 'ACTIVE');

      const token = (alice.auth as { token: string }).token;
      const stream = await SseReader.open(`${th.url}/v2/events/stream`, { 'x-auth-token': token });
      const release = th.hold();
      let id: string;
      try {
        const res = await alice.post('/v2/redis/sw/engine/', SWITCH);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body).toEqual({ data: 'Switching instance "sw" from Redis 7.0.15 to Valkey 8.0.1 has started' });
        id = res.headers.get('x-operation-id')!;
        expect(id).toMatch(/^[0-9a-f]{24}$/);
        expect(res.headers.get('location')).toBe(`/v2/operations/${id}/`);
        // serving meanwhile: ACTIVE, on the engine it runs until the switch is done
        expect((await alice.get('/v2/instances/sw/')).body.data).toMatchObject({ state: 'ACTIVE', engine: 'redis', version: '7.0.15' });
        expect((await alice.get('/v2/redis/sw/connectedSlaves/')).body).toEqual({ data: 1 });
        expect(await operation(alice, id, false)).toMatchObject({
          kind: 'engine.switch',
          state: 'PENDING',
          detail: { from_engine: 'redis', from_version: '7.0.15', to_engine: 'valkey', to_version: '8.0.1' },
        });
      } finally {
        release();
      }
      expect(await operation(alice, id)).toMatchObject({ kind: 'engine.switch', state: 'SUCCEEDED', progress: 100 });
      // on the event stream (and so to webhooks) as every operation: created, then succeeded
      try {
        const mine = (ms: any[]) => ms.filter((m) => m.data?.operation_id === id);
        await stream.until('the switch to succeed on the stream', (ms) => mine(ms).some((m) => m.event === 'operation.succeeded'));
        const kinds = mine(stream.events).map((m) => m.event);
        expect(kinds[0]).toBe('operation.created');
        expect(kinds.at(-1)).toBe('operation.succeeded');
        expect(mine(stream.events).at(-1)!.data).toMatchObject({
          instance_name: 'sw',
          data: { kind: 'engine.switch', detail: { from_engine: 'redis', to_engine: 'valkey', to_version: '8.0.1' } },
        });
      } finally {
        stream.close();
      }
      const after = await alice.waitFor('sw', (r) => r?.engine === 'valkey');
      expect(after).toMatchObject({
        state: 'ACTIVE',
        engine: 'valkey',
        version: '8.0.1',
        id: before.id,
        name: 'sw',
        password: before.password,
        connect_string: before.connect_string,
        public_connect_string: before.public_connect_string,
        servicenet_connect_string: before.servicenet_connect_string,
      });
      expect((await alice.get('/v2/instances/sw/acls/')).body.data.map((a: any) => a.cidr_mask)).toEqual(['198.51.100.7']);
      expect(models(th).dataOf(before.id)).toEqual({ kept: 'across the switch' });
      const access = models(th).redisAccessOf(before.id)!;
      expect(access.users.map((u) => u.name)).toEqual(['app']);
      expect(access.settings).toMatchObject({ 'maxmemory-policy': 'allkeys-lru' });
      expect((await alice.get('/v2/redis/sw/maxMemoryPolicy/')).body).toEqual({ data: 'allkeys-lru' });
      expect((await alice.get('/v2/redis/sw/stats/')).body.data.version).toBe('8.0.1');
      // once on Valkey, the way back is refused
      expect((await alice.post('/v2/redis/sw/engine/', { engine: 'redis', version: '7.0.15' })).status).toBe(400);
    });

    it('a zone whose capacity the new engine fits: the instance counts once', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'hangar-zones-'));
      const zones = join(dir, 'zones.json');
      writeFileSync(zones, JSON.stringify({ 'US-Dallas': { runtime: 'emulated', capacity_mb: 1000 } }));
      const other = await startTestHangar({ dialect, env: { HANGAR_ZONES: zones } });
      try {
        const carol = await other.signup();
        await carol.ready(redisBody('full'));
        const res = await carol.post('/v2/redis/full/engine/', SWITCH);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect((await carol.waitFor('full', (r) => r?.engine === 'valkey')).state).toBe('ACTIVE');
      } finally {
        await other.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a zone lowered below what it holds: Valkey promises what Redis does, so the switch takes nothing from it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'hangar-zones-'));
      const zones = join(dir, 'zones.json');
      writeFileSync(zones, JSON.stringify({ 'US-Dallas': { runtime: 'emulated', capacity_mb: 2000 } }));
      const other = await startTestHangar({ dialect, env: { HANGAR_ZONES: zones } });
      try {
        const carol = await other.signup();
        await carol.ready(redisBody('shrunk', { plan: 1000 }));
        // the operator lowers the zone below what its instances promise: a resize is refused
        writeFileSync(zones, JSON.stringify({ 'US-Dallas': { runtime: 'emulated', capacity_mb: 1000 } }));
        await other.restart();
        // the emulated engines start empty after a restart: the instance is rebuilt (DEGRADED a moment) first
        await carol.waitFor('shrunk', (r) => r?.state === 'ACTIVE');
        expect((await carol.post('/v2/redis/shrunk/resize/', { new_plan: 2500 })).body.code).toBe('CAPACITY_EXCEEDED');
        const res = await carol.post('/v2/redis/shrunk/engine/', SWITCH);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect((await carol.waitFor('shrunk', (r) => r?.engine === 'valkey')).state).toBe('ACTIVE');
      } finally {
        await other.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('400', () => {
    it("Valkey to Redis: Valkey's data files are not promised to load in Redis; nothing changes", async () => {
      const res = await alice.post('/v2/redis/v/engine/', { engine: 'redis', version: '7.0.15' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'engine' });
      expect(res.body.message).toBe(
        `instance "v" runs Valkey 8.0.1, which cannot be switched to Redis in place: Valkey's data files are not promised to load in Redis`,
      );
      expect(res.body.allowed).toBeUndefined();
      expect((await alice.get('/v2/instances/v/')).body.data).toMatchObject({ engine: 'valkey', state: 'ACTIVE' });
    });

    it('Redis 7.4, whose data files (RDB version 12) no Valkey loads; nothing changes', async () => {
      await alice.ready(redisBody('r74', { version: '7.4.2' }));
      const res = await alice.post('/v2/redis/r74/engine/', SWITCH);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'engine' });
      expect(res.body.message).toBe(
        'instance "r74" runs Redis 7.4.2, which cannot be switched to Valkey in place: Redis 7.4.2 writes RDB version 12, ' +
          "which Valkey does not load (Valkey loads Redis's up to RDB version 11: Redis 7.2 and earlier)",
      );
      expect((await alice.get('/v2/instances/r74/')).body.data).toMatchObject({ engine: 'redis', version: '7.4.2', state: 'ACTIVE' });
      const ops = (await alice.get('/v2/operations/?instance=r74')).body.data.map((o: any) => o.kind);
      expect(ops).not.toContain('engine.switch');
    });

    it('a version not offered of valkey: the answer lists those offered', async () => {
      const res = await alice.post('/v2/redis/r/engine/', { engine: 'valkey', version: '9.0.0' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'version', allowed: VALKEY_VERSIONS });
      expect(res.body.message).toBe(
        `"version" of a redis instance on valkey "9.0.0" is not allowed; allowed values: ${VALKEY_VERSIONS.join(', ')}`,
      );
      expect((await alice.get('/v2/instances/r/')).body.data).toMatchObject({ engine: 'redis', version: '7.0.15' });
    });

    it('an engine of another service, or none', async () => {
      const res = await alice.post('/v2/redis/r/engine/', { engine: 'mongod', version: '8.0.1' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'engine', allowed: ['redis', 'valkey'] });
    });

    it('the engine it runs already', async () => {
      const res = await alice.post('/v2/redis/r/engine/', { engine: 'redis', version: '7.0.15' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'engine', message: 'instance "r" runs redis 7.0.15 already' });
    });

    it.each<[unknown, string]>([
      [{}, 'engine'],
      [{ engine: 'valkey' }, 'version'],
      [{ engine: 'valkey', version: 8 }, 'version'],
      [{ ...SWITCH, now: true }, 'now'],
    ])('a body %j', async (body, field) => {
      const res = await alice.post('/v2/redis/r/engine/', body);
      expect(res.status).toBe(400);
      expect(res.body.field).toBe(field);
    });
  });

  describe('404', () => {
    it("another account's instance: the same answer as none, and it keeps its engine", async () => {
      const theirs = await alice.post('/v2/redis/bobs/engine/', SWITCH);
      const none = await alice.post('/v2/redis/nope/engine/', SWITCH);
      expect(theirs.status).toBe(404);
      expect(theirs.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'redis instance "bobs" not found' });
      expect(none.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'redis instance "nope" not found' });
      expect((await bob.get('/v2/instances/bobs/')).body.data).toMatchObject({ engine: 'redis', state: 'ACTIVE' });
    });

    it('an instance of another service', async () => {
      const res = await alice.post('/v2/redis/m/engine/', SWITCH);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ code: 'INSTANCE_NOT_FOUND', message: 'instance "m" is a mongodb instance, not a redis instance' });
    });
  });

  describe('409', () => {
    it('while a switch runs: another switch, a backup and a restore wait for it', async () => {
      await alice.ready(redisBody('busy'));
      const backup = await alice.post('/v2/instances/busy/backups/');
      expect(backup.status).toBe(200);
      await alice.waitFor('busy', (r) => r?.state === 'ACTIVE');
      const until = Date.now() + 10_000;
      while ((await alice.get(`/v2/instances/busy/backups/${backup.body.data.id}/`)).body.data.state !== 'COMPLETED') {
        if (Date.now() > until) throw new Error('backup not done');
        await new Promise((r) => setTimeout(r, 20));
      }
      const release = th.hold();
      try {
        expect((await alice.post('/v2/redis/busy/engine/', SWITCH)).status).toBe(200);
        const again = await alice.post('/v2/redis/busy/engine/', SWITCH);
        expect(again.status).toBe(409);
        expect(again.body).toMatchObject({
          code: 'OPERATION_IN_PROGRESS',
          message: 'instance "busy" is switching to valkey 8.0.1; wait until the switch is done (its operation says when) and try again',
        });
        expect((await alice.post('/v2/instances/busy/backups/')).body.code).toBe('OPERATION_IN_PROGRESS');
        // nor can it be cancelled: the way back is not promised
        const switching = (await alice.get('/v2/operations/?instance=busy&kind=engine.switch')).body.data[0];
        const cancel = await alice.post(`/v2/operations/${switching.id}/cancel`);
        expect(cancel.status).toBe(409);
        expect(cancel.body).toMatchObject({ code: 'OPERATION_NOT_CANCELLABLE' });
        expect(cancel.body.message).toContain('a switch of engines cannot be cancelled once recorded');
        expect((await alice.post('/v2/instances/busy/restore/', { backup_id: backup.body.data.id })).body.code).toBe(
          'OPERATION_IN_PROGRESS',
        );
      } finally {
        release();
      }
      await alice.waitFor('busy', (r) => r?.engine === 'valkey' && r.state === 'ACTIVE');
    });

    it('an instance being deleted, or still building', async () => {
      await alice.ready(redisBody('going'));
      const release = th.hold();
      try {
        await alice.delete('/v2/instances/going/');
        expect((await alice.post('/v2/redis/going/engine/', SWITCH)).body.code).toBe('INSTANCE_DELETING');
        await alice.post('/v2/instances/', redisBody('coming'));
        const building = await alice.post('/v2/redis/coming/engine/', SWITCH);
        expect(building.status).toBe(409);
        expect(building.body.code).toBe('OPERATION_IN_PROGRESS');
      } finally {
        release();
      }
      expect((await alice.waitFor('coming', (r) => r?.state === 'ACTIVE')).engine).toBe('redis');
    });
  });

  it('401: without credentials, and the engine stays', async () => {
    expect((await th.anonymous().post('/v2/redis/r/engine/', SWITCH)).status).toBe(401);
    expect((await alice.get('/v2/instances/r/')).body.data).toMatchObject({ engine: 'redis', state: 'ACTIVE' });
  });
});

describe.each(DIALECTS)('backups across engines on %s', (dialect) => {
  let th: TestHangar, alice: Account;

  beforeAll(async () => {
    ({ th, alice } = await startWithTwoAccounts({ dialect }));
  });
  afterAll(() => th.close());

  async function backupOf(name: string): Promise<any> {
    const res = await alice.post(`/v2/instances/${name}/backups/`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const until = Date.now() + 10_000;
    for (;;) {
      const b = (await alice.get(`/v2/instances/${name}/backups/${res.body.data.id}/`)).body.data;
      if (b.state === 'COMPLETED') return b;
      if (Date.now() > until) throw new Error(`backup ${b.id} still ${b.state}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('a Valkey backup is refused by a Redis instance, in place and as restore_from, naming why', async () => {
    await alice.ready(redisBody('vk', { engine: 'valkey', version: '8.0.1' }));
    await alice.ready(redisBody('rd'));
    const b = await backupOf('vk');
    expect(b).toMatchObject({ engine: 'valkey', engine_version: '8.0.1' });
    const why = `it cannot be restored into a redis instance: Valkey's data files are not promised to load in Redis`;
    const inPlace = await alice.post('/v2/instances/rd/restore/', { backup_id: b.id });
    expect(inPlace.status).toBe(400);
    expect(inPlace.body).toMatchObject({ code: 'INVALID_VALUE', field: 'backup_id' });
    expect(inPlace.body.message).toBe(`"backup_id": backup "${b.id}" was taken on valkey 8.0.1; ${why}`);
    const fresh = await alice.post('/v2/instances/', redisBody('rd-copy', { restore_from: b.id }));
    expect(fresh.status).toBe(400);
    expect(fresh.body).toMatchObject({ code: 'INVALID_VALUE', field: 'restore_from' });
    expect(fresh.body.message).toContain(why);
    expect((await alice.get('/v2/instances/rd-copy/')).status).toBe(404);
    // into Valkey it restores
    expect(
      (await alice.post('/v2/instances/', redisBody('vk-copy', { engine: 'valkey', version: '8.0.1', restore_from: b.id }))).status,
    ).toBe(200);
    expect((await alice.waitFor('vk-copy', (r) => r?.state === 'ACTIVE')).engine).toBe('valkey');
  });

  it('a backup of Redis 7.4 is refused by a Valkey instance, naming the RDB version', async () => {
    await alice.ready(redisBody('r74', { version: '7.4.2' }));
    const b = await backupOf('r74');
    expect(b).toMatchObject({ engine: 'redis', engine_version: '7.4.2' });
    const res = await alice.post('/v2/instances/', redisBody('r74-on-valkey', { engine: 'valkey', version: '8.0.1', restore_from: b.id }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_VALUE', field: 'restore_from' });
    expect(res.body.message).toBe(
      `"restore_from": backup "${b.id}" was taken on redis 7.4.2; it cannot be restored into a valkey instance: ` +
        "Redis 7.4.2 writes RDB version 12, which Valkey does not load (Valkey loads Redis's up to RDB version 11: Redis 7.2 and earlier)",
    );
    expect((await alice.get('/v2/instances/r74-on-valkey/')).status).toBe(404);
  });

  it('a Redis backup restores into a Valkey instance, in place and as restore_from, and into a switched instance', async () => {
    const src = await alice.ready(redisBody('from-redis'));
    models(th).write(src.id, 'k', 'from redis');
    const b = await backupOf('from-redis');
    expect(b).toMatchObject({ engine: 'redis', engine_version: '7.0.15' });
    const copy = await alice.post('/v2/instances/', redisBody('into-valkey', { engine: 'valkey', version: '8.0.1', restore_from: b.id }));
    expect(copy.status, JSON.stringify(copy.body)).toBe(200);
    const rec = await alice.waitFor('into-valkey', (r) => r?.state === 'ACTIVE');
    expect(models(th).dataOf(rec.id)).toEqual({ k: 'from redis' });
    // the instance it was taken of, switched to Valkey, takes it back in place
    expect((await alice.post('/v2/redis/from-redis/engine/', SWITCH)).status).toBe(200);
    await alice.waitFor('from-redis', (r) => r?.engine === 'valkey' && r.state === 'ACTIVE');
    models(th).write(src.id, 'k', 'written on valkey');
    const res = await alice.post('/v2/instances/from-redis/restore/', { backup_id: b.id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await alice.waitFor('from-redis', (r) => r?.state === 'ACTIVE');
    expect((await operation(alice, res.body.data.id)).state).toBe('SUCCEEDED');
    expect(models(th).dataOf(src.id)).toEqual({ k: 'from redis' });
  });
});
