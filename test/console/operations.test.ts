/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, LOGIN, PASSWORD, enginesAvailable } from '../e2e/helpers/hangar-process.js';
import { type GatedRedisServer, gatedRedisServer } from './helpers/gated-redis.js';
import { type TestBrowser, chromiumAvailable, logIn, startBrowser } from './helpers/browser.js';

/**
 * Operations and live state in the console, in a real browser against the built hangar on the
 * local runtime (real redis-server behind the HAProxy edge). To see an operation while it runs,
 * whatever the speed of the machine, redis-server is started through a gate: a script that
 * runs the real redis-server once the test opens the gate (a file), so a build is held in its
 * RUNNING state for as long as the test needs.
 */
describe.runIf(enginesAvailable() && chromiumAvailable())('operations and live state in the console (local runtime)', () => {
  let hangar: HangarProcess;
  let tb: TestBrowser;
  let gate: GatedRedisServer | undefined;

  const closeGate = () => gate!.close();
  const openGate = () => gate!.open();

  beforeAll(async () => {
    gate = gatedRedisServer('hangar-console-gate-');
    hangar = await HangarProcess.start({ env: { HANGAR_REDIS_SERVER_BIN: gate.bin } });
    tb = await startBrowser(hangar.url);
  }, 60_000);

  afterAll(async () => {
    gate?.open();
    await tb?.close();
    await hangar?.destroy();
    gate?.remove();
  });

  /** A new page (its own session), logged in, at `path`; the requests it makes are kept. */
  async function open(path: string) {
    const { page, problems, context } = await tb.newPage();
    const requests: Request[] = [];
    page.on('request', (r) => requests.push(r));
    await page.goto(`${hangar.url}/#${path}`);
    await page.getByRole('heading', { level: 1, name: 'Log in to hangar' }).waitFor();
    await logIn(page, LOGIN, PASSWORD);
    await page.waitForFunction(
      () => sessionStorage.getItem('hangar.session') !== null && document.querySelector('main h1')?.textContent !== 'Log in to hangar',
    );
    return { page, problems, context, requests };
  }

  const mark = (page: Page, value: number) => page.evaluate((v) => ((window as unknown as { marker: number }).marker = v), value);
  const marker = (page: Page) => page.evaluate(() => (window as unknown as { marker?: number }).marker);
  // the refusals a test provokes (the 409 of a cancel, the 404 of a deleted instance) are logged by the browser itself
  const unexpected = (errors: string[]) =>
    errors.filter((e) => !/^Failed to load resource: the server responded with a status of (404|409) /.test(e));
  const streamed = (requests: Request[]) => requests.filter((r) => new URL(r.url()).pathname === '/v2/events/stream');

  it("shows a create's operation appear, run and turn SUCCEEDED without a reload, from the event stream; Cancel shows the API's refusal", async () => {
    const { page, context, requests, problems } = await open('/operations');
    await page.getByRole('heading', { level: 1, name: 'Operations' }).waitFor();
    await page.locator('[data-live="stream"]').waitFor();
    await mark(page, 1);

    closeGate();
    const res = await hangar.post('/v2/instances/', hangar.redisBody('held'));
    expect(res.status).toBe(200);
    const id = res.headers.get('x-operation-id')!;
    const card = page.locator(`[data-operation="${id}"]`);
    // it appears, and runs: the build holds at the start of the primary
    await card.waitFor();
    await expect.poll(() => card.getAttribute('data-state'), { timeout: 20_000 }).toBe('RUNNING');
    await card.locator('[data-step="create:building"]').waitFor({ state: 'attached', timeout: 20_000 });
    expect(await card.getByRole('heading').textContent()).toBe('create of held: redis 500 MB in US-Dallas');
    // the steps, with their times, on demand
    await card.getByText(/^Steps \(\d+\)$/).click();
    expect(await card.locator('[data-step="recorded"] time').textContent()).toMatch(/^\d\d:\d\d:\d\d$/);

    // its build has started: the API refuses the cancel, and the page says why
    await card.getByRole('button', { name: /^Cancel create/ }).click();
    const refusal = card.getByRole('alert').filter({ hasText: 'Not cancelled' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('its build has started');
    expect((await hangar.get(`/v2/operations/${id}/`)).body.data.state).toBe('RUNNING');

    openGate();
    await expect.poll(() => card.getAttribute('data-state'), { timeout: 30_000 }).toBe('SUCCEEDED');
    // finished: a row saying what, the outcome, when and how long, without a progress bar
    expect(await card.evaluate((el) => el.tagName)).toBe('TR');
    expect(await card.locator('[data-label="Outcome"]').textContent()).toBe('SUCCEEDED');
    expect(await card.locator('[data-label="Took"]').textContent()).toMatch(/ (ms|s)$/);
    expect(await card.locator('progress').count()).toBe(0);
    expect(await marker(page)).toBe(1);
    expect((await hangar.get('/v2/instances/held/')).body.data.state).toBe('ACTIVE');
    // the changes came on the stream, which the page opened once
    expect(streamed(requests).length).toBe(1);
    expect(streamed(requests)[0]!.headers().accept).toBe('text/event-stream');
    expect(unexpected(problems.consoleErrors)).toEqual([]);
    expect(problems.foreignRequests).toEqual([]);
    await context.close();
  });

  it('shows an instance change state live on the table and on its page, through the stream', async () => {
    const { page, context, requests } = await open('/instances');
    await page.getByRole('heading', { level: 1, name: 'Instances' }).waitFor();
    await page.locator('[data-live="stream"]').waitFor();
    expect(await page.locator('table.instances caption').textContent()).toContain('changes appear as they happen');
    await mark(page, 2);

    closeGate();
    expect((await hangar.post('/v2/instances/', hangar.redisBody('watched'))).status).toBe(200);
    const row = page.locator('tr[data-instance="watched"]');
    await row.waitFor();
    await row.locator('.badge', { hasText: 'BUILDING' }).waitFor({ timeout: 20_000 });
    await row.getByRole('link', { name: 'watched' }).click();
    await page.getByRole('heading', { level: 1, name: 'watched' }).waitFor();
    // the page shows the operation under way on the instance, started elsewhere
    const card = page.locator('.instance-operations [data-operation]');
    await expect.poll(() => card.getAttribute('data-state'), { timeout: 20_000 }).toBe('RUNNING');
    openGate();
    await page.locator('.title-row .badge', { hasText: 'ACTIVE' }).waitFor({ timeout: 30_000 });
    await expect.poll(() => card.getAttribute('data-state')).toBe('SUCCEEDED');
    expect(await marker(page)).toBe(2);
    expect(streamed(requests).length).toBe(1);
    await context.close();
  });

  it('follows a create, a resize and a delete started from the console through their operations', async () => {
    const { page, context } = await open('/instances/new');
    await page.getByLabel('Plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('Zone').selectOption('US-Dallas');
    await page.getByLabel('Service').selectOption('redis');
    await page.getByLabel('Plan').selectOption('500');
    await page.getByLabel('Name').fill('console-made');
    closeGate();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'console-made' }).waitFor();
    const create = page.locator('.instance-operations [data-operation]').first();
    await expect.poll(() => create.getAttribute('data-state'), { timeout: 20_000 }).toBe('RUNNING');
    expect(await create.locator('.op-what').textContent()).toMatch(/^create of console-made/);
    openGate();
    await expect.poll(() => create.getAttribute('data-state'), { timeout: 30_000 }).toBe('SUCCEEDED');
    // finished, it says so for a moment, then fades into the instance's operations: nothing to dismiss
    await expect.poll(() => page.locator('.instance-operations [data-operation]').count(), { timeout: 10_000 }).toBe(0);
    expect(await page.getByRole('button', { name: /Dismiss/ }).count()).toBe(0);

    await page.getByRole('navigation', { name: 'Instance sections' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('New plan').locator('option').first().waitFor({ state: 'attached' });
    await page.getByLabel('New plan').selectOption('1000');
    await page.getByRole('button', { name: 'Resize' }).click();
    const resize = page.locator('.instance-operations [data-operation]').filter({ hasText: 'resize of console-made' });
    await resize.waitFor();
    await page.getByRole('status').filter({ hasText: 'Resized: the instance now has 1,000 MB.' }).waitFor({ timeout: 30_000 });
    expect(await resize.getAttribute('data-state')).toBe('SUCCEEDED');
    expect(await resize.locator('.op-what').textContent()).toBe('resize of console-made: 500 MB → 1,000 MB');
    expect((await hangar.get('/v2/instances/console-made/')).body.data.plan).toBe(1000);

    await page.getByLabel('Type console-made to confirm').fill('console-made');
    await page.getByRole('button', { name: 'Delete instance' }).click();
    await page.getByRole('status').filter({ hasText: 'Instance console-made is deleted.' }).waitFor({ timeout: 30_000 });
    expect((await hangar.get('/v2/instances/console-made/')).status).toBe(404);

    // the operations page filtered by the instance, then by kind and state, keeps the filters in the URL
    await page.goto(`${hangar.url}/#/operations?instance=console-made`);
    await page.getByRole('heading', { level: 1, name: 'Operations' }).waitFor();
    const cards = page.locator('main [data-operation]');
    await expect
      .poll(() => cards.evaluateAll((els) => els.map((e) => e.querySelector('.op-what')!.textContent!.split(' ')[0])))
      .toEqual(['delete', 'resize', 'create']);
    await page.getByLabel('Kind').selectOption('resize');
    await expect.poll(() => page.evaluate(() => window.location.hash)).toBe('#/operations?instance=console-made&kind=resize');
    await expect.poll(() => cards.count()).toBe(1);
    await page.getByLabel('State').selectOption('FAILED');
    await page.getByText('No operation matches the filters.').waitFor();
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await expect.poll(() => cards.count()).toBeGreaterThanOrEqual(5);
    // one operation's own page: its facts and every step
    await cards.filter({ hasText: 'resize of console-made' }).getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'resize of console-made: 500 MB → 1,000 MB' }).waitFor();
    expect(await page.locator('dl.facts-list').textContent()).toContain(LOGIN);
    expect(await page.locator('.op-steps li').count()).toBeGreaterThanOrEqual(3);
    await context.close();
  });

  it('falls back to reading again when the stream fails, and goes back to it once it answers', async () => {
    const { page, problems, context } = await tb.newPage();
    let refused = 0;
    await page.route('**/v2/events/stream**', (route) => {
      refused++;
      return route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ message: 'the stream is down for this test' }),
      });
    });
    await page.goto(`${hangar.url}/#/instances`);
    await logIn(page, LOGIN, PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Instances' }).waitFor();
    await page.locator('[data-live="polling"]').waitFor();
    expect(await page.locator('table.instances caption').textContent()).toContain('read again every 2 s');
    await mark(page, 3);
    closeGate();
    expect((await hangar.post('/v2/instances/', hangar.redisBody('polled'))).status).toBe(200);
    const row = page.locator('tr[data-instance="polled"]');
    await row.locator('.badge', { hasText: 'BUILDING' }).waitFor({ timeout: 20_000 });
    openGate();
    await row.locator('.badge', { hasText: 'ACTIVE' }).waitFor({ timeout: 30_000 });
    expect(await marker(page)).toBe(3);
    expect(refused).toBeGreaterThanOrEqual(1);

    await page.unroute('**/v2/events/stream**');
    await page.locator('[data-live="stream"]').waitFor({ timeout: 40_000 });
    expect(problems.foreignRequests).toEqual([]);
    await context.close();
  });
});
