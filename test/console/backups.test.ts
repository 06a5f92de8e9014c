/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD, enginesAvailable, portOf } from '../e2e/helpers/hangar-process.js';
import { connectRedis, eventually } from '../e2e/helpers/redis.js';
import { type GatedRedisServer, gatedRedisServer } from './helpers/gated-redis.js';
import { type Problems, type TestBrowser, chromiumAvailable, logIn, seriousViolations, startBrowser } from './helpers/browser.js';

/**
 * The Backups page in a real browser against the built hangar on the local runtime (real
 * redis-server behind the HAProxy edge). One story, in order: keys written with a real Redis
 * client, a backup taken from the page, downloaded, restored into a new instance and in place,
 * the policy, a delete, the keyboard and axe. To see the instance RESTORING whatever the speed of
 * the machine, redis-server is started through a gate (as in operations.test.ts): a script that
 * runs the real redis-server once the test opens the gate, so a restore's restart of the engines
 * holds the instance RESTORING for as long as the test needs.
 */
describe.runIf(enginesAvailable() && chromiumAvailable())('the Backups page on the local runtime', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  let page: Page;
  let problems: Problems;
  let gate: GatedRedisServer | undefined;
  let password = '';
  let port = 0;
  let backupId = '';

  const closeGate = () => gate!.close();
  const openGate = () => gate!.open();

  beforeAll(async () => {
    gate = gatedRedisServer('hangar-console-backups-');
    hangar = await HangarProcess.start({ env: { HANGAR_REDIS_SERVER_BIN: gate.bin } });
    const rec = await hangar.createRedis('store', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
    password = rec.password;
    port = portOf(rec.public_connect_string);
    tb = await startBrowser(hangar.url);
    ({ page, problems } = await tb.newPage());
    await page.goto(`${hangar.url}/#/instances/store`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    await heading('store').waitFor();
  }, 90_000);

  afterAll(async () => {
    gate?.open();
    await tb?.close();
    await hangar?.destroy();
    gate?.remove();
  });

  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const rows = () => page.locator('table.backups tbody tr');
  const row = (id: string) => page.locator(`tr[data-backup="${id}"]`);
  const mark = (value: number) => page.evaluate((v) => ((window as unknown as { marker: number }).marker = v), value);
  const marker = () => page.evaluate(() => (window as unknown as { marker?: number }).marker);

  /** Reads a key with a real Redis client through the edge (retried while the engines restart). */
  async function readKey(p: number, pass: string, key: string): Promise<string | null> {
    let value: string | null = null;
    await eventually(
      `reading ${key} on port ${p}`,
      async () => {
        try {
          const c = await connectRedis(p, pass);
          try {
            value = await c.get(key);
            return true;
          } finally {
            c.destroy();
          }
        } catch {
          return false;
        }
      },
      20_000,
    );
    return value;
  }

  it("takes a backup from the page, reached from the instance's page, and shows it run and turn COMPLETED without a reload", async () => {
    const client = await connectRedis(port, password);
    try {
      await client.set('restored-key', 'before');
    } finally {
      client.destroy();
    }
    // the instance's page has a Backups section that leads to them
    const summary = page.getByRole('region', { name: 'Backups' });
    await summary.getByText('No completed backup yet.').waitFor();
    await summary.getByRole('link', { name: 'Back up, download, restore and schedule the backups of store' }).click();
    await heading('Backups of store').waitFor();
    expect(await page.evaluate(() => window.location.hash)).toBe('#/backups/store');
    expect(await page.getByLabel('Instance').inputValue()).toBe('store');
    await page.getByText('No backup yet: take one now').waitFor();
    await page.locator('[data-live="stream"]').waitFor();
    await mark(1);

    await page.getByRole('button', { name: 'Back up now' }).click();
    // its operation, with its progress, followed from the event stream
    const card = page.locator('.instance-operations [data-operation]');
    await card.waitFor();
    const operationId = await card.getAttribute('data-operation');
    expect(await card.locator('.op-what').textContent()).toBe('backup of store: on demand');
    // finished, it says so for a moment before it fades into the instance's operations
    await expect.poll(() => card.getAttribute('data-state'), { timeout: 30_000 }).toBe('SUCCEEDED');
    await expect.poll(() => rows().getAttribute('data-state'), { timeout: 10_000 }).toBe('COMPLETED');
    backupId = (await rows().getAttribute('data-backup'))!;
    expect(operationId).toBe(backupId);
    await page
      .getByRole('status')
      .filter({ hasText: /^The backup is COMPLETED \(/ })
      .waitFor();
    expect(await marker()).toBe(1);

    // the row says what the API says
    const b = (await hangar.get(`/v2/instances/store/backups/${backupId}/`)).body.data;
    expect(b).toMatchObject({ state: 'COMPLETED', scheduled: false });
    const r = row(backupId);
    expect(await r.locator('th').textContent()).toBe(b.started);
    expect(await r.locator('[data-label="Finished"]').textContent()).toBe(b.finished);
    expect(await r.locator('[data-label="Taken"]').textContent()).toBe('on demand');
    expect(Number(await r.locator('[data-label="Size"]').getAttribute('data-size'))).toBe(b.size_bytes);
    expect(await r.locator('[data-label="SHA-256"] code').textContent()).toBe(b.sha256.slice(0, 12));
    expect(await r.locator('[data-label="SHA-256"] code').getAttribute('title')).toBe(b.sha256);

    // and the instance's page tells of it
    await page.getByRole('link', { name: 'instance page' }).click();
    await heading('store').waitFor();
    await page.getByRole('region', { name: 'Backups' }).getByText(`Last completed backup: ${b.finished} UTC`).waitFor();
    await page.getByRole('link', { name: 'backups', exact: true }).click();
    await heading('Backups of store').waitFor();
  });

  it('downloads a backup with the session token: the file saved has its size and SHA-256', async () => {
    const b = (await hangar.get(`/v2/instances/store/backups/${backupId}/`)).body.data;
    const asked: Request[] = [];
    const onRequest = (r: Request) => {
      if (new URL(r.url()).pathname.endsWith('/download')) asked.push(r);
    };
    page.on('request', onRequest);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      row(backupId)
        .getByRole('button', { name: /^Download/ })
        .click(),
    ]);
    expect(download.suggestedFilename()).toBe(`store-${backupId}.rdb`);
    const file = await download.path();
    const bytes = readFileSync(file);
    expect(bytes.length).toBe(b.size_bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(b.sha256);
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('REDIS');
    await page
      .getByRole('status')
      .filter({ hasText: `Saved store-${backupId}.rdb (` })
      .filter({ hasText: 'SHA-256 checked' })
      .waitFor();
    page.off('request', onRequest);
    // the download went with the session's token in a header: the address alone gives nothing
    expect(asked.length).toBe(1);
    expect(asked[0]!.headers()['x-auth-token']).toBe(
      await page.evaluate(() => JSON.parse(sessionStorage.getItem('hangar.session')!).token as string),
    );
    expect((await fetch(`${hangar.url}/v2/instances/store/backups/${backupId}/download`)).status).toBe(401);
  });

  it('restores the backup into a new instance through the create form, restore_from filled in', async () => {
    await row(backupId)
      .getByRole('link', { name: /^New instance/ })
      .click();
    await heading('Restore a backup into a new instance').waitFor();
    expect(await page.getByLabel('Restore from backup').inputValue()).toBe(backupId);
    await page.getByText(/^Taken of store at .* UTC: redis /).waitFor();
    await expect.poll(() => page.getByLabel('Service').inputValue()).toBe('redis');
    await page.getByLabel('Zone').selectOption('US-Dallas');
    await page.getByLabel('Name').fill('copy');
    await page.getByLabel(/^Admit my address/).check();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await heading('copy').waitFor();
    await page.locator('.title-row .badge', { hasText: 'ACTIVE' }).waitFor({ timeout: 60_000 });
    const copy = await hangar.waitFor('copy', (rec) => rec?.state === 'ACTIVE');
    // the restore is settled just after the instance is ACTIVE
    await expect
      .poll(async () => (await hangar.get('/v2/instances/copy/restores/')).body.data, { timeout: 10_000 })
      .toMatchObject([{ backup_id: backupId, kind: 'new_instance', state: 'COMPLETED' }]);
    expect(await readKey(portOf(copy.public_connect_string), copy.password, 'restored-key')).toBe('before');
  });

  it('restores in place only once the name is typed: RESTORING, then ACTIVE, and the data of the backup is back', async () => {
    const client = await connectRedis(port, password);
    try {
      await client.set('restored-key', 'after');
      await client.set('later-key', 'written after the backup');
    } finally {
      client.destroy();
    }
    // the instance is chosen from the select
    await page.goto(`${hangar.url}/#/backups`);
    await heading('Backups').waitFor();
    await page.getByLabel('Instance').selectOption('store');
    await heading('Backups of store').waitFor();
    await mark(2);

    await row(backupId)
      .getByRole('button', { name: /^Restore/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Restore store from this backup?' });
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Restore store' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type store to confirm').fill('stor');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type store to confirm').fill('store');
    // the engines' restart is held at the gate: the instance stays RESTORING until it opens
    const badge = page.locator('.title-row .badge');
    const card = page.locator('.instance-operations [data-operation]').filter({ hasText: 'restore of store' });
    closeGate();
    try {
      await confirm.click();
      await badge.filter({ hasText: 'RESTORING' }).waitFor({ timeout: 30_000 });
      await page.locator('.progress-line').filter({ hasText: 'Restoring: a backup replaces the data' }).waitFor();
      // its operation, PENDING until a worker takes it, runs up to the engines' restart and holds there
      await expect.poll(() => card.getAttribute('data-state'), { timeout: 30_000 }).toBe('RUNNING');
      expect((await hangar.get('/v2/instances/store/')).body.data.state).toBe('RESTORING');
    } finally {
      // whatever happened above, the engines may start (the tests after this one need them)
      openGate();
    }
    await badge.filter({ hasText: 'ACTIVE' }).waitFor({ timeout: 60_000 });
    await page
      .getByRole('status')
      .filter({ hasText: /^store is restored from the backup of .* and ACTIVE again\.$/ })
      .waitFor({ timeout: 30_000 });
    await expect.poll(() => card.getAttribute('data-state')).toBe('SUCCEEDED');
    expect(await marker()).toBe(2);
    expect(await readKey(port, password, 'restored-key')).toBe('before');
    expect(await readKey(port, password, 'later-key')).toBeNull();
  });

  it('keeps the backup policy: an invalid value is refused next to its field; a valid one is saved and shown after a reload', async () => {
    const policy = page.getByRole('region', { name: 'Backup policy' });
    await policy.getByText('Now: No scheduled backups; every backup kept.').waitFor();
    await policy.getByLabel('Schedule').selectOption('every');
    await policy.getByLabel('Hours between backups').fill('0');
    await policy.getByRole('button', { name: 'Save policy' }).click();
    const hoursError = policy
      .locator('.field.invalid')
      .filter({ has: page.getByLabel('Hours between backups') })
      .locator('.field-error');
    await hoursError.waitFor();
    expect(await hoursError.textContent()).toContain('Hours between backups must be a whole number of hours from 1 to 8760');
    expect(await policy.getByLabel('Hours between backups').getAttribute('aria-invalid')).toBe('true');

    await policy.getByLabel('Schedule').selectOption('daily');
    await policy.getByLabel('Time of day (UTC)').fill('25:00');
    await policy.getByRole('button', { name: 'Save policy' }).click();
    const timeError = policy
      .locator('.field.invalid')
      .filter({ has: page.getByLabel('Time of day (UTC)') })
      .locator('.field-error');
    await timeError.waitFor();
    expect(await timeError.textContent()).toContain('Time of day (UTC) must be a time of day HH:MM');
    expect((await hangar.get('/v2/instances/store/backup-policy/')).body.data.schedule).toBe('off');

    // half a day from now: no scheduled backup fires during the test
    const at = new Date(Date.now() + 12 * 3600_000).toISOString().slice(11, 16);
    await policy.getByLabel('Time of day (UTC)').fill(at);
    await policy.getByLabel('Keep the last N backups').fill('5');
    await policy.getByLabel('Keep the backups of the last N days').fill('30');
    await policy.getByRole('button', { name: 'Save policy' }).click();
    await policy
      .getByRole('status')
      .filter({ hasText: `Policy saved: Daily at ${at} UTC; keeping the last 5 and those of the last 30 days.` })
      .waitFor();
    expect(await policy.locator('.field-error').count()).toBe(0);
    const saved = (await hangar.get('/v2/instances/store/backup-policy/')).body.data;
    expect(saved).toMatchObject({ schedule: 'daily', daily_at: at, every_hours: null, keep_last: 5, keep_days: 30 });

    await page.reload();
    await heading('Backups of store').waitFor();
    await policy
      .getByText(`Now: Daily at ${at} UTC; keeping the last 5 and those of the last 30 days. Next backup at ${saved.next_run} UTC.`)
      .waitFor();
    expect(await policy.getByLabel('Schedule').inputValue()).toBe('daily');
    expect(await policy.getByLabel('Time of day (UTC)').inputValue()).toBe(at);
    expect(await policy.getByLabel('Keep the last N backups').inputValue()).toBe('5');
    expect(await policy.getByLabel('Keep the backups of the last N days').inputValue()).toBe('30');
  });

  it('is usable with the keyboard alone: choose the instance, back up, and a dialog that Escape closes', async () => {
    await page.goto(`${hangar.url}/#/backups`);
    await heading('Backups').waitFor();
    await page.getByLabel('Instance').locator('option', { hasText: 'store' }).waitFor({ state: 'attached' });
    const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.textContent?.trim() ?? '');
    const focusedName = () => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name ?? '');
    const tabTo = async (reached: () => Promise<boolean>, what: string, max = 60) => {
      for (let i = 0; i < max; i++) {
        await page.keyboard.press('Tab');
        if (await reached()) return;
      }
      throw new Error(`${what} not reached with Tab`);
    };
    await tabTo(async () => (await focusedName()) === 'instance', 'the instance select');
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    // a letter picks the option that starts with it (on a closed select: no pop-up)
    await page.keyboard.type('s');
    await heading('Backups of store').waitFor();
    expect(await page.evaluate(() => window.location.hash)).toBe('#/backups/store');

    // the list read (the heading comes first)
    await row(backupId).waitFor();
    const before = await rows().count();
    await tabTo(async () => (await focused()) === 'Back up now', 'Back up now');
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    await page.keyboard.press('Enter');
    await expect.poll(() => rows().count(), { timeout: 10_000 }).toBe(before + 1);
    await expect.poll(() => rows().first().getAttribute('data-state'), { timeout: 30_000 }).toBe('COMPLETED');

    await tabTo(async () => /^Delete the backup of /.test(await focused()), 'a Delete button');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete this backup?' });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await rows().count()).toBe(before + 1);
  });

  it('deletes a backup only after asking', async () => {
    const newest = (await rows().first().getAttribute('data-backup'))!;
    expect(newest).not.toBe(backupId);
    await row(newest)
      .getByRole('button', { name: /^Delete/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Delete this backup?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('it can no longer be downloaded or restored');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(await row(newest).count()).toBe(1);
    expect((await hangar.get(`/v2/instances/store/backups/${newest}/`)).status).toBe(200);

    await row(newest)
      .getByRole('button', { name: /^Delete/ })
      .click();
    await dialog.getByRole('button', { name: 'Delete backup' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^The backup of .* UTC is deleted\.$/ })
      .waitFor();
    await row(newest).waitFor({ state: 'detached' });
    expect((await hangar.get(`/v2/instances/store/backups/${newest}/`)).status).toBe(404);
    expect(await row(backupId).count()).toBe(1);
  });

  it('has no serious or critical accessibility violation (axe-core), with its table, the policy and a dialog open, light and dark', async () => {
    const found: Record<string, unknown> = {};
    for (const colorScheme of ['light', 'dark'] as const) {
      const { page: p, context } = await tb.newPage({ colorScheme });
      await p.goto(`${hangar.url}/#/backups/store`);
      await logIn(p, LOGIN, PASSWORD);
      await p.locator(`tr[data-backup="${backupId}"]`).waitFor();
      await p.locator('form.policy select[name="schedule"]').waitFor();
      const page1 = await seriousViolations(p);
      if (page1.length > 0) found[`${colorScheme} page`] = page1;
      await p
        .locator(`tr[data-backup="${backupId}"]`)
        .getByRole('button', { name: /^Restore/ })
        .click();
      await p.getByRole('dialog').waitFor();
      const dialog = await seriousViolations(p);
      if (dialog.length > 0) found[`${colorScheme} restore dialog`] = dialog;
      await context.close();
    }
    expect(found).toEqual({});
  });

  it('shows the instance chosen while the list of instances is still being read', async () => {
    const { page: p, context } = await tb.newPage();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    // the list (GET /v2/instances/) is held back; the instance's own record is not
    await p.route(
      (url) => url.pathname === '/v2/instances/',
      async (route) => {
        await held;
        await route.continue();
      },
    );
    try {
      await p.goto(`${hangar.url}/#/backups/store`);
      await logIn(p, LOGIN, PASSWORD);
      await p.getByRole('heading', { level: 1, name: 'Backups of store', exact: true }).waitFor();
      expect(await p.getByLabel('Instance').inputValue()).toBe('store');
      const listed = p.waitForResponse((r) => new URL(r.url()).pathname === '/v2/instances/');
      release();
      expect((await listed).status()).toBe(200);
      // once read, the list's own option is the chosen one (no second "store")
      await expect
        .poll(() =>
          p
            .getByLabel('Instance')
            .locator('option', { hasText: /^store$/ })
            .count(),
        )
        .toBe(1);
      expect(await p.getByLabel('Instance').inputValue()).toBe('store');
    } finally {
      release();
      await context.close();
    }
  });

  it('broke no Content-Security-Policy rule, threw nothing, and asked no other host', () => {
    // the refusals the story provokes (the invalid policy values, the 404 of a deleted backup) are logged by the browser itself
    const errors = problems.consoleErrors.filter(
      (e) => !/^Failed to load resource: the server responded with a status of (400|404) /.test(e),
    );
    expect(errors).toEqual([]);
    expect(problems.foreignRequests).toEqual([]);
  });
});
