/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD } from '../e2e/helpers/hangar-process.js';
import { eventually } from '../e2e/helpers/redis.js';
import { type Problems, type TestBrowser, chromiumAvailable, logIn, startBrowser } from './helpers/browser.js';

/**
 * TLS in the web console, in a real browser against the built hangar on the emulated runtime:
 * the rediss:// addresses and the command over TLS on the overview, the CA download, the mode
 * switch (with mutual TLS) and the rotation on the TLS tab, each checked against the API.
 */
describe.runIf(chromiumAvailable())('the web console: TLS of an instance', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  let page: Page;
  let problems: Problems;
  let rec: any;

  beforeAll(async () => {
    hangar = await HangarProcess.start({ runtime: 'emulated' });
    rec = await hangar.createRedis('cache', { version: '7.2.4', acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
    const docs = await hangar.post('/v2/instances/', {
      name: 'docs',
      service: 'mongodb',
      type: 'mongodb_singledb',
      plan: 1,
      version: '3.4.2',
      zone: 'US-West',
    });
    expect(docs.status, JSON.stringify(docs.body)).toBe(200);
    tb = await startBrowser(hangar.url);
    ({ page, problems } = await tb.newPage());
    await page.goto(`${hangar.url}/#/instances/cache`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'cache', exact: true }).waitFor();
  }, 60_000);

  afterAll(async () => {
    await tb?.close();
    await hangar?.destroy();
  });

  const tab = (name: string) => page.getByRole('navigation', { name: 'Instance sections' }).getByRole('link', { name, exact: true });
  const value = (label: string) => page.locator('.copy-value').filter({ has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) });

  /** The operation last started on `cache` of `kind`, once it succeeded. */
  async function succeeded(kind: string): Promise<any> {
    let op: any;
    await eventually(
      `${kind} to succeed`,
      async () => {
        op = (await hangar.get(`/v2/operations/?instance=cache&kind=${kind}&limit=1`)).body.data[0];
        return op?.state === 'SUCCEEDED';
      },
      15_000,
    );
    return op;
  }

  it('shows the TLS addresses beside the plain ones, the command over TLS, and the CA to download', async () => {
    expect(rec.tls).toBe('preferred');
    await value('Connect string').waitFor();
    expect(await value('Connect string').locator('code').textContent()).toBe(rec.connect_string);
    expect(await value('TLS connect string').locator('code').textContent()).toBe(rec.public_tls_connect_string);
    expect(await value('Private network, TLS').locator('code').textContent()).toBe(rec.servicenet_tls_connect_string);
    expect(rec.public_tls_connect_string).toMatch(/^rediss:\/\//);
    await page.getByRole('button', { name: 'Show redis-cli command' }).click();
    const { port } = new URL(rec.public_tls_connect_string);
    expect(await value('redis-cli command').locator('code').textContent()).toMatch(
      new RegExp(` -p ${port} --tls --cacert hangar-ca\\.pem$`),
    );

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      value('CA certificate').getByRole('link', { name: 'Download the CA certificate (hangar-ca.pem)' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('hangar-ca.pem');
    const saved = readFileSync((await download.path())!, 'utf8');
    expect(saved).toBe(await (await fetch(`${hangar.url}/v2/tls/ca`)).text());
    expect(saved).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('shows the certificate on the TLS tab, and rotates it: the serial shown is the new one the API gives', async () => {
    await tab('TLS').click();
    await page.getByRole('heading', { level: 2, name: 'TLS mode' }).waitFor();
    const before = (await hangar.get('/v2/instances/cache/tls/')).body.data;
    await expect.poll(() => page.locator('[data-serial]').textContent()).toBe(before.serial);
    expect(await page.getByRole('radio', { name: /^Preferred/ }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Rotate the certificate' }).click();
    await page.getByRole('status').filter({ hasText: 'New certificate' }).waitFor();
    const after = (await hangar.get('/v2/instances/cache/tls/')).body.data;
    expect(after.serial).not.toBe(before.serial);
    await expect.poll(() => page.locator('[data-serial]').textContent()).toBe(after.serial);
    expect(await page.getByRole('status').filter({ hasText: 'New certificate' }).textContent()).toContain(`(was ${before.serial})`);
    expect((await succeeded('tls.rotate')).detail).toEqual({ previous_serial: before.serial, serial: after.serial });
  });

  it('switches to required with client certificates; the overview then names the rediss:// address as the connect string', async () => {
    const apply = page.getByRole('button', { name: 'Apply', exact: true });
    expect(await apply.isDisabled()).toBe(true);
    await page.getByRole('radio', { name: /^Required/ }).check();
    await page.getByRole('checkbox', { name: /^Ask clients for a certificate/ }).check();
    await apply.click();
    await page.getByRole('status').filter({ hasText: 'TLS is required, with client certificates' }).waitFor();
    expect((await succeeded('tls.mode')).detail).toEqual({ from: 'preferred', to: 'required', tls_client_auth: true });
    const required = (await hangar.get('/v2/instances/cache/')).body.data;
    expect(required).toMatchObject({ tls: 'required', tls_client_auth: true, connect_string: rec.public_tls_connect_string });
    // the record came back on the page: nothing left to apply
    await expect.poll(() => apply.isDisabled()).toBe(true);

    await tab('Overview').click();
    await value('Connect string').waitFor();
    await expect.poll(() => value('Connect string').locator('code').textContent()).toBe(rec.public_tls_connect_string);
    // the TLS addresses are the connect strings now: not named twice
    expect(await value('TLS connect string').count()).toBe(0);
    await page.getByText('TLS is required: clients connect with rediss://').waitFor();

    // off: no TLS address, and mutual TLS goes with it
    await tab('TLS').click();
    await page.getByRole('radio', { name: /^Off/ }).check();
    expect(await page.getByRole('checkbox', { name: /^Ask clients for a certificate/ }).isDisabled()).toBe(true);
    await apply.click();
    await page.getByRole('status').filter({ hasText: 'TLS is off' }).waitFor();
    await eventually('the record says off', async () => (await hangar.get('/v2/instances/cache/')).body.data.tls === 'off', 15_000);
    const off = (await hangar.get('/v2/instances/cache/')).body.data;
    expect(off).toMatchObject({ tls_client_auth: false, connect_string: rec.connect_string });
    expect(off.tls_connect_string).toBeUndefined();
  });

  it('offers no TLS tab where the record has no mode (mongodb)', async () => {
    await hangar.waitFor('docs', (r) => r?.state === 'ACTIVE');
    await page.evaluate(() => (window.location.hash = '/instances/docs'));
    await page.getByRole('heading', { level: 1, name: 'docs', exact: true }).waitFor();
    await tab('Overview').waitFor();
    expect(await tab('TLS').count()).toBe(0);
    expect(problems.consoleErrors).toEqual([]);
  });
});
