import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HangarProcess } from '../e2e/helpers/hangar-process.js';

/**
 * One `hangar serve` per SQLite data dir: a second one is refused at start with an error that
 * says why and what to do; a lock left by a dead hangar (its pid gone, or a zombie) is taken.
 */
describe('the SQLite data dir is used by one hangar at a time', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it('a second hangar on a data dir in use exits at once with a clear error; the first serves on', async () => {
    const first = await HangarProcess.start({ runtime: 'emulated' });
    cleanup.push(() => first.destroy());
    const second = await HangarProcess.start({ runtime: 'emulated', dataDir: first.dataDir }).then(
      (h) => {
        cleanup.push(() => h.stop().then(() => undefined));
        return 'started';
      },
      (err: Error) => err.message,
    );
    expect(second).toMatch(
      new RegExp(`the data dir ${first.dataDir} is in use by another hangar \\(pid ${first.pid}\\).*PostgreSQL \\(--database-url\\)`),
    );
    expect((await first.get('/v2/instances/')).status).toBe(200);
  });

  it('a lock naming a zombie (exited, not yet reaped) is taken over: the zombie holds nothing', async () => {
    // `sleep 60` inherits the shell's child, which exits at once and is never reaped
    const parent = spawn('sh', ['-c', 'sleep 0.05 & exec sleep 60'], { stdio: 'ignore' });
    cleanup.push(() => void parent.kill('SIGKILL'));
    let zombie = 0;
    const until = Date.now() + 5000;
    while (zombie === 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      const children = readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
      zombie = children.find((pid) => /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) ?? 0;
    }
    expect(zombie).toBeGreaterThan(0);
    // the zombie answers kill(pid, 0) like a live process would
    expect(() => process.kill(zombie, 0)).not.toThrow();

    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-lock-'));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    writeFileSync(join(dataDir, 'hangar.pid'), String(zombie));
    const h = await HangarProcess.start({ runtime: 'emulated', dataDir });
    cleanup.push(() => h.stop().then(() => undefined));
    expect((await h.get('/v2/instances/')).status).toBe(200);
    expect(readFileSync(join(dataDir, 'hangar.pid'), 'utf8').trim()).toBe(String(h.pid));
  });
});
