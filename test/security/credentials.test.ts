import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/database.js';
import { Client, PASSWORD, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { spawnServe } from '../helpers/process.js';
import { assertBuilt, runCli } from '../cli/run-cli.js';
import { httpRequest } from './helpers/http.js';

/** The documented minimum length of an account password (SECURITY.md, README). */
const MIN_PASSWORD = 12;

async function eventually(what: string, condition: () => Promise<boolean>, ms = 25_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('tokens', () => {
  let th: TestHangar;
  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
  });
  afterAll(() => th.close());

  it('carry at least 128 random bits: long enough, all different, no byte the same in all of them', async () => {
    const alice = await th.signup();
    const tokens: Buffer[] = [];
    for (let i = 0; i < 64; i++) {
      const res = await httpRequest(th.url, 'GET', '/v2/tokens/', { basic: [alice.login, PASSWORD] });
      tokens.push(Buffer.from(res.json.data.token as string, 'base64url'));
    }
    for (const t of tokens) expect(t.length).toBeGreaterThanOrEqual(16);
    expect(new Set(tokens.map((t) => t.toString('hex'))).size).toBe(tokens.length);
    // a counter, a timestamp or a fixed prefix would keep some byte the same across the sample
    const length = Math.min(...tokens.map((t) => t.length));
    for (let i = 0; i < length; i++) expect(new Set(tokens.map((t) => t[i])).size, `byte ${i} varies`).toBeGreaterThan(1);
  });
});

describe.each(DIALECTS)('credentials from the operator CLI (the built binary) on %s', (dialect) => {
  let th: TestHangar;
  let home: string;
  const store = () => ({
    HANGAR_DATA_DIR: th.config.dataDir,
    ...(th.config.databaseUrl ? { HANGAR_DATABASE_URL: th.config.databaseUrl } : {}),
  });
  const op = (args: string[]) => runCli(args, { home, env: { HANGAR_LOG_LEVEL: 'silent', ...store() } });

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-credentials-home-'));
    th = await startTestHangar({ listen: true, dialect });
  });
  afterAll(async () => {
    await th.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('`tokens revoke --login L` ends every token of that account in the running hangar, and only those; `keys ls` shows no secret; `keys rm` ends the key pair', async () => {
    const alice = await th.signup();
    const bob = await th.signup();
    const login = () => httpRequest(th.url, 'GET', '/v2/tokens/', { basic: [alice.login, PASSWORD] });
    const aliceTokens = [(alice.auth as { token: string }).token, (await login()).json.data.token, (await login()).json.data.token];
    const created = await op(['keys', 'create', '--login', alice.login]);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout) as { user_key: string; pass_key: string };
    const viaKey = () => httpRequest(th.url, 'GET', '/v2/instances/', { basic: [key.user_key, key.pass_key] });
    expect((await viaKey()).status).toBe(200);
    const works = async (token: string) => (await new Client(th.target, { token }).get('/v2/instances/')).status === 200;
    for (const t of aliceTokens) expect(await works(t)).toBe(true);

    const listed = await op(['keys', 'ls', '--login', alice.login]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([{ user_key: key.user_key, created: expect.any(String) }]);
    expect(listed.stdout).not.toContain(key.pass_key);
    expect(listed.stdout).not.toMatch(/scrypt|hash|secret/i);

    const revoked = await op(['tokens', 'revoke', '--login', alice.login]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ login: alice.login, revoked: 3 });
    const removed = await op(['keys', 'rm', '--login', alice.login, '--user-key', key.user_key]);
    expect(removed.code, removed.stderr).toBe(0);
    // hangar trusts a credential it checked for up to 5 s: the end comes within that
    await eventually('revoked tokens refused', async () => (await Promise.all(aliceTokens.map(works))).every((ok) => !ok));
    await eventually('deleted key pair refused', async () => (await viaKey()).status === 401);
    expect(await works((bob.auth as { token: string }).token)).toBe(true);
    expect(JSON.parse((await op(['keys', 'ls', '--login', alice.login])).stdout)).toEqual([]);
    // a new login works again
    expect(await works((await login()).json.data.token)).toBe(true);
  });
});

describe('operator CLI refusals', () => {
  let th: TestHangar;
  let home: string;
  const op = (args: string[]) => runCli(args, { home, env: { HANGAR_LOG_LEVEL: 'silent', HANGAR_DATA_DIR: th.config.dataDir } });

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-credentials-home-'));
    th = await startTestHangar({ listen: true });
  });
  afterAll(async () => {
    await th.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('`keys rm` of a key that is not there, or of another account, fails and says so', async () => {
    const carol = await th.signup();
    const dave = await th.signup();
    const key = JSON.parse((await op(['keys', 'create', '--login', carol.login])).stdout) as { user_key: string };
    const res = await op(['keys', 'rm', '--login', dave.login, '--user-key', key.user_key]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`account "${dave.login}" has no key ${key.user_key}`);
    expect(JSON.parse((await op(['keys', 'ls', '--login', carol.login])).stdout)).toHaveLength(1);
  });

  it(`account passwords have at least ${MIN_PASSWORD} characters`, async () => {
    const short = await op(['accounts', 'create', '--login', 'short@example.com', '--password', 'x'.repeat(MIN_PASSWORD - 1)]);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain(`the password must be ${MIN_PASSWORD} to 1024 characters`);
    const ok = await op(['accounts', 'create', '--login', 'long@example.com', '--password', 'x'.repeat(MIN_PASSWORD)]);
    expect(ok.code, ok.stderr).toBe(0);
    expect((await httpRequest(th.url, 'GET', '/v2/tokens/', { basic: ['short@example.com', 'x'.repeat(MIN_PASSWORD - 1)] })).status).toBe(
      401,
    );
  });
});

describe('the bootstrap account', () => {
  it('with a password under the minimum, hangar serve refuses to start and says why', async () => {
    assertBuilt();
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-bootstrap-'));
    try {
      await expect(
        spawnServe({ dataDir, env: { HANGAR_BOOTSTRAP_LOGIN: 'boot@example.com', HANGAR_BOOTSTRAP_PASSWORD: 'short' } }),
      ).rejects.toThrow(new RegExp(`the password must be ${MIN_PASSWORD} to 1024 characters`));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
