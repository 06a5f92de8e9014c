/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD } from '../e2e/helpers/hangar-process.js';
import { type TestBrowser, chromiumAvailable, logIn, startBrowser } from './helpers/browser.js';

/**
 * The console deciding by what the API says (GET /v2/engines/, GET /v2/zones/) rather than by
 * product names, and the console's forms and pages as users found them wanting, in a real browser
 * against the built hangar on emulated zones (one with little room) and a local zone where
 * MongoDB is not installed.
 */
describe.runIf(chromiumAvailable())('the web console, by what the API says', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  const dir = mkdtempSync(join(tmpdir(), 'hangar-console-features-'));

  beforeAll(async () => {
    const zones = join(dir, 'zones.json');
    writeFileSync(
      zones,
      JSON.stringify({
        'US-Dallas': { runtime: 'emulated' },
        Tight: { runtime: 'emulated', services: ['redis'], capacity_mb: 3000 },
        Local: { runtime: 'local', services: ['mongodb', 'redis'], capacity_mb: 4000 },
      }),
    );
    hangar = await HangarProcess.start({ runtime: 'emulated', env: { HANGAR_ZONES: zones } });
    tb = await startBrowser(hangar.url);
  }, 60_000);

  afterAll(async () => {
    await tb?.close();
    await hangar?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new page (its own session storage), logged in, at `path`. */
  async function open(path: string, opts: { width?: number; timezoneId?: string } = {}) {
    const { page, problems, context } = await tb.newPage(opts);
    await page.goto(`${hangar.url}/#${path}`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    await page.waitForFunction(
      () => sessionStorage.getItem('hangar.session') !== null && document.querySelector('main h1')?.textContent !== 'Log in to hangar',
    );
    return { page, problems, context };
  }

  const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const tab = (page: Page, name: string) =>
    page.getByRole('navigation', { name: 'Instance sections' }).getByRole('link', { name, exact: true });
  const optionTexts = (page: Page, label: string) => page.getByLabel(label, { exact: true }).locator('option').allTextContents();
  const disabledOptions = (page: Page, label: string) =>
    page
      .getByLabel(label, { exact: true })
      .locator('option')
      .evaluateAll((els) => els.filter((e) => (e as HTMLOptionElement).disabled).map((e) => (e as HTMLOptionElement).value));

  it("offers the engines of a service that has several, the zone's default first, with the chosen engine's versions; admits the browser's address unless unchecked", async () => {
    const zone = ((await hangar.get('/v2/zones/')).body.data as any[]).find((z) => z.name === 'US-Dallas');
    const redis = zone.services.find((s: any) => s.service === 'redis');
    const valkey = redis.engines.find((e: any) => e.engine === 'valkey');
    const { page, context } = await open('/instances/new');
    await page.getByLabel('Plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('Zone').selectOption('US-Dallas');
    await page.getByLabel('Service').selectOption('redis');
    expect(await optionTexts(page, 'Engine')).toEqual(['Redis', 'Valkey']);
    expect(await page.getByLabel('Engine').inputValue()).toBe(redis.default_engine);
    expect(await optionTexts(page, 'Version')).toEqual(redis.versions);
    await page.getByLabel('Engine').selectOption('valkey');
    expect(await optionTexts(page, 'Version')).toEqual(valkey.versions);
    // a service with one engine has no choice to make
    await page.getByLabel('Service').selectOption('elasticsearch');
    expect(await page.getByLabel('Engine').count()).toBe(0);
    await page.getByLabel('Service').selectOption('redis');

    // checked from the start, naming the address hangar sees
    const admit = page.getByLabel(/^Admit my address/);
    await expect.poll(() => admit.isChecked()).toBe(true);
    expect(await page.locator('label[for="admit-me"]').textContent()).toContain('127.0.0.1');
    await page.getByLabel('Engine').selectOption('valkey');
    await page.getByLabel('Version').selectOption(valkey.versions[0]);
    await page.getByLabel('Name').fill('kv');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await heading(page, 'kv').waitFor();
    const rec = await hangar.waitFor('kv', (r) => r?.state === 'ACTIVE');
    expect(rec).toMatchObject({ engine: 'valkey', version: valkey.versions[0] });
    expect(((await hangar.get('/v2/instances/kv/acls/')).body.data as any[]).map((a) => a.cidr_mask)).toEqual(['127.0.0.1']);
    expect(await page.locator('p.facts').textContent()).toContain('Valkey');

    // unchecked: no ACL, and the form says what that means
    await page.goto(`${hangar.url}/#/instances/new`);
    await page.getByLabel('Plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('Zone').selectOption('US-Dallas');
    await page.getByLabel(/^Admit my address/).uncheck();
    await page.getByText('Without an ACL nobody can connect').waitFor();
    await page.getByLabel('Name').fill('closed');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await heading(page, 'closed').waitFor();
    expect((await hangar.get('/v2/instances/closed/acls/')).body.data).toEqual([]);
    await context.close();
  });

  it("offers disabled, saying why, the plans the zone has no room for, by the memory each plan promises (the server's rule); the resize list too", async () => {
    const { page, context } = await open('/instances/new');
    await page.getByLabel('Plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('Zone').selectOption('Tight');
    // 3,000 MB free: a Redis plan promises twice its memory (primary and replica)
    expect(await disabledOptions(page, 'Plan')).toEqual(['2500', '5000', '10000', '20000', '50000', '75000', '100000']);
    expect(await page.getByLabel('Plan').locator('option[value="2500"]').textContent()).toBe(
      '2,500 MB (needs 5,000 MB, the zone has 3,000 MB free)',
    );
    expect(await page.getByLabel('Plan').locator('option[value="1000"]').textContent()).toBe('1,000 MB');
    await page.getByLabel('Plan').selectOption('500');
    expect(
      await page
        .locator('.field', { has: page.getByLabel('Plan') })
        .locator('.hint')
        .textContent(),
    ).toBe("In MB. It takes 1,000 MB of the zone's memory (2 x 500 MB: maxmemory of the primary and of the replica).");
    await page.getByLabel('Name').fill('snug');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await heading(page, 'snug').waitFor();
    await hangar.waitFor('snug', (r) => r?.state === 'ACTIVE');

    // 2,000 MB free now: growing to 1,000 MB needs 1,000 MB more, to 2,500 MB 4,000 more
    await tab(page, 'Settings').click();
    await page.getByLabel('New plan').locator('option').first().waitFor({ state: 'attached' });
    expect(await page.getByLabel('New plan').inputValue()).toBe('1000');
    expect(await disabledOptions(page, 'New plan')).toContain('2500');
    expect(await page.getByLabel('New plan').locator('option[value="2500"]').textContent()).toBe(
      '2,500 MB (needs 4,000 MB more, the zone has 2,000 MB free)',
    );
    await context.close();
  });

  it('says a service is not offered in a zone, not why the operator did not install it', async () => {
    const { page, context } = await open('/instances/new');
    await page.getByLabel('Plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('Zone').selectOption('Local');
    const hint = page.locator('.field', { has: page.getByLabel('Service') }).locator('.hint');
    await hint.waitFor();
    const text = (await hint.textContent()) ?? '';
    expect(text).toContain('mongodb is not offered in this zone.');
    expect(text).not.toMatch(/PATH|HANGAR_|mongod\b/);
    await context.close();
  });

  it("maps a refused field to the form's label", async () => {
    await hangar.createRedis('cache', { version: '7.2.4', acls: [{ cidr_mask: '10.0.0.0/8', description: 'office' }] });
    const { page, context } = await open('/instances/cache/acls');
    await page.getByLabel('Address or range').fill('300.1.2.3');
    await page.getByRole('button', { name: 'Add ACL' }).click();
    const error = page.locator('.field.invalid .field-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^Address or range must be/);
    expect(await error.textContent()).not.toContain('cidr_mask');
    await context.close();
  });

  it('says each warning of the answer (a range stored otherwise than written) in the notice of an ACL add', async () => {
    const { page, context } = await open('/instances/cache/acls');
    await page.getByLabel('Address or range').fill('192.168.7.9/16');
    await page.getByLabel('Description', { exact: true }).fill('lab');
    await page.getByRole('button', { name: 'Add ACL' }).click();
    await page.getByRole('status').filter({ hasText: '192.168.7.9/16 is admitted.' }).waitFor();
    expect(await page.getByRole('status').filter({ hasText: '192.168.7.9/16 is admitted.' }).textContent()).toContain(
      '192.168.7.9/16 was stored as 192.168.0.0/16',
    );
    await context.close();
  });

  it("says on the overview that nobody can connect to an instance without ACLs, and admits the viewer's address from there", async () => {
    await hangar.createRedis('lonely', { version: '7.2.4' });
    const { page, context } = await open('/instances/lonely');
    const box = page.locator('[data-no-acl]');
    await box.waitFor();
    expect(await box.textContent()).toContain('Nobody can connect');
    await box.getByRole('button', { name: 'Add my address (127.0.0.1)' }).click();
    await page.getByRole('status').filter({ hasText: '127.0.0.1 is admitted.' }).waitFor();
    await expect.poll(() => page.locator('[data-no-acl]').count()).toBe(0);
    expect(((await hangar.get('/v2/instances/lonely/acls/')).body.data as any[]).map((a) => a.cidr_mask)).toEqual(['127.0.0.1']);
    // an instance with an ACL says nothing of the kind
    await page.goto(`${hangar.url}/#/instances/cache`);
    await page.getByRole('heading', { name: 'Connect' }).waitFor();
    expect(await page.locator('[data-no-acl]').count()).toBe(0);
    await context.close();
  });

  it('charts from the first sample on the last minute only, its times on a 24-hour clock in UTC; sizes in one style', async () => {
    const { page, context } = await open('/instances/cache', { timezoneId: 'Asia/Kolkata' });
    const chart = page.locator('figure.chart');
    await expect.poll(async () => Number(await chart.getAttribute('data-points')), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    const now = Date.now() / 1000;
    const min = Number(await chart.getAttribute('data-x-min'));
    const max = Number(await chart.getAttribute('data-x-max'));
    expect(max - min).toBeGreaterThanOrEqual(55);
    expect(max - min).toBeLessThan(120);
    expect(Math.abs(max - now)).toBeLessThan(30);
    const labels = (await chart.getAttribute('data-x-labels'))!.split(' ');
    expect(labels.length).toBeGreaterThanOrEqual(2);
    for (const l of labels) expect(l).toMatch(/^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$/);
    // UTC, not the browser's +05:30
    const utc = (s: number) => new Date(s * 1000).toISOString().slice(11, 16);
    expect([utc(min), utc(min + 60), utc(max)]).toContain(labels[0]!.slice(0, 5));
    expect(await chart.locator('.u-legend').textContent()).not.toMatch(/[AP]M/i);
    // the memory used as the plan is said: "1.1 MB of 500 MB"
    expect(await page.locator('[data-metric="spaceUsage"]').textContent()).toMatch(/^\d+(\.\d)? [KMG]?B of 500 MB \([\d.]+% free\)$/);
    await context.close();
  });

  it('shows the running operation above the tabs and lets finished ones fade into the instance operations; the Operations page lists finished ones as rows', async () => {
    const { page, context } = await open('/instances/cache/acls');
    for (const i of [1, 2, 3]) {
      await page.getByLabel('Address or range').fill(`10.9.0.${i}`);
      await page.getByRole('button', { name: 'Add ACL' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `10.9.0.${i} is admitted.` })
        .waitFor();
    }
    // none piles up, none waits to be dismissed
    await expect.poll(() => page.locator('.instance-operations [data-operation]').count(), { timeout: 15_000 }).toBe(0);
    expect(await page.getByRole('button', { name: /Dismiss/ }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Every operation of cache' }).count()).toBe(0);

    await page.goto(`${hangar.url}/#/operations?instance=cache&kind=acl.add`);
    const rows = page.locator('table.op-table tr[data-operation]').filter({ hasText: '10.9.0.' });
    await expect.poll(() => rows.count()).toBe(3);
    const first = rows.first();
    expect(await first.locator('th').textContent()).toBe('acl.add of cache: 10.9.0.3');
    expect(await first.locator('[data-label="Outcome"]').textContent()).toBe('SUCCEEDED');
    expect(await first.locator('[data-label="When"]').textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(await first.locator('[data-label="Took"]').textContent()).toMatch(/^\d+(\.\d)? (ms|s)$|min/);
    // finished: no progress bar, no card
    expect(await page.locator('main progress').count()).toBe(0);
    expect(await page.locator('.op-card').count()).toBe(0);
    await context.close();
  });

  it('lays out the ACLs and the audit log at 390 px as the instance list: nothing scrolls sideways, Delete and Outcome in sight', async () => {
    const { page, context } = await open('/instances/cache/acls', { width: 390 });
    const row = page.locator('tr[data-acl="10.0.0.0/8"]');
    await row.waitFor();
    const inView = async (el: ReturnType<Page['locator']>) => {
      const box = await el.boundingBox();
      return box !== null && box.x >= 0 && box.x + box.width <= 390;
    };
    const wrapsOwn = (region: string) =>
      page.locator(`.table-wrap[aria-label="${region}"]`).evaluate((el) => el.scrollWidth <= el.clientWidth + 1);
    expect(await wrapsOwn('ACLs')).toBe(true);
    expect(await inView(row.getByRole('button', { name: /Delete/ }))).toBe(true);
    await page.evaluate(() => (window.location.hash = '/events'));
    const outcome = page.locator('tbody tr').first().locator('[data-label="Outcome"]');
    await outcome.waitFor();
    expect(await wrapsOwn('Audit events')).toBe(true);
    expect(await inView(outcome)).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await context.close();
  });

  it('Redis users: adds one (its password shown once), rotates its password and retires the old one, deletes it after asking', async () => {
    const { page, context } = await open('/instances/cache');
    await tab(page, 'Users').click();
    await page.getByRole('heading', { name: 'Users', level: 2 }).waitFor();
    await page.getByText('No user yet').waitFor();
    const form = page.locator('form.add-redis-user');
    await form.getByLabel('User name').fill('app');
    await form.getByLabel('Keys').fill('app:* jobs:*');
    await form.getByLabel('Commands').fill('+@read +@write');
    await form.getByRole('button', { name: 'Add user' }).click();
    const box = page.getByRole('region', { name: 'New password' });
    await box.waitFor();
    const password = (await box.locator('code').textContent())!;
    expect(password.length).toBeGreaterThanOrEqual(16);
    const user = () => hangar.get('/v2/redis/cache/users/app/').then((r) => r.body.data);
    expect(await user()).toMatchObject({ name: 'app', keys: ['app:*', 'jobs:*'], commands: ['+@read', '+@write'] });
    const row = page.locator('tr[data-user="app"]');
    await row.waitFor();
    expect(await page.locator('main').textContent()).toContain(password);
    await box.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.locator('main').textContent()).not.toContain(password);

    await row.getByRole('button', { name: /Rotate password/ }).click();
    await page.getByRole('dialog', { name: 'Make a new password for app?' }).getByRole('button', { name: 'Rotate password' }).click();
    await box.waitFor();
    expect(await box.locator('code').textContent()).not.toBe(password);
    expect(await box.textContent()).toContain('The old password works too until');
    await expect.poll(async () => (await user()).previous_password_valid_until).toEqual(expect.any(String));
    await row.getByRole('button', { name: /Retire old password/ }).click();
    await page.getByRole('status').filter({ hasText: 'The old password of app no longer works.' }).waitFor();
    expect((await user()).previous_password_valid_until).toBeUndefined();

    await row.getByRole('button', { name: /Delete/ }).click();
    await page.getByRole('dialog', { name: 'Delete user app?' }).getByRole('button', { name: 'Delete app' }).click();
    await page.getByText('No user yet').waitFor();
    expect((await hangar.get('/v2/redis/cache/users/app/')).status).toBe(404);
    await context.close();
  });

  it('Redis settings: changes one of the allow-list, live; a refused value is shown next to its setting with the values it takes', async () => {
    const { page, context } = await open('/instances/cache/config');
    await page.getByRole('heading', { name: 'Configuration', level: 2 }).waitFor();
    const policy = page.getByLabel('maxmemory-policy', { exact: true });
    await expect.poll(() => policy.inputValue()).toBe('noeviction');
    await policy.fill('sometimes');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const error = page.locator('.field.invalid', { has: policy }).locator('.field-error');
    await error.waitFor();
    expect(await error.textContent()).toContain('one of: noeviction, allkeys-lru');
    await policy.fill('allkeys-lru');
    await page.getByLabel('timeout', { exact: true }).fill('300');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Changed on the primary and the replica' }).waitFor();
    await expect
      .poll(async () => (await hangar.get('/v2/redis/cache/config/')).body.data)
      .toMatchObject({ 'maxmemory-policy': 'allkeys-lru', timeout: '300' });
    await context.close();
  });

  it('offers no Redis tabs, metrics or resize on an instance whose product has no Redis routes', async () => {
    const mongo = await hangar.post('/v2/instances/', {
      name: 'docs',
      service: 'mongodb',
      type: 'mongodb_replica_set',
      plan: 5,
      version: '3.4.2',
      zone: 'US-Dallas',
    });
    expect(mongo.status).toBe(200);
    await hangar.waitFor('docs', (r) => r?.state === 'ACTIVE');
    const { page, context } = await open('/instances/docs');
    await page.getByRole('heading', { name: 'Connect' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Instance sections' }).getByRole('link').allTextContents()).toEqual([
      'Overview',
      'ACLs',
      'Users',
      'Settings',
    ]);
    expect(await page.getByRole('heading', { name: 'Live metrics' }).count()).toBe(0);
    // the mongosh command, from the API
    await page.locator('.copy-value', { hasText: 'mongosh command' }).waitFor();
    expect(await page.locator('.copy-value', { hasText: 'mongosh command' }).locator('code').textContent()).toMatch(
      /^mongosh mongodb:\/\/.+\/DATABASE --username USER --authenticationDatabase DATABASE$/,
    );
    expect(await page.locator('p.facts').textContent()).toContain('5 GB');
    await tab(page, 'Settings').click();
    await page.getByRole('heading', { name: 'Rename' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Resize' }).count()).toBe(0);
    await context.close();
  });

  it('forgets a one-time notice ("deleted") when the user logs out: the next login does not say it again', async () => {
    const { page, context } = await open('/instances');
    await page.locator('tr[data-instance="cache"]').waitFor();
    await page.evaluate(() => (window.location.hash = '/instances?deleted=gone'));
    await page.getByRole('status').filter({ hasText: 'Instance gone is deleted.' }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await heading(page, 'Log in to hangar').waitFor();
    expect(decodeURIComponent(await page.evaluate(() => window.location.hash))).not.toContain('deleted');
    await logIn(page, LOGIN, PASSWORD);
    await heading(page, 'Instances').waitFor();
    await page.locator('tr[data-instance="cache"]').waitFor();
    expect(await page.getByText('Instance gone is deleted.').count()).toBe(0);
    await context.close();
  });

  it('shows no focus ring on the login heading when the page loads; the heading is focused when the user goes to a page', async () => {
    const { page, context } = await tb.newPage();
    await page.goto(`${hangar.url}/`);
    const h1 = heading(page, 'Log in to hangar');
    await h1.waitFor();
    const ring = () =>
      page.evaluate(() => {
        const h = document.querySelector('main h1')!;
        return document.activeElement === h && getComputedStyle(h).outlineStyle !== 'none';
      });
    expect(await ring()).toBe(false);
    await logIn(page, LOGIN, PASSWORD);
    await heading(page, 'Instances').waitFor();
    await page.getByRole('link', { name: 'API keys' }).click();
    await heading(page, 'API keys').waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('page-title');
    await context.close();
  });
});
