import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarApiError, HangarClient, type Instance } from '../../src/client/index.js';
import { TerminalError } from '../../src/domain/errors.js';
import { accounts } from '../helpers/accounts.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** The error a promise rejects with. */
async function failure(p: Promise<unknown>): Promise<HangarApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HangarApiError);
  return err as HangarApiError;
}

describe('HangarClient', () => {
  let th: TestHangar;
  let login: string;
  let hangar: HangarClient;

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    login = (await th.signup()).login;
    hangar = new HangarClient({ url: th.url, login, password: PASSWORD });
  });
  afterAll(() => th?.close());

  describe('logging in', () => {
    it('with a login and password: logs in on first use and keeps the token', async () => {
      const c = new HangarClient({ url: `${th.url}/v2/`, login, password: PASSWORD });
      expect(c.token).toBeUndefined();
      expect(await c.listInstances()).toEqual(expect.any(Array));
      const token = c.token;
      expect(token).toEqual(expect.any(String));
      await c.listInstances();
      expect(c.token).toBe(token);
      expect(await c.verifyToken()).toMatchObject({ login });
    });

    it('with an API key pair', async () => {
      const { user_key, pass_key } = await accounts(th.hangar).createApiKey(login);
      const c = new HangarClient({ url: th.url, userKey: user_key, passKey: pass_key });
      expect(await c.listInstances()).toEqual(expect.any(Array));
      expect((await c.verifyToken()).login).toBe(login);
    });

    it('on a 401 logs in again once and repeats the request', async () => {
      const c = new HangarClient({ url: th.url, login, password: PASSWORD });
      const first = await c.login();
      // Revoked behind the client's back: the next call is refused, then repeated with a new token.
      const revoke = await fetch(`${th.url}/v2/tokens/`, { method: 'DELETE', headers: { 'x-auth-token': first } });
      expect(revoke.status).toBe(200);
      expect(await c.listInstances()).toEqual(expect.any(Array));
      expect(c.token).not.toBe(first);
      expect((await c.verifyToken()).login).toBe(login);
    });

    it('with a token alone, a revoked token is a 401 error (nothing to log in with)', async () => {
      const token = await new HangarClient({ url: th.url, login, password: PASSWORD }).login();
      const c = new HangarClient({ url: th.url, token });
      expect(await c.listInstances()).toEqual(expect.any(Array));
      await c.logout();
      expect(c.token).toBeUndefined();
      const err = await failure(new HangarClient({ url: th.url, token }).listInstances());
      expect(err).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    });

    it('wrong credentials: one 401 error, not a loop', async () => {
      const err = await failure(new HangarClient({ url: th.url, login, password: 'not-the-password' }).listInstances());
      expect(err).toMatchObject({ status: 401, code: 'UNAUTHORIZED', message: expect.stringContaining('wrong login or password') });
      expect(err.requestId).toEqual(expect.any(String));
    });
  });

  describe('every endpoint', () => {
    it('instances: create, wait until ready, read, list, rename, delete, wait until gone', async () => {
      const created = await hangar.createInstance(redisBody('cache'));
      expect(created).toMatchObject({ name: 'cache', state: 'REQUESTED', instance_service: 'redis', _id: { $oid: created.id } });
      const states: string[] = [];
      const ready = await hangar.waitUntilReady('cache', { onPoll: (i) => i && states.push(i.state) });
      expect(ready).toMatchObject({ name: 'cache', state: 'ACTIVE', plan: 500 });
      expect(ready.password).toMatch(/^[0-9a-f]{32}$/);
      expect(states.at(-1)).toBe('ACTIVE');
      expect((await hangar.getInstance('cache')).id).toBe(created.id);
      expect((await hangar.listInstances()).map((i) => i.name)).toContain('cache');
      expect(await hangar.renameInstance('cache', 'sessions')).toContain('sessions');
      expect(await hangar.deleteInstance('sessions')).toContain('sessions');
      await hangar.waitUntilGone('sessions');
      expect((await failure(hangar.getInstance('sessions'))).status).toBe(404);
    });

    it('waits for elasticsearch until COMPLETED', async () => {
      await hangar.createInstance(esBody('search'));
      expect((await hangar.waitUntilReady('search')).state).toBe('COMPLETED');
    });

    it('ACLs: create, list, read, delete', async () => {
      await hangar.createInstance(redisBody('guarded'));
      await hangar.waitUntilReady('guarded');
      const id = await hangar.createAcl('guarded', { cidr_mask: '198.51.100.7', description: 'laptop' });
      expect((await hangar.listAcls('guarded')).map((a) => a.cidr_mask)).toEqual(['198.51.100.7']);
      expect(await hangar.getAcl('guarded', id)).toMatchObject({ _id: { $oid: id }, service_type: 'redis', instance: 'guarded' });
      await hangar.deleteAcl('guarded', id);
      expect(await hangar.listAcls('guarded')).toEqual([]);
    });

    it('redis: the four readings, and a resize followed until ACTIVE on the new plan', async () => {
      await hangar.createInstance(redisBody('kv'));
      await hangar.waitUntilReady('kv');
      expect(await hangar.connectedSlaves('kv')).toBe(1);
      expect(await hangar.spaceUsage('kv')).toEqual({ freeSpacePercentage: expect.any(Number), usedMemoryHuman: expect.any(String) });
      expect(await hangar.maxMemoryPolicy('kv')).toBe('noeviction');
      expect(await hangar.maxClients('kv')).toMatch(/^\d+$/);
      expect(await hangar.resizeRedis('kv', 1000)).toContain('1000');
      expect((await hangar.waitUntilReady('kv')).plan).toBe(1000);
    });

    it('MongoDB users: create, list, update, delete', async () => {
      const m = await hangar.createInstance(mongoBody('docs'));
      await hangar.waitUntilReady('docs');
      expect(await hangar.createMongoUser(m.id, 'app', { username: 'u', password: 'password-1', roles: [{ role: 'readWrite', db: 'app' }] })).toContain('u');
      expect(await hangar.listMongoUsers(m.id, 'app')).toEqual([{ name: 'u', roles: [{ role: 'readWrite', db: 'app' }] }]);
      expect(await hangar.updateMongoUser('docs', 'app', 'u', { roles: [{ role: 'read', db: 'app' }] })).toContain('updated');
      expect((await hangar.listMongoUsers(m.id, 'app'))[0]!.roles).toEqual([{ role: 'read', db: 'app' }]);
      expect(await hangar.deleteMongoUser(m.id, 'app', 'u')).toContain('deleted');
      expect(await hangar.listMongoUsers(m.id, 'app')).toEqual([]);
    });

    it('the audit log, newest first', async () => {
      const events = await hangar.listEvents({ limit: 3 });
      expect(events).toHaveLength(3);
      expect(events[0]!.id).toBeGreaterThan(events[1]!.id);
      const older = await hangar.listEvents({ limit: 1, before: events[0]!.id });
      expect(older[0]!.id).toBe(events[1]!.id);
    });

    it('API keys: create (the pass key once), list, delete; a pair logs in', async () => {
      const key = await hangar.createApiKey();
      expect(key.pass_key).toMatch(/^[0-9a-f]{48}$/);
      expect((await hangar.listApiKeys()).map((k) => k.id)).toContain(key.id);
      const withKey = new HangarClient({ url: th.url, userKey: key.user_key, passKey: key.pass_key });
      expect((await withKey.whoami()).login).toBe(login);
      await hangar.deleteApiKey(key.id);
      expect((await hangar.listApiKeys()).map((k) => k.id)).not.toContain(key.id);
      expect((await failure(hangar.deleteApiKey(key.id))).code).toBe('API_KEY_NOT_FOUND');
    });

    it('whoami: the login and the source address hangar sees', async () => {
      expect(await hangar.whoami()).toMatchObject({ login, source_ip: '127.0.0.1' });
    });
  });

  describe('errors', () => {
    it('an error answer: status, code, message, and the field and allowed values of a 400', async () => {
      const missing = await failure(hangar.getInstance('nope'));
      expect(missing).toMatchObject({ status: 404, code: 'INSTANCE_NOT_FOUND', message: 'instance "nope" not found' });
      const bad = await failure(hangar.createInstance(redisBody('x', { plan: 750 })));
      expect(bad).toMatchObject({ status: 400, code: 'INVALID_VALUE', field: 'plan' });
      expect(bad.allowed).toContain(500);
    });

    it('no hangar at the address: status 0, NETWORK_ERROR', async () => {
      const err = await failure(new HangarClient({ url: `http://127.0.0.1:${await closedPort()}`, login, password: PASSWORD }).listInstances());
      expect(err).toMatchObject({ status: 0, code: 'NETWORK_ERROR', message: expect.stringContaining('cannot reach hangar') });
    });

    it('waiting for an instance that turns FAILED fails with the reason', async () => {
      const restore = th.runtime.failWith(new TerminalError('the engine cannot start: disk full'));
      try {
        await hangar.createInstance(redisBody('doomed'));
        const err = await failure(hangar.waitUntilReady('doomed'));
        expect(err).toMatchObject({ status: 0, code: 'INSTANCE_FAILED', message: expect.stringContaining('disk full') });
        expect(err.instance?.state).toBe('FAILED');
      } finally {
        restore();
      }
    });

    it('waiting longer than allowed fails with WAIT_TIMEOUT and the last state seen', async () => {
      const release = th.hold();
      try {
        await hangar.createInstance(redisBody('slow'));
        const seen: (Instance | undefined)[] = [];
        const err = await failure(hangar.waitUntilReady('slow', { timeoutMs: 300, onPoll: (i) => seen.push(i) }));
        expect(err).toMatchObject({ status: 0, code: 'WAIT_TIMEOUT' });
        expect(['REQUESTED', 'BUILDING']).toContain(err.instance?.state);
        expect(seen.length).toBeGreaterThan(1);
      } finally {
        release();
      }
    });
  });

  describe('backups', () => {
    it('takes, waits for, downloads and restores a backup, and sets a policy', async () => {
      await hangar.createInstance(mongoBody('bk', 'mongodb_replica_set'));
      const inst = await hangar.waitUntilReady('bk', { intervalMs: 20 });
      const engine = th.hangar.zones.targets()[0]!.engines.require('mongodb') as unknown as { write(id: string, k: string, v: string): void; dataOf(id: string): Record<string, string> };
      engine.write(inst.id, 'k', 'v1');
      const started = await hangar.createBackup('bk');
      expect(started.state).toBe('PENDING');
      const states: string[] = [];
      const done = await hangar.waitForBackup('bk', started.id, { intervalMs: 10, onPoll: (b) => states.push(b.state) });
      expect(done).toMatchObject({ id: started.id, state: 'COMPLETED', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect((await hangar.listBackups('bk')).map((b) => b.id)).toEqual([started.id]);
      const dl = await hangar.downloadBackup('bk', started.id);
      const bytes = Buffer.from(await new Response(dl.body).arrayBuffer());
      expect(bytes.length).toBe(dl.sizeBytes);
      expect(dl).toMatchObject({ sha256: done.sha256, fileName: `bk-${started.id}.emulated` });
      engine.write(inst.id, 'k', 'v2');
      const restore = await hangar.restoreInstance('bk', started.id);
      expect((await hangar.waitForRestore('bk', restore.id, { intervalMs: 10 })).state).toBe('COMPLETED');
      await hangar.waitUntilReady('bk', { intervalMs: 20 });
      expect(engine.dataOf(inst.id)).toEqual({ k: 'v1' });
      expect(await hangar.setBackupPolicy('bk', { schedule: 'every', every_hours: 12, keep_last: 3 })).toMatchObject({ schedule: 'every', every_hours: 12, keep_last: 3 });
      expect((await hangar.getBackupPolicy('bk')).keep_last).toBe(3);
      const missing = await failure(hangar.downloadBackup('bk', '6560a1f2c3d4e5f607182950'));
      expect(missing).toMatchObject({ status: 404, code: 'BACKUP_NOT_FOUND' });
      expect(await hangar.deleteBackup('bk', started.id)).toContain(started.id);
    });
  });
});
