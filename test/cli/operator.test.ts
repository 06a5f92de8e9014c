import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, freshPostgres } from '../helpers/database.js';
import { PASSWORD } from '../helpers/hangar.js';
import { spawnServe } from '../helpers/process.js';
import { BIN, assertBuilt, runCli } from './run-cli.js';

describe('the operator commands keep their flags and environment', () => {
  let home: string;
  let dataDir: string;
  const op = (args: string[], env: Record<string, string> = {}) => runCli(args, { home, env: { HANGAR_LOG_LEVEL: 'silent', ...env } });

  beforeAll(() => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-op-home-'));
    dataDir = mkdtempSync(join(tmpdir(), 'hangar-op-data-'));
  });
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('accounts create, keys create | ls | rm, tokens revoke, audit: by flag and by environment', async () => {
    const created = await op(['accounts', 'create', '--init', '--login', 'ops@example.com', '--password', PASSWORD, '--data-dir', dataDir]);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ login: 'ops@example.com' });
    const env = { HANGAR_DATA_DIR: dataDir };
    const key = await op(['keys', 'create', '--login', 'ops@example.com'], env);
    expect(key.code, key.stderr).toBe(0);
    const { user_key } = JSON.parse(key.stdout);
    expect(JSON.parse((await op(['keys', 'ls', '--login', 'ops@example.com'], env)).stdout)).toEqual([
      { user_key, created: expect.any(String) },
    ]);
    expect((await op(['keys', 'rm', '--login', 'ops@example.com', '--user-key', user_key], env)).code).toBe(0);
    expect(JSON.parse((await op(['tokens', 'revoke', '--login', 'ops@example.com'], env)).stdout)).toEqual({
      login: 'ops@example.com',
      revoked: 0,
    });
    expect((await op(['audit', '--limit', '5'], env)).code).toBe(0);
    expect((await op(['--data-dir', dataDir, 'keys', 'ls', '--login', 'ops@example.com'])).code).toBe(0);
    const usage = await op(['accounts', 'create', '--login', 'x@example.com'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--password is required');
    expect((await op(['audit', '--port', 'nope'], env)).code).toBe(2);
  });
});

const CREATED = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

describe('operator JSON', () => {
  let home: string;
  let dataDir: string;
  const op = (args: string[]) => runCli(args, { home, env: { HANGAR_LOG_LEVEL: 'silent', HANGAR_DATA_DIR: dataDir } });

  beforeAll(() => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-op-home-'));
    dataDir = join(mkdtempSync(join(tmpdir(), 'hangar-op-data-')), 'store');
  });
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(dirname(dataDir), { recursive: true, force: true });
  });

  it('shows "created" as the API does: YYYY-MM-DD HH:MM:SS, UTC', async () => {
    const created = JSON.parse((await op(['accounts', 'create', '--init', '--login', 'fmt@example.com', '--password', PASSWORD])).stdout);
    expect(created.created).toMatch(CREATED);
    const key = JSON.parse((await op(['keys', 'create', '--login', 'fmt@example.com'])).stdout);
    expect(key).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      user_key: expect.any(String),
      pass_key: expect.any(String),
      created: expect.stringMatching(CREATED),
    });
    expect(JSON.parse((await op(['keys', 'ls', '--login', 'fmt@example.com'])).stdout)[0].created).toMatch(CREATED);
    const events = JSON.parse((await op(['audit', '--limit', '2'])).stdout);
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect(e.created).toMatch(CREATED);
  });
});

describe.each(DIALECTS)('operator commands on a data dir or database without a store (%s)', (dialect) => {
  let home: string;
  let parent: string;
  let pgdb: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-op-home-'));
    parent = mkdtempSync(join(tmpdir(), 'hangar-op-none-'));
    if (dialect === 'postgres') pgdb = await freshPostgres();
  });
  afterAll(async () => {
    rmSync(home, { recursive: true, force: true });
    rmSync(parent, { recursive: true, force: true });
    await pgdb?.drop();
  });

  const STORE_COMMANDS = [
    ['accounts', 'create', '--login', 'new@example.com', '--password', PASSWORD],
    ['keys', 'create', '--login', 'new@example.com'],
    ['keys', 'ls', '--login', 'new@example.com'],
    ['keys', 'rm', '--login', 'new@example.com', '--user-key', 'abc'],
    ['tokens', 'revoke', '--login', 'new@example.com'],
    ['secrets', 'rotate'],
    ['audit'],
    ['down'],
  ];

  it('refuse, naming the data dir (or database) they looked at, with exit code 2, and create nothing', async () => {
    const dataDir = join(parent, 'typo');
    const where: Record<string, string> = dialect === 'postgres' ? { HANGAR_DATABASE_URL: pgdb!.url } : {};
    for (const args of STORE_COMMANDS) {
      const res = await runCli([...args, '--data-dir', dataDir], { home, env: { HANGAR_LOG_LEVEL: 'silent', ...where } });
      const what = args.join(' ');
      expect(res.code, `${what}: ${res.stderr}`).toBe(2);
      expect(res.stderr, what).toContain(
        dialect === 'postgres'
          ? `no hangar store in the database postgres://${new URL(pgdb!.url).host}${new URL(pgdb!.url).pathname}`
          : `no hangar store in the data dir ${dataDir}`,
      );
      expect(res.stderr, what).toContain('--init');
      expect(existsSync(dataDir), `${what} made the data dir`).toBe(false);
    }
    if (dialect === 'postgres') {
      const c = new pg.Client({ connectionString: pgdb!.url });
      await c.connect();
      try {
        expect((await c.query("select count(*)::int as n from information_schema.tables where table_schema = 'public'")).rows[0].n).toBe(0);
      } finally {
        await c.end();
      }
    }
  });

  it('--init creates the store; then the others work on it', async () => {
    const dataDir = join(parent, 'fresh');
    const where: Record<string, string> = dialect === 'postgres' ? { HANGAR_DATABASE_URL: pgdb!.url } : {};
    const env: Record<string, string> = { HANGAR_LOG_LEVEL: 'silent', HANGAR_DATA_DIR: dataDir, ...where };
    const made = await runCli(['accounts', 'create', '--init', '--login', 'new@example.com', '--password', PASSWORD], { home, env });
    expect(made.code, made.stderr).toBe(0);
    if (dialect === 'sqlite') expect(existsSync(join(dataDir, 'hangar.sqlite'))).toBe(true);
    const listed = await runCli(['keys', 'ls', '--login', 'new@example.com'], { home, env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([]);
  });
});

describe('an operator command run from a directory without a store, with the default data dir', () => {
  let home: string;
  let parent: string;
  beforeAll(() => {
    assertBuilt();
    home = mkdtempSync(join(tmpdir(), 'hangar-op-home-'));
    parent = mkdtempSync(join(tmpdir(), 'hangar-op-cwd-'));
  });
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(parent, { recursive: true, force: true });
  });

  it('says where it looked (./.hangar there), exit code 2, and leaves nothing', async () => {
    const cwd = mkdtempSync(join(parent, 'cwd-'));
    const res = await new Promise<{ code: number; stderr: string }>((resolveRun) => {
      const child = spawn(process.execPath, [BIN, 'audit'], {
        cwd,
        env: { PATH: process.env.PATH ?? '', HOME: home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('close', (code) => resolveRun({ code: code ?? -1, stderr }));
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`no hangar store in the data dir ${join(cwd, '.hangar')}`);
    expect(existsSync(join(cwd, '.hangar'))).toBe(false);
  });
});

describe('the package', () => {
  it('exports the client as hangar/client from the build', () => {
    assertBuilt();
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const c = await import('hangar/client'); console.log(typeof c.HangarClient, typeof c.HangarApiError)"],
      {
        encoding: 'utf8',
      },
    );
    expect(out.trim()).toBe('function function');
  });
});

describe('hangar serve', () => {
  it('its start line names where the API, the docs page and the console are, each of which answers', async () => {
    assertBuilt();
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-serve-'));
    const served = await spawnServe({ dataDir });
    try {
      const line = served
        .output()
        .split('\n')
        .find((l) => l.startsWith('hangar serving on '));
      const url = served.url;
      expect(line).toContain(`hangar serving on ${url}/v2/ (`);
      expect(line).toContain(`; docs ${url}/docs, console ${url}/`);
      const root = await fetch(`${url}/v2/`);
      expect(root.status).toBe(200);
      expect((await root.json()).data.links).toEqual({ docs: '/docs', openapi: '/v2/openapi.json', console: '/' });
      for (const path of ['/docs', '/']) expect((await fetch(`${url}${path}`)).status, path).toBe(200);
    } finally {
      await served.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
