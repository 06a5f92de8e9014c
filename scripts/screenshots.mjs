#!/usr/bin/env node
// Screenshots of the web console's main pages into docs/ (for the README), taken in Debian's
// chromium against a hangar started here on the local runtime (redis-server and HAProxy must be
// installed): login, instances, create, an instance with its chart, ACLs, API keys, operations,
// webhooks and their deliveries, backups, a phone width and dark mode. Run after `npm run build` (or `npm run screenshots`, which builds first).
// Everything it starts is stopped at the end, by PID; its temp dirs are removed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createClient } from 'redis';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'docs');
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const LOGIN = 'me@example.com';
const PASSWORD = 'correct-horse-battery';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts a process and resolves with it once `pattern` appears on its stderr. */
function start(cmd, args, env, pattern, what) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${err}`)), 30_000);
    child.stderr.on('data', (c) => {
      err += c;
      const m = pattern.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m[1] });
      }
    });
    child.once('exit', () => reject(new Error(`${what} exited:\n${err}`)));
  });
}

/** Processes whose command line names `dir` (engines and the edge hangar left running). */
function pidsUnder(dir) {
  const pids = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(dir)) pids.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return pids;
}

const dataDir = mkdtempSync(join(tmpdir(), 'hangar-shots-'));
const profile = mkdtempSync(join(tmpdir(), 'hangar-shots-chromium-'));
let hangar;
let browser;
let chrome;
try {
  hangar = await start(
    process.execPath,
    [join(root, 'dist/src/cli/bin.js'), 'serve', '--runtime', 'local', '--port', '0', '--data-dir', dataDir, '--port-range', '26000-26099'],
    // webhooks to this machine (nothing listens on port 9: its deliveries show failed attempts)
    {
      HANGAR_BOOTSTRAP_LOGIN: LOGIN,
      HANGAR_BOOTSTRAP_PASSWORD: PASSWORD,
      HANGAR_LOG_LEVEL: 'warn',
      HANGAR_WEBHOOK_ALLOW_HTTP: 'true',
      HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true',
    },
    /hangar serving on (https?:\/\/[^/\s]+)/,
    'hangar',
  );
  const url = hangar.match;
  const basic = `Basic ${Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64')}`;
  const api = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: basic, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const version = (await api('GET', '/v2/zones/')).find((z) => z.name === 'US-Dallas').services.find((s) => s.service === 'redis')
    .versions[0];
  const hook = await api('POST', '/v2/webhooks/', {
    url: 'http://127.0.0.1:9/hangar',
    kinds: ['operation', 'instance.state'],
    description: 'deploy bot',
  });
  const make = (name, plan, zone, acls = []) =>
    api('POST', '/v2/instances/', { name, service: 'redis', type: 'redis_ha_instance', plan, version, zone, acls });
  await make('sessions', 1000, 'US-Dallas', [
    { cidr_mask: '127.0.0.1', description: 'this machine' },
    { cidr_mask: '10.20.0.0/16', description: 'app servers' },
  ]);
  await make('cache', 500, 'US-Dallas');
  await make('rate-limits', 2500, 'US-Chicago');
  let sessions;
  for (let i = 0; i < 100 && sessions?.state !== 'ACTIVE'; i++) {
    await sleep(200);
    sessions = await api('GET', '/v2/instances/sessions/');
  }
  await api('POST', '/v2/keys/');

  chrome = await start(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-quic',
      '--no-first-run',
      '--disable-sync',
      '--hide-scrollbars',
      `--user-data-dir=${profile}`,
      '--remote-debugging-port=0',
      'about:blank',
    ],
    {},
    /DevTools listening on (ws:\/\/\S+)/,
    'chromium',
  );
  browser = await chromium.connectOverCDP(chrome.match);
  const shoot = async (page, name) => {
    await sleep(300);
    await page.screenshot({ path: join(out, `console-${name}.png`), fullPage: true });
    console.log(`docs/console-${name}.png`);
  };
  const open = async (opts = {}) => {
    const context = await browser.newContext({
      viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
      colorScheme: opts.colorScheme ?? 'light',
      isMobile: (opts.width ?? 1280) < 500,
      deviceScaleFactor: 1,
    });
    return context.newPage();
  };
  const logIn = async (page) => {
    await page.getByLabel('Login', { exact: true }).fill(LOGIN);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
  };

  const page = await open();
  await page.goto(`${url}/`);
  await page.getByLabel('Login', { exact: true }).fill(LOGIN);
  await shoot(page, 'login');
  await logIn(page);
  await page.locator('tr[data-instance="rate-limits"] .badge', { hasText: 'ACTIVE' }).waitFor({ timeout: 30_000 });
  await shoot(page, 'instances');
  await page.evaluate(() => (window.location.hash = '/instances/new'));
  await page.locator('select[name="plan"] option').first().waitFor({ state: 'attached' });
  await page.getByLabel('Name').fill('queue');
  await shoot(page, 'create');

  // Some traffic, so that the chart moves: keys written while the page samples.
  const port = Number(/:(\d+)$/.exec(sessions.public_connect_string)[1]);
  const redis = createClient({ socket: { host: '127.0.0.1', port }, password: sessions.password, disableClientInfo: true });
  redis.on('error', () => {});
  await redis.connect();
  const extra = [];
  await page.evaluate(() => (window.location.hash = '/instances/sessions'));
  await page.locator('[data-metric="maxClients"]').waitFor();
  for (let i = 0; i < 12; i++) {
    await redis.set(`blob:${i}`, 'x'.repeat(15_000_000));
    if (i % 3 === 0) {
      const c = createClient({ socket: { host: '127.0.0.1', port }, password: sessions.password, disableClientInfo: true });
      c.on('error', () => {});
      await c.connect();
      extra.push(c);
    }
    await sleep(2000);
  }
  await page.getByRole('button', { name: 'Show password' }).click();
  await shoot(page, 'instance');
  for (const c of [redis, ...extra]) c.destroy();

  await page.evaluate(() => (window.location.hash = '/instances/sessions/acls'));
  await page.locator('tr[data-acl]').first().waitFor();
  await shoot(page, 'acls');
  await page.evaluate(() => (window.location.hash = '/keys'));
  await page.getByRole('button', { name: 'Create API key' }).click();
  await page.getByRole('region', { name: 'New key pair' }).waitFor();
  await shoot(page, 'keys');

  // a resize, so that the operations show more than creations
  await api('POST', '/v2/redis/cache/resize/', { new_plan: 1000 });
  await page.evaluate(() => (window.location.hash = '/operations'));
  await page.locator('main [data-operation][data-state="SUCCEEDED"]', { hasText: 'resize of cache' }).waitFor({ timeout: 30_000 });
  await shoot(page, 'operations');
  await page.evaluate(() => (window.location.hash = '/webhooks'));
  await page.getByLabel('URL').fill('http://127.0.0.1:9/audit');
  await page.getByLabel('Description').fill('audit trail');
  await page.getByRole('button', { name: 'Register webhook' }).click();
  await page.getByRole('region', { name: 'Webhook secret' }).waitFor();
  await shoot(page, 'webhooks');
  await page.evaluate((id) => (window.location.hash = `/webhooks/${id}`), hook.id);
  await page.locator('tr[data-delivery]').first().waitFor();
  await shoot(page, 'deliveries');

  // backups: two taken now (one after the other: one at a time per instance), and a daily policy
  for (let i = 0; i < 2; i++) {
    const b = await api('POST', '/v2/instances/sessions/backups/');
    for (let j = 0; j < 300 && (await api('GET', `/v2/instances/sessions/backups/${b.id}/`)).state !== 'COMPLETED'; j++) await sleep(200);
  }
  await api('PUT', '/v2/instances/sessions/backup-policy/', { schedule: 'daily', daily_at: '03:00', keep_last: 7, keep_days: 30 });
  await page.evaluate(() => (window.location.hash = '/backups/sessions'));
  await page.locator('tr[data-backup][data-state="COMPLETED"]').nth(1).waitFor({ timeout: 30_000 });
  await page.locator('form.policy select[name="schedule"]').waitFor();
  await shoot(page, 'backups');

  const phone = await open({ width: 360, height: 740 });
  await phone.goto(`${url}/#/instances`);
  await logIn(phone);
  await phone.locator('tr[data-instance="cache"]').waitFor();
  await shoot(phone, 'instances-phone');

  const dark = await open({ colorScheme: 'dark' });
  await dark.goto(`${url}/#/instances/sessions`);
  await logIn(dark);
  await dark.locator('figure.chart canvas').waitFor();
  await sleep(5000);
  await shoot(dark, 'instance-dark');

  for (const name of ['sessions', 'cache', 'rate-limits']) await api('DELETE', `/v2/instances/${name}/`);
  for (
    let i = 0;
    i < 50 && (await fetch(`${url}/v2/instances/`, { headers: { authorization: basic } }).then((r) => r.json())).data.length > 0;
    i++
  )
    await sleep(200);
} finally {
  await browser?.close().catch(() => {});
  for (const p of [chrome?.child, hangar?.child]) {
    if (p && p.exitCode === null) {
      try {
        process.kill(-p.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
  }
  await sleep(1500);
  // engines and the edge outlive hangar by design: stop those of this data dir
  for (const pid of pidsUnder(dataDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
}
