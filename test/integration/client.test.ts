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

    it('ACLs, day two: expiry, replace with If-Match, check, effective rules, refused connections', async () => {
      await hangar.createInstance(redisBody('day2'));
      const inst = await hangar.waitUntilReady('day2');
      const expires_at = new Date(Date.now() + 3_600_000).toISOString();
      await hangar.createAcl('day2', { cidr_mask: '198.51.100.0/24', description: 'office', expires_at });
      const { acls, etag } = await hangar.listAclsWithEtag('day2');
      expect(acls[0]!.expires_at).toBe(expires_at);
      const replaced = await hangar.replaceAcls(
        'day2',
        [
          { cidr_mask: '198.51.100.0/24', description: 'office' },
          { cidr_mask: '203.0.113.7', description: 'laptop' },
        ],
        { ifMatch: etag },
      );
      expect(replaced.acls.map((a) => a.cidr_mask)).toEqual(['198.51.100.0/24', '203.0.113.7']);
      expect(replaced.etag).not.toBe(etag);
      expect(await failure(hangar.replaceAcls('day2', [], { ifMatch: etag }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
      expect(await hangar.checkAcl('day2', '198.51.100.9')).toMatchObject({ admitted: true, acl: { cidr_mask: '198.51.100.0/24' } });
      expect((await hangar.effectiveAcls('day2')).in_sync).toBe(true);
      th.runtime.connect(inst.id, '192.0.2.5');
      expect(await hangar.deniedConnections('day2', { limit: 5 })).toEqual([
        { source: '192.0.2.5', time: expect.any(String), listener: 'public' },
      ]);
    });

    it('redis, day two: users, password rotation, settings, slow log, stats', async () => {
      const { user, password } = await hangar.createRedisUser('kv', { username: 'app', keys: ['app:*'], commands: ['+@read'] });
      expect(user).toMatchObject({ name: 'app', keys: ['app:*'] });
      expect(password).toMatch(/^[0-9a-f]{32}$/);
      expect((await hangar.updateRedisUser('kv', 'app', { channels: ['news'] })).channels).toEqual(['news']);
      expect((await hangar.listRedisUsers('kv')).map((u) => u.name)).toEqual(['app']);
      const rotation = await hangar.rotateRedisUserPassword('kv', 'app');
      expect((await hangar.getRedisUser('kv', 'app')).previous_password_valid_until).toBe(rotation.previous_valid_until);
      expect(await hangar.finishRedisUserPasswordRotation('kv', 'app')).toBe(true);
      await hangar.deleteRedisUser('kv', 'app');
      expect(await failure(hangar.getRedisUser('kv', 'app'))).toMatchObject({ status: 404, code: 'USER_NOT_FOUND' });
      const { password: fresh } = await hangar.rotateInstancePassword('kv');
      expect((await hangar.getInstance('kv')).password).toBe(fresh);
      expect(await hangar.finishInstancePasswordRotation('kv')).toBe(true);
      expect(await hangar.finishInstancePasswordRotation('kv')).toBe(false);
      expect(await hangar.setRedisConfig('kv', { 'maxmemory-policy': 'allkeys-lfu' })).toEqual({ 'maxmemory-policy': 'allkeys-lfu' });
      expect((await hangar.redisConfig('kv'))['maxmemory-policy']).toBe('allkeys-lfu');
      expect(await failure(hangar.setRedisConfig('kv', { hz: 9999 }))).toMatchObject({ status: 400, field: 'hz', allowed: [1, 500] });
      expect(await hangar.redisSlowlog('kv', { limit: 5 })).toEqual([]);
      expect((await hangar.redisStats('kv')).role).toBe('master');
    });

    it('MongoDB users: create, list, update, delete', async () => {
      const m = await hangar.createInstance(mongoBody('docs'));
      await hangar.waitUntilReady('docs');
      expect(
        await hangar.createMongoUser(m.id, 'app', { username: 'u', password: 'password-1', roles: [{ role: 'readWrite', db: 'app' }] }),
      ).toContain('u');
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

    it("TLS: the CA without credentials, an instance's certificate, client certificates issued, listed and revoked", async () => {
      const ca = await new HangarClient({ url: th.url }).tlsCaCertificate();
      expect(ca).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
      await hangar.createInstance(redisBody('tls'));
      await hangar.waitUntilReady('tls');
      const t = await hangar.instanceTls('tls');
      expect(t).toMatchObject({ mode: 'preferred', serial: expect.stringMatching(/^[0-9A-F]{32}$/) });
      const made = await hangar.createClientCertificate('tls', { common_name: 'worker', valid_days: 10 });
      expect(made.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      expect((await hangar.listClientCertificates('tls')).map((c) => c.serial)).toEqual([made.serial]);
      expect((await hangar.revokeClientCertificate('tls', made.serial)).revoked_at).toEqual(expect.any(String));
      expect((await failure(hangar.revokeClientCertificate('tls', 'ABCD'))).code).toBe('CLIENT_CERTIFICATE_NOT_FOUND');
      expect((await failure(hangar.instanceTls('nope'))).status).toBe(404);
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

    it("warnings of an answer reach the client's onWarning and the call's", async () => {
      const seen: string[] = [];
      const client = new HangarClient({
        url: th.url,
        login,
        password: PASSWORD,
        onWarning: (w, r) => seen.push(`${r.method} ${r.path}: ${w}`),
      });
      const own: string[] = [];
      const id = await client.createAcl('kv', { cidr_mask: '10.1.2.3/8', description: 'w' }, { onWarning: (w) => own.push(w) });
      expect(own).toEqual(['10.1.2.3/8 was stored as 10.0.0.0/8']);
      expect(seen).toEqual(['POST /v2/instances/kv/acls/: 10.1.2.3/8 was stored as 10.0.0.0/8']);
      await client.deleteAcl('kv', id);
      expect(seen).toHaveLength(1);
    });

    it('a 400 lists every problem of the request in errors', async () => {
      const bad = await failure(hangar.createInstance(redisBody('a b', { plan: 750, zone: 'Mars' })));
      expect(bad).toMatchObject({ status: 400, code: 'INVALID_VALUE', field: 'name' });
      expect(bad.errors?.map((e) => e.field)).toEqual(['name', 'plan', 'zone']);
      expect(bad.errors?.[1]?.allowed).toContain(500);
    });

    it('no hangar at the address: status 0, NETWORK_ERROR', async () => {
      const err = await failure(
        new HangarClient({ url: `http://127.0.0.1:${await closedPort()}`, login, password: PASSWORD }).listInstances(),
      );
      expect(err).toMatchObject({ status: 0, code: 'NETWORK_ERROR', message: expect.stringContaining('cannot reach hangar') });
    });

    it('a kept-alive connection closed as it is reused: a read is sent once more, a change is not', async () => {
      // A stand-in server, since the race cannot be timed against a real one: it answers the first
      // request of each connection (keeping it alive) and closes the connection, unanswered, when a
      // second request arrives on it, as a server whose idle timeout ends just then does.
      const seen: string[] = [];
      let closedUnanswered = 0;
      const server = createServer((socket) => {
        let requests = 0;
        let buffered = '';
        socket.on('data', (chunk) => {
          buffered += chunk.toString();
          while (buffered.includes('\r\n\r\n')) {
            const head = buffered.slice(0, buffered.indexOf('\r\n\r\n'));
            const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
            if (buffered.length < head.length + 4 + length) return;
            buffered = buffered.slice(head.length + 4 + length);
            seen.push(head.split(' ').slice(0, 2).join(' '));
            if (++requests > 1) {
              closedUnanswered++;
              socket.destroy();
              return;
            }
            const answer = head.startsWith('GET') ? '{"data":[]}' : '{"data":{"id":"x"}}';
            socket.write(
              `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\nconnection: keep-alive\r\n\r\n${answer}`,
            );
          }
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      try {
        const client = new HangarClient({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, token: 'a-token' });
        // every read answered, though kept-alive connections were closed under some of them
        for (let i = 0; i < 6; i++) expect(await client.listInstances()).toEqual([]);
        expect(closedUnanswered, 'reads sent on a reused connection').toBeGreaterThan(0);
        expect(seen.length).toBe(6 + closedUnanswered);
        // a change on a connection closed under it fails, and is never sent twice
        seen.length = 0;
        closedUnanswered = 0;
        const outcomes: string[] = [];
        for (let i = 0; i < 6 && closedUnanswered === 0; i++) {
          outcomes.push(
            await client.createAcl('cache', { cidr_mask: '10.0.0.1', description: 'x' }).then(
              () => 'ok',
              (e: HangarApiError) => e.code,
            ),
          );
        }
        expect(outcomes.at(-1)).toBe('NETWORK_ERROR');
        expect(seen).toEqual(outcomes.map(() => 'POST /v2/instances/cache/acls/'));
      } finally {
        server.close();
      }
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
  describe('operations, events and webhooks', () => {
    it('names the operation a call started, waits for it on the stream, lists, reads and cancels operations', async () => {
      let started: string | undefined;
      const release = th.hold();
      const kinds: string[] = [];
      let waiting: Promise<unknown>;
      try {
        await hangar.createInstance(redisBody('client-op'), { onOperation: (id) => (started = id) });
        expect(started).toMatch(/^[0-9a-f]{24}$/);
        waiting = hangar.waitForOperation(started!, { onEvent: (e) => kinds.push(e.kind) });
        await expect.poll(async () => (await hangar.getOperation(started!)).state).toBe('RUNNING');
      } finally {
        release();
      }
      const done = await waiting;
      expect(done).toMatchObject({ id: started, kind: 'create', state: 'SUCCEEDED', instance_name: 'client-op' });
      expect(kinds).toContain('instance.state');
      expect((await hangar.getOperation(started!)).state).toBe('SUCCEEDED');
      let resized: string | undefined;
      await hangar.resizeRedis('client-op', 1000, { onOperation: (id) => (resized = id) });
      const page = await hangar.listOperations({ instance: 'client-op', limit: 1 });
      expect(page.operations.map((o) => o.id)).toEqual([resized]);
      expect(
        (await hangar.listOperations({ instance: 'client-op', limit: 1, cursor: page.nextCursor! })).operations.map((o) => o.id),
      ).toEqual([started]);
      expect((await hangar.waitForOperation(resized!)).state).toBe('SUCCEEDED');
      const refused = await failure(hangar.cancelOperation(resized!));
      expect(refused).toMatchObject({ status: 409, code: 'OPERATION_NOT_CANCELLABLE' });
      expect(await failure(hangar.getOperation('0123456789abcdef01234567'))).toMatchObject({ status: 404, code: 'OPERATION_NOT_FOUND' });
    });

    it('waitForOperation gives up with WAIT_TIMEOUT while hangar keeps working', async () => {
      const release = th.hold();
      try {
        let id: string | undefined;
        await hangar.createInstance(redisBody('client-slow'), { onOperation: (x) => (id = x) });
        const err = await failure(hangar.waitForOperation(id!, { timeoutMs: 300 }));
        expect(err).toMatchObject({ status: 0, code: 'WAIT_TIMEOUT' });
        expect(err.message).toMatch(/is still (PENDING|RUNNING) after 0 s/);
      } finally {
        release();
      }
    });

    it('registers, reads, rotates and deletes webhooks, and lists their deliveries', async () => {
      const w = await hangar.createWebhook({ url: 'https://93.184.215.14/hook', kinds: ['operation.cancelled'], description: 'client' });
      expect(w.secret).toMatch(/^whsec_/);
      expect(await hangar.listWebhooks()).toEqual([expect.objectContaining({ id: w.id, kinds: ['operation.cancelled'] })]);
      expect((await hangar.getWebhook(w.id)).url).toBe('https://93.184.215.14/hook');
      const rotated = await hangar.rotateWebhookSecret(w.id);
      expect(rotated.secret).not.toBe(w.secret);
      expect(await hangar.listWebhookDeliveries(w.id)).toEqual([]);
      await hangar.deleteWebhook(w.id);
      expect(await failure(hangar.getWebhook(w.id))).toMatchObject({ status: 404, code: 'WEBHOOK_NOT_FOUND' });
      expect(await failure(hangar.createWebhook({ url: 'https://10.0.0.7/' }))).toMatchObject({
        status: 400,
        code: 'TARGET_NOT_ALLOWED',
        field: 'url',
      });
    });
  });

  describe('backups', () => {
    it('takes, waits for, downloads and restores a backup, and sets a policy', async () => {
      await hangar.createInstance(mongoBody('bk', 'mongodb_replica_set'));
      const inst = await hangar.waitUntilReady('bk', { intervalMs: 20 });
      const engine = th.hangar.zones.targets()[0]!.engines.require('mongod') as unknown as {
        write(id: string, k: string, v: string): void;
        dataOf(id: string): Record<string, string>;
      };
      engine.write(inst.id, 'k', 'v1');
      let operation: string | undefined;
      const started = await hangar.createBackup('bk', { onOperation: (id) => (operation = id) });
      expect(started.state).toBe('PENDING');
      // the backup's operation has its id, and follows it to its end
      expect(operation).toBe(started.id);
      expect(await hangar.waitForOperation(operation!)).toMatchObject({
        kind: 'backup',
        state: 'SUCCEEDED',
        detail: { backup_id: started.id },
      });
      const states: string[] = [];
      const done = await hangar.waitForBackup('bk', started.id, { intervalMs: 10, onPoll: (b) => states.push(b.state) });
      expect(done).toMatchObject({ id: started.id, state: 'COMPLETED', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect((await hangar.listBackups('bk')).map((b) => b.id)).toEqual([started.id]);
      const dl = await hangar.downloadBackup('bk', started.id);
      const bytes = Buffer.from(await new Response(dl.body).arrayBuffer());
      expect(bytes.length).toBe(dl.sizeBytes);
      expect(dl).toMatchObject({ sha256: done.sha256, fileName: `bk-${started.id}.emulated` });
      engine.write(inst.id, 'k', 'v2');
      let restoring: string | undefined;
      const restore = await hangar.restoreInstance('bk', started.id, { onOperation: (id) => (restoring = id) });
      expect(restoring).toBe(restore.id);
      expect((await hangar.waitForRestore('bk', restore.id, { intervalMs: 10 })).state).toBe('COMPLETED');
      expect(await hangar.waitForOperation(restoring!)).toMatchObject({ kind: 'restore', state: 'SUCCEEDED' });
      await hangar.waitUntilReady('bk', { intervalMs: 20 });
      expect(engine.dataOf(inst.id)).toEqual({ k: 'v1' });
      expect(await hangar.setBackupPolicy('bk', { schedule: 'every', every_hours: 12, keep_last: 3 })).toMatchObject({
        schedule: 'every',
        every_hours: 12,
        keep_last: 3,
      });
      expect((await hangar.getBackupPolicy('bk')).keep_last).toBe(3);
      const missing = await failure(hangar.downloadBackup('bk', '6560a1f2c3d4e5f607182950'));
      expect(missing).toMatchObject({ status: 404, code: 'BACKUP_NOT_FOUND' });
      expect(await hangar.deleteBackup('bk', started.id)).toContain(started.id);
    });
  });
});
