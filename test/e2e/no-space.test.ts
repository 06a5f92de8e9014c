import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, canMount, enginesAvailable, portOf } from './helpers/hangar-process.js';
import { killAllUnder, processesUnder } from './helpers/processes.js';
import { expectApiMatchesWhatRuns, listeningPorts } from './helpers/what-runs.js';

/**
 * No space left for an instance's data: the instances directory of a hangar is a small tmpfs,
 * filled up. A create then fails cleanly: FAILED with the reason, and nothing half-made (no
 * engine process, no edge listener, no data dir); once space is freed, creates work again.
 */
describe.runIf(enginesAvailable() && canMount())("no space left for an instance's data, on the local runtime", () => {
  let dataDir: string;
  let instances: string;
  let h: HangarProcess;
  let mounted = false;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'hangar-nospace-'));
    instances = join(dataDir, 'instances');
    mkdirSync(instances, { mode: 0o700 });
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'hangar-test-full', instances], { encoding: 'utf8' });
    expect(mount.status, mount.stderr).toBe(0);
    mounted = true;
    // fill it up: dd stops at ENOSPC
    spawnSync('dd', ['if=/dev/zero', `of=${join(instances, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
    h = await HangarProcess.start({ dataDir });
  });

  afterAll(async () => {
    await h?.stop();
    await killAllUnder(dataDir);
    if (mounted) spawnSync('umount', [instances]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a create fails with the reason and leaves no process, listener or data dir', async () => {
    const res = await h.post('/v2/instances/', h.redisBody('full', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] }));
    expect(res.status).toBe(200);
    const rec = await h.waitFor('full', (r) => r?.state === 'FAILED', 30_000);
    expect(rec.state_reason).toMatch(/no space left/i);
    expect(existsSync(join(instances, rec.id))).toBe(false);
    expect(processesUnder(instances)).toEqual([]);
    const listening = listeningPorts();
    for (const cs of [rec.public_connect_string, rec.servicenet_connect_string]) expect(listening.has(portOf(cs))).toBe(false);
    expect(readdirSync(instances)).toEqual(['filler']);
    await expectApiMatchesWhatRuns(h);
    // FAILED is final: it can be deleted
    expect((await h.delete('/v2/instances/full/')).status).toBe(200);
    await h.waitFor('full', (r) => r === undefined);
  });

  it('once space is freed, a create works again', async () => {
    rmSync(join(instances, 'filler'));
    const rec = await h.createRedis('roomy');
    expect(rec.state).toBe('ACTIVE');
    await expectApiMatchesWhatRuns(h);
  });
});
