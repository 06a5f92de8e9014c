/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { createHmac } from 'node:crypto';
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD } from '../e2e/helpers/hangar-process.js';
import { type TestBrowser, chromiumAvailable, logIn, seriousViolations, startBrowser } from './helpers/browser.js';

/**
 * The console's pages in a real browser against the built hangar on the emulated runtime
 * (every service available, no engine needed): accessibility (axe-core), phone width, dark
 * mode, API keys, MongoDB users, operations (paging), webhooks (with a receiver of the test's own
 * on this machine, which hangar is allowed to send plain HTTP to).
 */
describe.runIf(chromiumAvailable())('the web console pages', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  let mongoId = '';
  let receiver: Server;
  let receiverUrl = '';
  let axeWebhook = '';
  /** What the receiver answers, and what it was sent. */
  const hooks = { status: 200, received: [] as { path: string; headers: IncomingHttpHeaders; body: string }[] };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        hooks.received.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(hooks.status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    hangar = await HangarProcess.start({
      runtime: 'emulated',
      env: { HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    // registered first, so that the instances below give it deliveries
    const hook = await hangar.post('/v2/webhooks/', {
      url: `${receiverUrl}/axe`,
      kinds: ['instance'],
      description: 'for the accessibility check',
    });
    expect(hook.status).toBe(200);
    axeWebhook = hook.body.data.id;
    await hangar.createRedis('cache', { version: '7.2.4', acls: [{ cidr_mask: '10.0.0.0/8', description: 'office' }] });
    const mongo = await hangar.post('/v2/instances/', {
      name: 'docs',
      service: 'mongodb',
      type: 'mongodb_replica_set',
      plan: 5,
      version: '3.4.2',
      zone: 'US-West',
    });
    expect(mongo.status).toBe(200);
    mongoId = (await hangar.waitFor('docs', (r) => r?.state === 'ACTIVE')).id;
    tb = await startBrowser(hangar.url);
  }, 60_000);

  afterAll(async () => {
    await tb?.close();
    await hangar?.destroy();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  /** A new page (its own session storage), logged in, at `path`. */
  async function open(path: string, opts: { width?: number; colorScheme?: 'light' | 'dark' } = {}) {
    const { page, problems, context } = await tb.newPage(opts);
    await page.goto(`${hangar.url}/#${path}`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    // logged in: a session kept, and the page asked for in place of the login page
    await page.waitForFunction(
      () => sessionStorage.getItem('hangar.session') !== null && document.querySelector('main h1')?.textContent !== 'Log in to hangar',
    );
    return { page, problems, context };
  }

  const noHorizontalScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

  // one case per colour scheme: fourteen pages and the login each, checked by axe-core, which
  // takes seconds a page on a loaded 2-core machine
  it.each(['light', 'dark'] as const)(
    'has no serious or critical accessibility violation on any page (axe-core), %s',
    async (colorScheme) => {
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
        await page.evaluate(() =>
          document.querySelector('main')!.append(Object.assign(document.createElement('input'), { id: 'unlabelled' })),
        );
        expect((await seriousViolations(page)).map((v) => v.id)).toContain('label');
        await page.evaluate(() => document.getElementById('unlabelled')!.remove());
      }
      await logIn(page, LOGIN, PASSWORD);
      await page.getByRole('heading', { level: 1, name: 'Instances' }).waitFor();
      const operationId = (await hangar.get('/v2/operations/?kind=create&limit=1')).body.data[0].id as string;
      const pages: [string, string][] = [
        ['/instances', 'tr[data-instance="cache"]'],
        ['/instances/new', 'form.create select[name="plan"] option'],
        ['/instances/cache', '[data-metric="maxClients"]'],
        ['/instances/cache/acls', 'tr[data-acl]'],
        ['/instances/cache/users', 'form.add-redis-user'],
        ['/instances/cache/config', 'form.redis-config input[name="maxmemory-policy"]'],
        ['/instances/cache/settings', 'select[name="new_plan"] option'],
        ['/instances/docs/users', 'text=Add a user to admin'],
        ['/keys', 'text=No API key yet.'],
        ['/events', 'tbody tr'],
        ['/operations', 'main [data-operation]'],
        [`/operations/${operationId}`, '.op-steps li'],
        ['/webhooks', `tr[data-webhook="${axeWebhook}"]`],
        [`/webhooks/${axeWebhook}`, 'tr[data-delivery]'],
        ['/backups', 'select[name="instance"] option:text-is("cache")'],
        ['/backups/cache', 'form.policy select[name="schedule"]'],
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
    },
    120_000,
  );

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
    for (const path of [
      '/instances/cache',
      '/instances/cache/acls',
      '/instances/new',
      '/keys',
      '/operations',
      '/webhooks',
      `/webhooks/${axeWebhook}`,
    ]) {
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

    await page
      .locator(`tr[data-key="${userKey}"]`)
      .getByRole('button', { name: /Delete/ })
      .click();
    await page.getByRole('dialog', { name: 'Delete this API key?' }).getByRole('button', { name: 'Delete key' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Key ${userKey} is deleted` })
      .waitFor();
    // the status can come before the list is drawn again without the row
    await expect.poll(() => page.locator(`tr[data-key="${userKey}"]`).count()).toBe(0);
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
    // in the form's words: the label, not the API's field name
    expect(await error.textContent()).toMatch(/^Address or range must be/);
    await context.close();
  });

  it('operations: a page at a time, newest first, the next with the cursor, none twice', async () => {
    for (let i = 1; i <= 22; i++)
      expect((await hangar.post('/v2/instances/cache/acls/', { cidr_mask: `10.1.0.${i}`, description: `paging ${i}` })).status).toBe(200);
    const { page, context } = await open('/operations?kind=acl.add');
    const cards = page.locator('main [data-operation]');
    await expect.poll(() => cards.count()).toBe(20);
    const names = () => cards.evaluateAll((els) => els.map((e) => e.querySelector('.op-what')!.textContent!));
    expect((await names())[0]).toBe('acl.add of cache: 10.1.0.22');
    await page.getByRole('button', { name: 'Older operations' }).click();
    await expect.poll(() => cards.count()).toBe(22);
    const all = await names();
    expect(new Set(all).size).toBe(22);
    expect(all.at(-1)).toBe('acl.add of cache: 10.1.0.1');
    expect(await page.getByRole('button', { name: 'Older operations' }).count()).toBe(0);
    expect(await page.getByLabel('Kind').inputValue()).toBe('acl.add');
    await context.close();
  });

  it('webhooks: registers one whose secret is shown once and signs its deliveries; shows attempts and errors; rotates the secret; deletes after asking', async () => {
    const { page, context } = await open('/webhooks');
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    const form = page.locator('form.add-webhook');
    // a refused URL: the API's message next to the field
    await form.getByLabel('URL').fill('ftp://example.com/hook');
    await form.getByRole('button', { name: 'Register webhook' }).click();
    await form.locator('.field.invalid .field-error').waitFor();

    hooks.status = 500;
    await form.getByLabel('URL').fill(`${receiverUrl}/hook`);
    await form.getByLabel('Description').fill('deploy bot');
    await form.getByLabel('Every operation event (operation)').check();
    await form.getByRole('button', { name: 'Register webhook' }).click();
    const box = page.getByRole('region', { name: 'Webhook secret' });
    await box.waitFor();
    expect(await box.textContent()).toContain('shown this once');
    const secret = (await box.locator('.copy-value', { hasText: 'Secret' }).locator('code').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    const listed = (await hangar.get('/v2/webhooks/')).body.data.find((w: { url: string }) => w.url === `${receiverUrl}/hook`);
    expect(listed).toMatchObject({ kinds: ['operation'], description: 'deploy bot' });
    expect(JSON.stringify(listed)).not.toContain(secret);
    const row = page.locator(`tr[data-webhook="${listed.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('operation');

    // shown once: gone after a reload
    await page.reload();
    await row.waitFor();
    expect(await page.locator('main').textContent()).not.toContain(secret);

    // an operation: the receiver is sent it, signed with that secret; it answers 500 at first
    expect((await hangar.post('/v2/instances/cache/acls/', { cidr_mask: '10.2.0.1', description: 'for the webhook' })).status).toBe(200);
    await expect.poll(() => hooks.received.filter((r) => r.path === '/hook').length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    const first = hooks.received.find((r) => r.path === '/hook')!;
    const [t, ...v1] = String(first.headers['x-hangar-signature']).split(',');
    expect(v1).toContain(
      `v1=${createHmac('sha256', secret)
        .update(`${t!.slice(2)}.${first.body}`)
        .digest('hex')}`,
    );

    await row.getByRole('link', { name: /Deliveries/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Deliveries' }).waitFor();
    const failing = page
      .locator('tr[data-delivery][data-state="PENDING"]')
      .filter({ has: page.locator('[data-field="last_status"]', { hasText: '500' }) })
      .first();
    await failing.waitFor({ timeout: 15_000 });
    expect(Number(await failing.locator('[data-field="attempts"]').textContent())).toBeGreaterThanOrEqual(1);
    expect(await failing.locator('[data-field="last_error"]').textContent()).toMatch(/500/);
    // the receiver recovers: the retries deliver, and the page shows it without being asked
    const event = await failing.getAttribute('data-event');
    hooks.status = 200;
    const delivered = page.locator(`tr[data-delivery][data-event="${event}"]`);
    await expect.poll(() => delivered.getAttribute('data-state'), { timeout: 30_000 }).toBe('DELIVERED');
    expect(await delivered.locator('[data-field="last_status"]').textContent()).toBe('200');
    expect(Number(await delivered.locator('[data-field="attempts"]').textContent())).toBeGreaterThanOrEqual(2);

    // a new secret, shown once; the old one signs for a while too
    await page.getByRole('link', { name: 'Webhooks' }).first().click();
    await row.getByRole('button', { name: /Rotate secret/ }).click();
    await page.getByRole('dialog', { name: 'Make a new secret?' }).getByRole('button', { name: 'Rotate secret' }).click();
    await box.waitFor();
    const rotated = (await box.locator('.copy-value', { hasText: 'Secret' }).locator('code').textContent())!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await row.getByText(/old secret signs until/).waitFor();

    await row.getByRole('button', { name: /Delete/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this webhook?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: /Delete/ }).click();
    await dialog.getByRole('button', { name: 'Delete webhook' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `The webhook to ${receiverUrl}/hook is deleted` })
      .waitFor();
    await expect.poll(() => row.count()).toBe(0);
    expect((await hangar.get(`/v2/webhooks/${listed.id}/`)).status).toBe(404);
    await context.close();
  });
});
