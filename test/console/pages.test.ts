/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD } from '../e2e/helpers/hangar-process.js';
import { type TestBrowser, chromiumAvailable, logIn, seriousViolations, startBrowser } from './helpers/browser.js';

/**
 * The console's pages in a real browser against the built hangar on the emulated runtime
 * (every service available, no engine needed): accessibility (axe-core), phone width, dark
 * mode, API keys, MongoDB users.
 */
describe.runIf(chromiumAvailable())('the web console pages', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  let mongoId = '';

  beforeAll(async () => {
    hangar = await HangarProcess.start({ runtime: 'emulated' });
    await hangar.createRedis('cache', { version: '7.2.4', acls: [{ cidr_mask: '10.0.0.0/8', description: 'office' }] });
    const mongo = await hangar.post('/v2/instances/', { name: 'docs', service: 'mongodb', type: 'mongodb_replica_set', plan: 5, version: '3.4.2', zone: 'US-West' });
    expect(mongo.status).toBe(200);
    mongoId = (await hangar.waitFor('docs', (r) => r?.state === 'ACTIVE')).id;
    tb = await startBrowser(hangar.url);
  }, 60_000);

  afterAll(async () => {
    await tb?.close();
    await hangar?.destroy();
  });

  /** A new page (its own session storage), logged in, at `path`. */
  async function open(path: string, opts: { width?: number; colorScheme?: 'light' | 'dark' } = {}) {
    const { page, problems, context } = await tb.newPage(opts);
    await page.goto(`${hangar.url}/#${path}`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    // logged in: a session kept, and the page asked for in place of the login page
    await page.waitForFunction(() => sessionStorage.getItem('hangar.session') !== null && document.querySelector('main h1')?.textContent !== 'Log in to hangar');
    return { page, problems, context };
  }

  const noHorizontalScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

  it('has no serious or critical accessibility violation on any page (axe-core), light and dark', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const { page, problems, context } = await tb.newPage({ colorScheme });
      await page.goto(`${hangar.url}/`);
      await page.getByRole('heading', { name: 'Log in to hangar' }).waitFor();
      const found: Record<string, unknown> = {};
      const check = async (name: string) => {
        const v = await seriousViolations(page);
        if (v.length > 0) found[`${colorScheme} ${name}`] = v;
      };
      await check('login');
      if (colorScheme === 'light') {
        // the checker itself finds a known fault: an input without a label
        await page.evaluate(() => document.querySelector('main')!.append(Object.assign(document.createElement('input'), { id: 'unlabelled' })));
        expect((await seriousViolations(page)).map((v) => v.id)).toContain('label');
        await page.evaluate(() => document.getElementById('unlabelled')!.remove());
      }
      await logIn(page, LOGIN, PASSWORD);
      await page.getByRole('heading', { level: 1, name: 'Instances' }).waitFor();
      const pages: [string, string][] = [
        ['/instances', 'tr[data-instance="cache"]'],
        ['/instances/new', 'form.create select[name="plan"] option'],
        ['/instances/cache', '[data-metric="maxClients"]'],
        ['/instances/cache/acls', 'tr[data-acl]'],
        ['/instances/cache/settings', 'select[name="new_plan"] option'],
        ['/instances/docs/users', 'text=Add a user to admin'],
        ['/keys', 'text=No API key yet.'],
        ['/events', 'tbody tr'],
        ['/operations', 'main h1'],
      ];
      for (const [path, ready] of pages) {
        await page.evaluate((p) => (window.location.hash = p), path);
        await page.locator(ready).first().waitFor({ state: 'attached' });
        await check(path);
      }
      expect(found).toEqual({});
      expect(problems.consoleErrors).toEqual([]);
      expect(problems.foreignRequests).toEqual([]);
      await context.close();
    }
    // twenty pages checked, in two colour schemes: more than the default 30 s on a loaded machine
  }, 120_000);

  it('follows the system colour scheme', async () => {
    const bg = async (colorScheme: 'light' | 'dark') => {
      const { page, context } = await tb.newPage({ colorScheme });
      await page.goto(`${hangar.url}/`);
      await page.locator('main h1').waitFor();
      const color = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      await context.close();
      return color;
    };
    expect(await bg('light')).toBe('rgb(246, 247, 249)');
    expect(await bg('dark')).toBe('rgb(13, 17, 23)');
  });

  it('works at a phone width (360 px): nothing wider than the screen, the table as cards', async () => {
    const { page, context } = await open('/instances', { width: 360 });
    await page.locator('tr[data-instance="cache"]').waitFor();
    expect(await noHorizontalScroll(page)).toBe(true);
    expect(await page.locator('table.instances thead').boundingBox()).toMatchObject({ height: expect.any(Number) });
    expect(await page.locator('tr[data-instance="cache"] td[data-label="Zone"]').isVisible()).toBe(true);
    for (const path of ['/instances/cache', '/instances/cache/acls', '/instances/new', '/keys']) {
      await page.evaluate((p) => (window.location.hash = p), path);
      await page.locator('main h1').waitFor();
      await page.waitForTimeout(300);
      expect(await noHorizontalScroll(page), path).toBe(true);
    }
    await context.close();
  });

  it('API keys: creates a pair whose pass key is shown once and logs in; deletes it after asking', async () => {
    const { page, context } = await open('/keys');
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const box = page.getByRole('region', { name: 'New key pair' });
    await box.waitFor();
    expect(await box.textContent()).toContain('shown this once');
    const userKey = (await box.locator('.copy-value', { hasText: 'User key' }).locator('code').textContent())!;
    const passKey = (await box.locator('.copy-value', { hasText: 'Pass key' }).locator('code').textContent())!;
    expect(passKey).toMatch(/^[0-9a-f]{48}$/);
    const basic = Buffer.from(`${userKey}:${passKey}`).toString('base64');
    expect((await fetch(`${hangar.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } })).status).toBe(200);
    await page.locator(`tr[data-key="${userKey}"]`).waitFor();

    // shown once: gone after a reload, the list has no secret
    await page.reload();
    await page.locator(`tr[data-key="${userKey}"]`).waitFor();
    expect(await page.locator('main').textContent()).not.toContain(passKey);

    await page.locator(`tr[data-key="${userKey}"]`).getByRole('button', { name: /Delete/ }).click();
    await page.getByRole('dialog', { name: 'Delete this API key?' }).getByRole('button', { name: 'Delete key' }).click();
    await page.getByRole('status').filter({ hasText: `Key ${userKey} is deleted` }).waitFor();
    expect(await page.locator(`tr[data-key="${userKey}"]`).count()).toBe(0);
    expect((await fetch(`${hangar.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` } })).status).toBe(401);
    await context.close();
  });

  it('MongoDB users: adds one with roles, replaces its roles, changes its password, drops it after asking', async () => {
    const { page, context } = await open('/instances/docs/users');
    const users = () => hangar.get(`/v2/mongodb/${mongoId}/databases/shop/users`).then((r) => r.body.data);
    await page.getByLabel('Database', { exact: true }).fill('shop');
    await page.getByRole('button', { name: 'Show users' }).click();
    await page.getByText('No user in database shop.').waitFor();
    const add = page.locator('form.add-user');
    await add.getByLabel('User name').fill('app');
    await add.getByLabel('Password').fill('s3cret-passw0rd');
    await add.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('status').filter({ hasText: 'app is added to shop.' }).waitFor();
    expect(await users()).toEqual([{ name: 'app', roles: [{ role: 'readWrite', db: 'shop' }] }]);

    const user = page.getByRole('article', { name: 'User app' });
    expect(await user.textContent()).toContain('Saving replaces the whole role list');
    await user.getByRole('button', { name: 'Add a role' }).click();
    await user.getByLabel('Role').nth(1).selectOption('dbAdmin');
    await user.getByRole('button', { name: /Remove role readWrite/ }).click();
    await user.getByRole('button', { name: 'Replace roles' }).click();
    await page.getByRole('status').filter({ hasText: 'app now has exactly 1 role(s).' }).waitFor();
    expect(await users()).toEqual([{ name: 'app', roles: [{ role: 'dbAdmin', db: 'shop' }] }]);

    await user.getByLabel('New password for app').fill('another-passw0rd');
    await user.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'The password of app is changed.' }).waitFor();

    await page.getByRole('article', { name: 'User app' }).getByRole('button', { name: 'Drop app' }).click();
    await page.getByRole('dialog', { name: 'Drop user app?' }).getByRole('button', { name: 'Drop app' }).click();
    await page.getByText('No user in database shop.').waitFor();
    expect(await users()).toEqual([]);
    await context.close();
  });

  it('logs out: the token is revoked and forgotten, and the pages ask for a login again', async () => {
    const { page, context } = await open('/instances');
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('hangar.session')!).token as string);
    expect((await fetch(`${hangar.url}/v2/whoami/`, { headers: { 'x-auth-token': token } })).status).toBe(200);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.session'))).toBeNull();
    await expect.poll(async () => (await fetch(`${hangar.url}/v2/whoami/`, { headers: { 'x-auth-token': token } })).status).toBe(401);
    await page.evaluate(() => (window.location.hash = '/keys'));
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    await context.close();
  });

  it('says what failed and what to do: an ACL the API refuses shows its message next to the field', async () => {
    const { page, context } = await open('/instances/cache/acls');
    await page.getByLabel('Address or range').fill('300.1.2.3');
    await page.getByLabel('Description', { exact: true }).fill('bad');
    await page.getByRole('button', { name: 'Add ACL' }).click();
    const error = page.locator('.field.invalid .field-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/cidr_mask/);
    await context.close();
  });
});
