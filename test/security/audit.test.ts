import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendAuditEvent } from '../../src/store/audit-repository.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { assertBuilt, runCli } from '../cli/run-cli.js';
import { httpRequest } from './helpers/http.js';

/**
 * The audit log: every change and every login, with account, action, target, source address,
 * outcome, status, time and request id; an account reads its own at GET /v2/events/, the
 * operator reads all with `hangar audit`; the store refuses to change or delete an event.
 */
describe.each(DIALECTS)('the audit log on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  let home: string;
  let mongoId: string;

  const events = async (who: Client, query = '') => (await who.get(`/v2/events/${query}`)).body.data as any[];
  const byRequest = (list: any[], id: string) => list.filter((e) => e.request_id === id);
  // The data dir holds the secret key the store was encrypted with, PostgreSQL or not.
  const store = () => ({
    HANGAR_DATA_DIR: th.config.dataDir,
    ...(th.config.databaseUrl ? { HANGAR_DATABASE_URL: th.config.databaseUrl } : {}),
  });
  const op = (args: string[]) => runCli(args, { home, env: { HANGAR_LOG_LEVEL: 'silent', ...store() } });

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-audit-home-'));
    th = await startTestHangar({ listen: true, dialect });
    alice = await th.signup();
    bob = await th.signup();
    await alice.ready(redisBody('r'));
    mongoId = (await alice.ready(mongoBody('m'))).id;
  });
  afterAll(async () => {
    await th?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('records every change of the API: account, action, target, source address, outcome, status, time, request id', async () => {
    const users = `/v2/mongodb/${mongoId}/databases/app/users`;
    const acl = await alice.request('POST', '/v2/instances/r/acls/', {
      body: { cidr_mask: '192.0.2.1', description: 'x' },
      headers: { 'x-request-id': 'a-acl-create' },
    });
    const changes: [string, string, string, unknown, string, string][] = [
      ['instance.create', 'POST', '/v2/instances/', redisBody('made'), 'instance:made', 'a-instance-create'],
      ['instance.rename', 'POST', '/v2/instances/made/rename/', { name: 'renamed' }, 'instance:made', 'a-instance-rename'],
      ['acl.delete', 'DELETE', `/v2/instances/r/acls/${acl.body.data}/`, undefined, `instance:r/acl:${acl.body.data}`, 'a-acl-delete'],
      ['redis.resize', 'POST', '/v2/redis/r/resize/', { new_plan: 1000 }, 'instance:r', 'a-redis-resize'],
      [
        'mongodb_user.create',
        'POST',
        users,
        { username: 'u', password: 'password-1', roles: [] },
        `instance:${mongoId}/database:app`,
        'a-user-create',
      ],
      [
        'mongodb_user.update',
        'PATCH',
        `${users}/u`,
        { roles: [{ role: 'read', db: 'app' }] },
        `instance:${mongoId}/database:app/user:u`,
        'a-user-update',
      ],
      ['mongodb_user.delete', 'DELETE', `${users}/u`, undefined, `instance:${mongoId}/database:app/user:u`, 'a-user-delete'],
      ['instance.delete', 'DELETE', '/v2/instances/renamed/', undefined, 'instance:renamed', 'a-instance-delete'],
    ];
    for (const [, method, path, body, , id] of changes) {
      const res = await alice.request(method, path, { ...(body === undefined ? {} : { body }), headers: { 'x-request-id': id } });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const log = await events(alice);
    expect(byRequest(log, 'a-acl-create')).toEqual([
      expect.objectContaining({ action: 'acl.create', target: 'instance:r', outcome: 'success' }),
    ]);
    for (const [action, , , , target, id] of changes) {
      expect(byRequest(log, id)).toEqual([
        {
          id: expect.any(Number),
          action,
          target,
          source_ip: '127.0.0.1',
          outcome: 'success',
          status: 200,
          request_id: id,
          created: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
          date_created: { $date: expect.any(Number) },
        },
      ]);
      expect(Math.abs(byRequest(log, id)[0].date_created.$date - Date.now())).toBeLessThan(60_000);
    }
  });

  it('records refused changes as failures, with their status', async () => {
    await alice.request('POST', '/v2/instances/', { body: redisBody('bad', { plan: 7 }), headers: { 'x-request-id': 'a-refused-400' } });
    await alice.request('POST', '/v2/instances/ghost/rename/', { body: { name: 'x' }, headers: { 'x-request-id': 'a-refused-404' } });
    const log = await events(alice);
    expect(byRequest(log, 'a-refused-400')).toEqual([
      expect.objectContaining({ action: 'instance.create', outcome: 'failure', status: 400 }),
    ]);
    expect(byRequest(log, 'a-refused-404')).toEqual([
      expect.objectContaining({ action: 'instance.rename', target: 'instance:ghost', outcome: 'failure', status: 404 }),
    ]);
  });

  it('records every login, successful or not: a failure on an existing login goes to its account', async () => {
    // From an address of its own: failed logins are limited per source address.
    const login = (secret: string, id: string, path = '/v2/tokens/') =>
      httpRequest(th.url, 'GET', path, { basic: [alice.login, secret], headers: { 'x-request-id': id }, localAddress: '127.0.0.9' });
    expect((await login(PASSWORD, 'a-login-ok')).status).toBe(200);
    expect((await login('wrong-password-1', 'a-login-bad')).status).toBe(401);
    expect((await login('wrong-password-2', 'a-login-bad-elsewhere', '/v2/instances/')).status).toBe(401);
    const log = await events(alice);
    expect(byRequest(log, 'a-login-ok')).toEqual([
      expect.objectContaining({ action: 'token.create', outcome: 'success', status: 200, source_ip: '127.0.0.9' }),
    ]);
    expect(byRequest(log, 'a-login-bad')).toEqual([
      expect.objectContaining({ action: 'token.create', outcome: 'failure', status: 401, source_ip: '127.0.0.9' }),
    ]);
    expect(byRequest(log, 'a-login-bad-elsewhere')).toEqual([
      expect.objectContaining({ action: 'login', outcome: 'failure', status: 401 }),
    ]);
    // past the limit, the refusal is recorded too
    for (let i = 0; i < 5; i++) await login(`wrong-password-${i + 3}`, `a-login-bad-${i + 3}`);
    expect((await login(PASSWORD, 'a-login-refused')).status).toBe(429);
    expect(byRequest(await events(alice), 'a-login-refused')).toEqual([
      expect.objectContaining({ action: 'token.create', outcome: 'failure', status: 429 }),
    ]);
  });

  it('an account reads only its own events, newest first, as many as it asks for', async () => {
    await bob.request('POST', '/v2/instances/', { body: redisBody('bobs'), headers: { 'x-request-id': 'b-instance-create' } });
    const mine = await events(bob);
    expect(byRequest(mine, 'b-instance-create')).toHaveLength(1);
    expect(mine.filter((e) => String(e.request_id).startsWith('a-'))).toEqual([]);
    expect(JSON.stringify(mine)).not.toContain(alice.login);
    const all = await events(alice);
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((x, y) => y - x));
    expect(all.filter((e) => String(e.request_id).startsWith('b-'))).toEqual([]);
    const two = await events(alice, '?limit=2');
    expect(two).toEqual(all.slice(0, 2));
    expect(await events(alice, `?limit=2&before=${two[1].id}`)).toEqual(all.slice(2, 4));
  });

  it('`hangar audit` (the operator) reads every account, failed logins of unknown logins included', async () => {
    await httpRequest(th.url, 'GET', '/v2/tokens/', {
      basic: ['nobody@example.com', 'whatever-password'],
      headers: { 'x-request-id': 'x-unknown-login' },
      localAddress: '127.0.0.10',
    });
    const res = await op(['audit', '--limit', '1000']);
    expect(res.code, res.stderr).toBe(0);
    const all = JSON.parse(res.stdout) as any[];
    const ids = all.map((e) => e.request_id);
    expect(ids).toEqual(expect.arrayContaining(['a-instance-create', 'a-login-bad', 'b-instance-create', 'x-unknown-login']));
    expect(all.find((e) => e.request_id === 'x-unknown-login')).toMatchObject({
      account_id: null,
      login: 'nobody@example.com',
      action: 'token.create',
      outcome: 'failure',
    });
    const bobs = JSON.parse((await op(['audit', '--login', bob.login])).stdout) as any[];
    expect(new Set(bobs.map((e) => e.login))).toEqual(new Set([bob.login]));
    // the same fields as GET /v2/events/, with the account beside
    const api = byRequest(await events(alice, '?limit=1000'), 'a-instance-create')[0];
    expect(all.find((e) => e.request_id === 'a-instance-create')).toEqual({ account_id: expect.any(String), login: alice.login, ...api });
  });

  it('records what the operator changes from the CLI, without a source address', async () => {
    const login = `cli-${dialect}@example.com`;
    expect((await op(['accounts', 'create', '--login', login, '--password', PASSWORD])).code).toBe(0);
    const key = JSON.parse((await op(['keys', 'create', '--login', login])).stdout) as { user_key: string };
    expect((await op(['keys', 'rm', '--login', login, '--user-key', key.user_key])).code).toBe(0);
    expect((await op(['tokens', 'revoke', '--login', login])).code).toBe(0);
    const token = (await new Client(th.target, { basic: [login, PASSWORD] }).get('/v2/tokens/')).body.data.token;
    const log = await events(new Client(th.target, { token }));
    const operator = log.filter((e) => e.source_ip === null).map((e) => [e.action, e.target, e.outcome]);
    expect(operator).toEqual([
      ['token.revoke_all', `account:${login}`, 'success'],
      ['api_key.delete', `api_key:${key.user_key}`, 'success'],
      ['api_key.create', `api_key:${key.user_key}`, 'success'],
      ['account.create', `account:${login}`, 'success'],
    ]);
  });

  it('is append-only in the store: UPDATE and DELETE are refused, adding still works', async () => {
    const db = th.hangar.store.db;
    const before = await db.selectFrom('audit_events').selectAll().orderBy('id').execute();
    expect(before.length).toBeGreaterThan(10);
    await expect(db.updateTable('audit_events').set({ outcome: 'success', login: 'someone-else' }).execute()).rejects.toThrow(
      /append-only/,
    );
    await expect(db.deleteFrom('audit_events').where('id', '=', before[0]!.id).execute()).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('audit_events').execute()).rejects.toThrow(/append-only/);
    if (dialect === 'postgres') await expect(sql`TRUNCATE audit_events`.execute(db)).rejects.toThrow(/append-only/);
    expect(await db.selectFrom('audit_events').selectAll().orderBy('id').execute()).toEqual(before);
    await appendAuditEvent(db, {
      accountId: null,
      login: null,
      action: 'test.append',
      target: null,
      sourceIp: null,
      outcome: 'success',
      statusCode: null,
      requestId: null,
      createdAt: Date.now(),
    });
    expect(await db.selectFrom('audit_events').select('id').execute()).toHaveLength(before.length + 1);
  });
});
