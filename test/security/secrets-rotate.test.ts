import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Keyring } from '../../src/lib/secrets.js';
import { setMeta } from '../../src/store/lease-repository.js';
import { mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { spawnServe } from '../helpers/process.js';
import { assertBuilt, runCli } from '../cli/run-cli.js';

const USER_PASSWORD = 'user-password-across-rotations';

/** The key ids (`v1.<id>.`) of every encrypted value in the store. */
async function sealingIds(th: TestHangar): Promise<Set<string>> {
  const db = th.hangar.store.db;
  const values: (string | null)[] = [];
  for (const r of await db
    .selectFrom('instances')
    .select(['api_key_enc', 'password_enc', 'admin_secret_enc', 'password_prior_enc'])
    .execute()) {
    values.push(r.api_key_enc, r.password_enc, r.admin_secret_enc, r.password_prior_enc);
  }
  for (const r of await db.selectFrom('mongodb_users').select('password_enc').execute()) values.push(r.password_enc);
  for (const r of await db.selectFrom('webhooks').select(['secret_enc', 'previous_secret_enc']).execute())
    values.push(r.secret_enc, r.previous_secret_enc);
  for (const r of await db.selectFrom('redis_users').select(['password_enc', 'password_prior_enc']).execute())
    values.push(r.password_enc, r.password_prior_enc);
  for (const r of await db.selectFrom('tls_authorities').select('key_enc').execute()) values.push(r.key_enc);
  for (const r of await db.selectFrom('tls_server_certificates').select('key_enc').execute()) values.push(r.key_enc);
  values.push((await db.selectFrom('meta').select('value').where('key', '=', 'secret_check').executeTakeFirstOrThrow()).value);
  return new Set(values.filter((v): v is string => v !== null).map((v) => v.split('.')[1]!));
}

const keyIdOf = (base64: string) => new Keyring([Buffer.from(base64, 'base64')]).currentId;
const newKeyText = () => randomBytes(32).toString('base64');

/** What a client sees of its instances' secrets, and whether the engine still takes the user's password. */
async function seen(th: TestHangar, who: Account) {
  const r = (await who.get('/v2/instances/r/')).body.data;
  const m = (await who.get('/v2/instances/m/')).body.data;
  return {
    redis: { password: r.password, api_key: r.api_key },
    mongo: m.api_key,
    user: th.mongodb.authenticate(m.id, 'app', 'u', USER_PASSWORD),
  };
}

/** Logs in again after a restart (tokens survive; the client object does not). */
const relogin = async (th: TestHangar, who: Account): Promise<Account> => {
  const token = (await new Client(th.target, { basic: [who.login, PASSWORD] }).get('/v2/tokens/')).body.data.token;
  return Object.assign(new Client(th.target, { token }), { login: who.login, password: PASSWORD });
};

/** The secret of the seeded webhook, as created. */
let webhookSecret = '';

async function seed(th: TestHangar): Promise<Account> {
  const alice = await th.signup();
  // a webhook's signing secret is sealed too (kinds that never happen here: nothing is sent)
  const hook = await alice.post('/v2/webhooks/', { url: 'https://93.184.215.14/hook', kinds: ['operation.cancelled'] });
  expect(hook.status).toBe(200);
  webhookSecret = hook.body.data.secret;
  await alice.ready(redisBody('r'));
  const m = await alice.ready(mongoBody('m'));
  expect((await alice.post(`/v2/mongodb/${m.id}/databases/app/users`, { username: 'u', password: USER_PASSWORD, roles: [] })).status).toBe(
    200,
  );
  await waitFor(() => th.mongodb.authenticate(m.id, 'app', 'u', USER_PASSWORD));
  // a Redis user and an instance password in rotation: each with a replaced password sealed too
  expect((await alice.post('/v2/redis/r/users/', { username: 'app', password: USER_PASSWORD })).status).toBe(200);
  expect((await alice.post('/v2/redis/r/users/app/rotate-password')).status).toBe(200);
  expect((await alice.post('/v2/instances/r/rotate-password')).status).toBe(200);
  // the instance's TLS certificate: its key is sealed too, and the CA's
  expect((await alice.get('/v2/instances/r/tls/')).status).toBe(200);
  return alice;
}

async function waitFor(condition: () => boolean, ms = 25_000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('hangar secrets rotate with the key file', () => {
  let th: TestHangar;
  let alice: Account;
  let home: string;
  let oldKey: string;
  const keyFile = () => join(th.config.dataDir, 'secret.key');
  const rotate = (env: Record<string, string> = {}) =>
    runCli(['secrets', 'rotate', '--data-dir', th.config.dataDir], { home, env: { HANGAR_LOG_LEVEL: 'silent', ...env } });

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-rotate-home-'));
    th = await startTestHangar({ listen: true });
    alice = await seed(th);
  });
  afterAll(async () => {
    await th.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('is refused while hangar serves on the data dir, and changes nothing', async () => {
    const before = readFileSync(keyFile(), 'utf8');
    const res = await rotate();
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/in use by another hangar \(pid \d+\)/);
    expect(readFileSync(keyFile(), 'utf8')).toBe(before);
  });

  it('re-encrypts everything with a new key; the key file keeps the new key alone, mode 0600; a restarted hangar reads every value', async () => {
    const before = await seen(th, alice);
    expect(before.user).toBe(true);
    oldKey = readFileSync(keyFile(), 'utf8').trim();
    expect(await sealingIds(th)).toEqual(new Set([keyIdOf(oldKey)]));
    await th.stop();

    const res = await rotate();
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout) as { key: string; reencrypted: number };
    // redis: api key, password, the password its rotation replaced, admin; mongodb: api key, admin; one MongoDB user;
    // one Redis user and its replaced password; one webhook secret; the TLS CA's key and the redis instance's certificate key
    expect(out.reencrypted).toBe(4 + 2 + 1 + 2 + 1 + 2);

    const file = readFileSync(keyFile(), 'utf8');
    expect(statSync(keyFile()).mode & 0o777).toBe(0o600);
    expect(file.trim().split(/\s+/)).toHaveLength(1);
    expect(file).not.toContain(oldKey);
    expect(keyIdOf(file.trim())).toBe(out.key);
    expect(out.key).not.toBe(keyIdOf(oldKey));

    await th.restart();
    alice = await relogin(th, alice);
    expect(await sealingIds(th)).toEqual(new Set([out.key]));
    const sealed = (await th.hangar.store.db.selectFrom('webhooks').select('secret_enc').executeTakeFirstOrThrow()).secret_enc;
    expect(new Keyring([Buffer.from(file.trim(), 'base64')]).decrypt(sealed)).toBe(webhookSecret);
    const after = await seen(th, alice);
    expect({ ...after, user: true }).toEqual({ ...before, user: true });
    const mongoId = (await alice.get('/v2/instances/m/')).body.data.id;
    await waitFor(() => th.mongodb.authenticate(mongoId, 'app', 'u', USER_PASSWORD));
  });

  it('the old key, or any wrong key, fails the start of hangar serve and says why', async () => {
    await th.stop();
    const dataDir = th.config.dataDir;
    await expect(spawnServe({ dataDir, env: { HANGAR_SECRET_KEY: oldKey } })).rejects.toThrow(
      /the secret key does not decrypt this store.*HANGAR_SECRET_KEY/s,
    );
    await expect(spawnServe({ dataDir, env: { HANGAR_SECRET_KEY: 'dG9vLXNob3J0' } })).rejects.toThrow(
      /HANGAR_SECRET_KEY must hold base64-encoded 32-byte keys/,
    );
    await th.restart();
  });
});

describe.each(DIALECTS)('hangar secrets rotate with HANGAR_SECRET_KEY on %s', (dialect) => {
  const K1 = newKeyText();
  const K2 = newKeyText();
  let th: TestHangar;
  let alice: Account;
  let home: string;
  let original: Awaited<ReturnType<typeof seen>>;

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-rotate-env-home-'));
    th = await startTestHangar({ listen: true, dialect, env: { HANGAR_SECRET_KEY: K1 } });
    alice = await seed(th);
    original = await seen(th, alice);
  });
  afterAll(async () => {
    await th?.close();
    rmSync(home, { recursive: true, force: true });
  });
  afterEach(() => {
    // no key file is made when the key comes from the environment
    expect(existsSync(join(th.config.dataDir, 'secret.key'))).toBe(false);
  });

  it('new key first: hangar serving with NEW,OLD writes with the new key; the rotation re-encrypts the rest while it serves; NEW alone then reads all', async () => {
    await th.restart({ HANGAR_SECRET_KEY: `${K2},${K1}` });
    alice = await relogin(th, alice);
    await alice.ready(redisBody('written-with-new-key'));
    expect(await sealingIds(th)).toEqual(new Set([keyIdOf(K1), keyIdOf(K2)]));

    const store = { HANGAR_DATA_DIR: th.config.dataDir, ...(th.config.databaseUrl ? { HANGAR_DATABASE_URL: th.config.databaseUrl } : {}) };
    const res = await runCli(['secrets', 'rotate'], {
      home,
      env: { HANGAR_LOG_LEVEL: 'silent', HANGAR_SECRET_KEY: `${K2},${K1}`, ...store },
    });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ key: keyIdOf(K2), next: expect.stringContaining('HANGAR_SECRET_KEY') });
    expect(await sealingIds(th)).toEqual(new Set([keyIdOf(K2)]));

    await th.restart({ HANGAR_SECRET_KEY: K2 });
    alice = await relogin(th, alice);
    const after = await seen(th, alice);
    expect({ ...after, user: true }).toEqual({ ...original, user: true });
    const mongoId = (await alice.get('/v2/instances/m/')).body.data.id;
    await waitFor(() => th.mongodb.authenticate(mongoId, 'app', 'u', USER_PASSWORD));
  });

  it('the old key alone fails the start with a clear message', async () => {
    await expect(th.restart({ HANGAR_SECRET_KEY: K1 })).rejects.toThrow(/the secret key does not decrypt this store/);
    await th.restart({ HANGAR_SECRET_KEY: K2 });
  });

  it('a key dropped before every value was re-encrypted fails the start, naming the missing key', async () => {
    const K3 = newKeyText();
    // As if the operator had moved to K3 and dropped K2 too early: only the check value is new.
    await setMeta(th.hangar.store.db, 'secret_check', new Keyring([Buffer.from(K3, 'base64')]).encrypt('hangar'));
    await expect(th.restart({ HANGAR_SECRET_KEY: K3 })).rejects.toThrow(
      new RegExp(`encrypted with key\\(s\\) ${keyIdOf(K2)}, which are not configured`),
    );
    await th.restart({ HANGAR_SECRET_KEY: `${K3},${K2}` });
    expect((await seen(th, await relogin(th, alice))).redis).toEqual(original.redis);
  });
});
