import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD } from '../helpers/hangar.js';
import { assertBuilt, runCli } from './run-cli.js';

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
    const created = await op(['accounts', 'create', '--login', 'ops@example.com', '--password', PASSWORD, '--data-dir', dataDir]);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ login: 'ops@example.com' });
    const env = { HANGAR_DATA_DIR: dataDir };
    const key = await op(['keys', 'create', '--login', 'ops@example.com'], env);
    expect(key.code, key.stderr).toBe(0);
    const { user_key } = JSON.parse(key.stdout);
    expect(JSON.parse((await op(['keys', 'ls', '--login', 'ops@example.com'], env)).stdout)).toEqual([{ user_key, created: expect.any(String) }]);
    expect((await op(['keys', 'rm', '--login', 'ops@example.com', '--user-key', user_key], env)).code).toBe(0);
    expect(JSON.parse((await op(['tokens', 'revoke', '--login', 'ops@example.com'], env)).stdout)).toEqual({ login: 'ops@example.com', revoked: 0 });
    expect((await op(['audit', '--limit', '5'], env)).code).toBe(0);
    expect((await op(['--data-dir', dataDir, 'keys', 'ls', '--login', 'ops@example.com'])).code).toBe(0);
    const usage = await op(['accounts', 'create', '--login', 'x@example.com'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--password is required');
    expect((await op(['audit', '--port', 'nope'], env)).code).toBe(2);
  });
});

describe('the package', () => {
  it('exports the client as hangar/client from the build', () => {
    assertBuilt();
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', "const c = await import('hangar/client'); console.log(typeof c.HangarClient, typeof c.HangarApiError)"], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('function function');
  });
});
