import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A clean install (`npm ci`) of the locked dependencies on the Node.js this suite runs on (20,
 * the oldest hangar supports) says nothing about unsupported engines: every package of the lock
 * accepts this Node. `--dry-run` reads the lock only (no download, no build).
 */
describe('npm ci on this Node.js', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-npm-ci-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('installs the lock without an EBADENGINE warning', () => {
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(resolve(f), join(dir, f));
    const r = spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.status, output).toBe(0);
    expect(output).not.toMatch(/EBADENGINE/);
    expect(output).toMatch(/added \d+ packages/);
  }, 150_000);
});
