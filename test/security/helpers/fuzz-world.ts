import { Agent } from 'node:http';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { expect } from 'vitest';
import { accounts } from '../../helpers/accounts.js';
import { esBody, mongoBody, redisBody } from '../../helpers/bodies.js';
import { type Account, PASSWORD, type TestHangar, startTestHangar } from '../../helpers/hangar.js';
import { type HttpReply, httpRequest } from './http.js';

/** The fixed seed of the property tests; HANGAR_FUZZ_SEED replays another run. */
export const FUZZ_SEED = Number(process.env.HANGAR_FUZZ_SEED ?? 20261121);

/** Cases per property: HANGAR_FUZZ_RUNS scales every property (1 = as in CI). */
export const runs = (n: number): number => Math.max(1, Math.round(n * Number(process.env.HANGAR_FUZZ_RUNS ?? 1)));

/** Seeds `fast-check` runs with; a failure names the seed to replay it with. */
export function fuzzParameters(numRuns: number) {
  return { seed: FUZZ_SEED, numRuns: runs(numRuns), endOnFailure: true } as const;
}

/** The resources every case can aim at; ids are read when a case runs (a reset renews them). */
export interface Seeds {
  readonly redis: string;
  readonly mongo: string;
  readonly mongoId: string;
  readonly es: string;
  readonly aclId: string;
  readonly user: string;
}

const SEED_ACL = { cidr_mask: '192.0.2.10', description: 'seed' };
const SEED_USER = { username: 'seed-user', password: 'seed-user-password', roles: [{ role: 'read', db: 'app' }] };

/**
 * One hangar (emulated runtime, SQLite) with one account and a redis, a mongodb and an
 * elasticsearch instance, an ACL and a MongoDB user: the world the property tests attack.
 * `snapshot()` is everything of the account in the store that a request could change;
 * `reset()` brings the world back after a request that was (rightly) accepted.
 */
export class FuzzWorld {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private account!: Account;
  private accountId!: string;
  private tokenValue!: string;
  seeds!: Seeds;
  private constructor(readonly th: TestHangar) {}

  static async start(): Promise<FuzzWorld> {
    // Limits far away: the properties send thousands of requests, some with wrong passwords.
    const th = await startTestHangar({
      listen: true,
      env: { HANGAR_RATE_LIMIT: '100000000', HANGAR_LOGIN_FAILURE_LIMIT: '100000000', HANGAR_LOGIN_SOURCE_FAILURE_LIMIT: '100000000' },
    });
    const w = new FuzzWorld(th);
    w.account = await th.signup('fuzz@example.com');
    w.tokenValue = w.account.auth && 'token' in w.account.auth ? w.account.auth.token : '';
    w.accountId = (await accounts(th.hangar).accountByLogin('fuzz@example.com')).id;
    await w.reset();
    return w;
  }

  get url(): string {
    return this.th.url;
  }
  get login(): string {
    return this.account.login;
  }
  get password(): string {
    return PASSWORD;
  }
  get token(): string {
    return this.tokenValue;
  }

  /** A token of the account that no other case uses (for DELETE /v2/tokens/). */
  async spareToken(): Promise<string> {
    return (await accounts(this.th.hangar).issueToken({ accountId: this.accountId, login: this.login })).token;
  }

  send(method: string, path: string, opts: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<HttpReply> {
    return httpRequest(this.url, method, path, { ...opts, agent: this.agent });
  }

  /**
   * Everything of the account that a request could change (the audit log aside: it records
   * refusals too). Read through a read-only connection of its own to the SQLite file: committed
   * state, and fast enough to take after every case.
   */
  snapshot(): string {
    this.reader ??= this.openReader();
    const r = this.reader;
    const instances = r.instances.all(this.accountId) as { id: string }[];
    const ids = JSON.stringify(instances.map((i) => i.id));
    return JSON.stringify({
      instances,
      acls: r.acls.all(ids),
      users: r.users.all(ids),
      redisUsers: r.redisUsers.all(ids),
      redisSettings: r.redisSettings.all(ids),
      ports: r.ports.all(ids),
      tokens: r.tokens.all(this.accountId),
      accounts: r.accounts.all(),
      keys: r.keys.all(),
    });
  }

  private reader: ReturnType<FuzzWorld['openReader']> | undefined;

  private openReader() {
    const db = new SQLite(join(this.th.config.dataDir, 'hangar.sqlite'), { readonly: true, fileMustExist: true });
    const inIds = 'in (select value from json_each(?))';
    return {
      db,
      instances: db.prepare(
        'select id, name, plan, desired_plan, deleting, spec_version, encrypted, api_key_enc, password_enc, admin_secret_enc from instances where account_id = ? order by id',
      ),
      acls: db.prepare(
        `select id, instance_id, cidr_mask, description, transport, kibana, deleting, expires_at from acls where instance_id ${inIds} order by id`,
      ),
      redisUsers: db.prepare(
        `select id, instance_id, username, password_enc, password_prior_enc, keys, channels, commands, deleting from redis_users where instance_id ${inIds} order by id`,
      ),
      redisSettings: db.prepare(
        `select instance_id, name, value from redis_settings where instance_id ${inIds} order by instance_id, name`,
      ),
      users: db.prepare(
        `select id, instance_id, database_name, username, password_enc, roles, spec_version, deleting from mongodb_users where instance_id ${inIds} order by id`,
      ),
      ports: db.prepare(`select port, instance_id, role from ports where instance_id ${inIds} order by port`),
      tokens: db.prepare('select id, revoked_at, expires_at from tokens where account_id = ? order by id'),
      accounts: db.prepare('select id, login, password_hash from accounts order by id'),
      keys: db.prepare('select id, account_id, user_key, secret_hash from api_keys order by id'),
    };
  }

  /**
   * Brings the world back to its seeds: instances that are not seeds go, renamed seeds get their
   * name back, missing seeds, ACL and user are made again, and the token works; then waits
   * until the worker has nothing left to do.
   */
  async reset(): Promise<void> {
    const me = this.account;
    const db = this.th.hangar.store.db;
    if (!(await this.tokenWorks())) {
      this.tokenValue = await this.spareToken();
      (me as { auth: unknown }).auth = { token: this.tokenValue };
    }
    const known: Record<string, string> = this.seeds
      ? { 'fz-redis': this.seeds.redis, 'fz-mongo': this.seeds.mongo, 'fz-es': this.seeds.es }
      : {};
    const rows = await db.selectFrom('instances').select(['id', 'name', 'deleting']).where('account_id', '=', this.accountId).execute();
    for (const r of rows) {
      // a seed under another name is simply replaced: cheaper than untangling names
      if (!r.deleting && known[r.name] !== r.id) await me.delete(`/v2/instances/${encodeURIComponent(r.name)}/`);
    }
    await this.settle(() =>
      db.selectFrom('instances').select('id').where('account_id', '=', this.accountId).where('deleting', '=', 1).execute(),
    );
    const current = await db.selectFrom('instances').select(['id', 'name']).where('account_id', '=', this.accountId).execute();
    const idOf = async (name: string, body: { name: string; service: string }) =>
      current.find((c) => c.name === name)?.id ?? (await me.ready(body)).id;
    const redis = await idOf('fz-redis', redisBody('fz-redis'));
    const mongo = await idOf('fz-mongo', mongoBody('fz-mongo', 'mongodb_replica_set'));
    const es = await idOf('fz-es', esBody('fz-es'));
    await me.waitFor('fz-redis', (r) => r?.state === 'ACTIVE');
    await me.waitFor('fz-mongo', (r) => r?.state === 'ACTIVE');
    await me.waitFor('fz-es', (r) => r?.state === 'COMPLETED');
    for (const [name] of [['fz-redis'], ['fz-mongo'], ['fz-es']] as const) {
      for (const acl of (await me.get(`/v2/instances/${name}/acls/`)).body.data as any[]) {
        if (!(name === 'fz-redis' && acl.cidr_mask === SEED_ACL.cidr_mask && acl.description === SEED_ACL.description)) {
          await me.delete(`/v2/instances/${name}/acls/${acl._id.$oid}/`);
        }
      }
    }
    let aclId = ((await me.get('/v2/instances/fz-redis/acls/')).body.data as any[]).find((a) => a.cidr_mask === SEED_ACL.cidr_mask)?._id
      .$oid;
    aclId ??= (await me.post('/v2/instances/fz-redis/acls/', SEED_ACL)).body.data;
    for (const database of await this.databasesOf(mongo)) {
      for (const u of (await me.get(`/v2/mongodb/${mongo}/databases/${encodeURIComponent(database)}/users`)).body.data as any[]) {
        if (database !== 'app' || u.name !== SEED_USER.username)
          await me.delete(`/v2/mongodb/${mongo}/databases/${encodeURIComponent(database)}/users/${encodeURIComponent(u.name)}`);
      }
    }
    const users = (await me.get(`/v2/mongodb/${mongo}/databases/app/users`)).body.data as any[];
    if (!users.some((u) => u.name === SEED_USER.username))
      expect((await me.post(`/v2/mongodb/${mongo}/databases/app/users`, SEED_USER)).status).toBe(200);
    this.seeds = { redis, mongo, es, mongoId: mongo, aclId, user: SEED_USER.username };
    await this.settle(async () => [
      ...(await db.selectFrom('acls').select('id').where('deleting', '=', 1).execute()),
      ...(await db.selectFrom('mongodb_users').select('id').where('deleting', '=', 1).execute()),
    ]);
  }

  private async databasesOf(instanceId: string): Promise<string[]> {
    const rows = await this.th.hangar.store.db
      .selectFrom('mongodb_users')
      .select('database_name')
      .distinct()
      .where('instance_id', '=', instanceId)
      .execute();
    return [...new Set(['app', ...rows.map((r) => r.database_name)])];
  }

  private async tokenWorks(): Promise<boolean> {
    return (await this.send('GET', '/v2/events/?limit=1', { headers: { 'x-auth-token': this.tokenValue } })).status === 200;
  }

  /** Waits until `pending` finds nothing (the worker finished what accepted requests asked). */
  private async settle(pending: () => Promise<unknown[]>): Promise<void> {
    const until = Date.now() + 20_000;
    while ((await pending()).length > 0) {
      if (Date.now() > until) throw new Error('the world did not settle within 20 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close(): Promise<void> {
    this.reader?.db.close();
    this.agent.destroy();
    await this.th.close();
  }
}

/** What differs between two snapshots: the rows only one of them has, by table. */
export function changes(before: string, after: string): string[] {
  if (before === after) return [];
  const a = JSON.parse(before) as Record<string, unknown[]>;
  const b = JSON.parse(after) as Record<string, unknown[]>;
  const out: string[] = [];
  for (const table of Object.keys(a)) {
    const was = new Set(a[table]!.map((r) => JSON.stringify(r)));
    const now = new Set(b[table]!.map((r) => JSON.stringify(r)));
    for (const r of was) if (!now.has(r)) out.push(`${table}: gone or changed ${r.slice(0, 300)}`);
    for (const r of now) if (!was.has(r)) out.push(`${table}: new or changed ${r.slice(0, 300)}`);
  }
  return out;
}

/** Strings a stack trace or a file path would show. */
const LEAKS = /\n\s+at |node_modules|\/src\/|\/work\/|\.ts:\d+|\.js:\d+|<html|<!doctype/i;

/**
 * What every answer must be, whatever was sent: no 5xx; JSON; an error is `{message, code}`
 * (plus `field`, `allowed`) with a message; nosniff; no X-Powered-By; no stack trace or path.
 */
export function expectSaneAnswer(
  res: { status: number; headers: Record<string, unknown>; text: string; json: any },
  opts: { head?: boolean } = {},
): void {
  expect(res.status, `status of ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
  expect(res.status, `a 5xx: ${res.text.slice(0, 300)}`).toBeLessThan(500);
  expect(res.headers['x-powered-by']).toBeUndefined();
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['x-request-id']).toEqual(expect.any(String));
  if (opts.head) return;
  // (the docs page and its assets are the only answers that are not JSON)
  const json = String(res.headers['content-type'] ?? '').startsWith('application/json');
  if (res.status >= 400 || json) expect(res.text).not.toMatch(LEAKS);
  if (res.status >= 400) {
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json, res.text.slice(0, 300)).toEqual(
      expect.objectContaining({ message: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) }),
    );
    expect(res.json.message.length).toBeGreaterThan(0);
    for (const k of Object.keys(res.json)) expect(['message', 'code', 'field', 'allowed', 'errors']).toContain(k);
  }
}
