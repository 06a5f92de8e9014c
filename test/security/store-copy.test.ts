import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { loadKeyring } from '../../src/lib/secrets.js';
import { startHangar } from '../../src/server.js';
import { findInstanceById } from '../../src/store/instance-repository.js';
import { accounts } from '../helpers/accounts.js';
import { esBody, mongoBody, redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, Client, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';

const USER_PASSWORD = 'mongo-user-password-kept-secret';
const NEW_USER_PASSWORD = 'mongo-user-password-changed-secret';

/**
 * Someone who gets a copy of the store (the SQLite files, or every row of the PostgreSQL
 * database) but not the secret key learns no credential: not an account password, a key pair
 * secret, a token, an engine password, the credentials hangar administers engines with, an
 * instance api key, or a MongoDB user password.
 */
describe.each(DIALECTS)('a copy of the store on %s', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  const secrets: Record<string, string> = {};
  /** What the copy must show, to be sure the scan reads the right bytes. */
  const visible: string[] = [];

  beforeAll(async () => {
    th = await startTestHangar({ listen: true, dialect });
    alice = await th.signup();
    secrets['account password'] = PASSWORD;
    const keys = await accounts(th.hangar).createApiKey(alice.login);
    secrets['key pair secret'] = keys.pass_key;
    secrets.token = (await new Client(th.target, { basic: [keys.user_key, keys.pass_key] }).get('/v2/tokens/')).body.data.token;
    secrets['token in use'] = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
    const r = await alice.ready(redisBody('copy-redis'));
    const m = await alice.ready(mongoBody('copy-mongo'));
    const e = await alice.ready(esBody('copy-es'));
    secrets['redis password'] = r.password;
    secrets['redis api key'] = r.api_key;
    secrets['mongodb api key'] = m.api_key;
    secrets['elasticsearch api key'] = e.api_key;
    const users = `/v2/mongodb/${m.id}/databases/app/users`;
    expect((await alice.post(users, { username: 'copy-user', password: USER_PASSWORD, roles: [] })).status).toBe(200);
    expect((await alice.post(users, { username: 'copy-user-2', password: USER_PASSWORD.replace('kept', 'also'), roles: [] })).status).toBe(
      200,
    );
    expect((await alice.patch(`${users}/copy-user-2`, { password: NEW_USER_PASSWORD })).status).toBe(200);
    secrets['mongodb user password'] = USER_PASSWORD;
    secrets['mongodb user password (before a change)'] = USER_PASSWORD.replace('kept', 'also');
    secrets['mongodb user password (changed)'] = NEW_USER_PASSWORD;
    // The credentials hangar keeps to administer each engine: read them as hangar does.
    const keyring = loadKeyring(th.config.secretKey, th.config.dataDir);
    const rows = await th.hangar.store.db.selectFrom('instances').select(['name', 'admin_secret_enc']).execute();
    for (const row of rows) secrets[`admin credential of ${row.name}`] = keyring.decrypt(row.admin_secret_enc);
    // The private keys of TLS: the deployment's CA, an instance's certificate (both sealed), and a
    // client certificate's (never kept). A PEM key's first line of base64 is in any copy of it.
    expect((await alice.get('/v2/instances/copy-redis/tls/')).status).toBe(200);
    const client = await alice.post('/v2/instances/copy-redis/tls/client-certs', { common_name: 'copy-client' });
    const firstLine = (pem: string) => pem.split('\n')[1]!;
    secrets['TLS CA private key'] = firstLine((await th.hangar.tls.authority.get()).keyPem);
    const redis = (await findInstanceById(th.hangar.store.db, keyring, r.id))!;
    secrets['instance certificate private key'] = firstLine((await th.hangar.tls.ensureServerCertificate(redis)).keyPem);
    secrets['client certificate private key'] = firstLine(client.body.data.private_key);
    visible.push(alice.login, 'copy-redis', 'copy-mongo', 'copy-es', 'copy-user', keys.user_key, client.body.data.serial);
    for (const [what, s] of Object.entries(secrets)) expect(s.length, what).toBeGreaterThanOrEqual(16);
  });
  afterAll(() => th.close());

  /** Every byte of the store as an attacker would copy it. */
  async function copyOfStore(): Promise<string> {
    if (dialect === 'sqlite') {
      // The database file and its write-ahead log, as they are on disk while hangar runs.
      const files = readdirSync(th.config.dataDir).filter((f) => f.startsWith('hangar.sqlite'));
      expect(files).toEqual(expect.arrayContaining(['hangar.sqlite', 'hangar.sqlite-wal']));
      return files.map((f) => readFileSync(join(th.config.dataDir, f)).toString('latin1')).join('\n');
    }
    // Every row of every table, every column as text (what pg_dump --data-only would hold).
    const db = th.hangar.store.db;
    const tables = await sql<{
      table_name: string;
    }>`select table_name from information_schema.tables where table_schema = 'public'`.execute(db);
    const out: string[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await sql<{ row: string }>`select t::text as row from ${sql.table(table_name)} t`.execute(db);
      out.push(...rows.rows.map((r) => r.row));
    }
    return out.join('\n');
  }

  it('holds no credential in clear, in any encoding a reader would try', async () => {
    const copy = await copyOfStore();
    for (const v of visible) expect(copy, `the copy shows ${v}: the scan reads the store`).toContain(v);
    for (const [what, s] of Object.entries(secrets)) {
      for (const form of [s, Buffer.from(s).toString('base64'), Buffer.from(s).toString('hex')]) {
        expect(copy.includes(form), `${what} is in the copy of the store`).toBe(false);
      }
    }
  });

  it('holds the encrypted values as AES-256-GCM ciphertexts and passwords as scrypt hashes', async () => {
    const db = th.hangar.store.db;
    for (const r of await db.selectFrom('instances').select(['api_key_enc', 'password_enc', 'admin_secret_enc']).execute()) {
      for (const v of [r.api_key_enc, r.admin_secret_enc, ...(r.password_enc === null ? [] : [r.password_enc])]) {
        expect(v).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
      }
    }
    for (const r of await db.selectFrom('mongodb_users').select('password_enc').execute()) expect(r.password_enc).toMatch(/^v1\./);
    for (const r of await db.selectFrom('accounts').select('password_hash').execute()) expect(r.password_hash).toMatch(/^scrypt\$/);
    for (const r of await db.selectFrom('api_keys').select('secret_hash').execute()) expect(r.secret_hash).toMatch(/^scrypt\$/);
  });

  it('keeps the key elsewhere: secret.key mode 0600 in a data dir of mode 0700', () => {
    expect(statSync(th.config.dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(th.config.dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
  });
});

describe('the data dir', () => {
  it('is narrowed to mode 0700 at start when it was made readable by others', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-open-dir-'));
    chmodSync(dir, 0o755);
    const config = loadConfig(
      {},
      {
        HANGAR_PORT: '0',
        HANGAR_DATA_DIR: dir,
        HANGAR_RUNTIME: 'emulated',
        HANGAR_LOG_LEVEL: 'silent',
        HANGAR_HOST_ID: `open-dir-${process.pid}`,
        HANGAR_DRAIN_PERIOD: '0',
      },
    );
    const hangar = await startHangar(config);
    try {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
    } finally {
      await hangar.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
