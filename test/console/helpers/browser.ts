/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';

/** Debian's chromium (`apt-get install chromium`); Playwright's own browsers cannot be downloaded here. */
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-quic',
  '--no-first-run',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--remote-debugging-address=127.0.0.1',
  '--remote-debugging-port=0',
];

/**
 * Whether the browser tests can run. In CI a missing chromium fails the run (.ci/run installs
 * it); elsewhere the tests are left out with a message saying what to install.
 */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `the console tests need chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_BIN)`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

export interface TestBrowser {
  readonly browser: Browser;
  readonly pid: number;
  /** A fresh context (its own storage) with a page, at `viewport`. */
  newPage(opts?: { width?: number; height?: number; colorScheme?: 'light' | 'dark' }): Promise<{ context: BrowserContext; page: Page; problems: Problems }>;
  /** Closes the browser, ends its process group, removes its profile. */
  close(): Promise<void>;
}

/** What a page did wrong: console errors (a CSP violation among them) and requests to other origins. */
export interface Problems {
  readonly consoleErrors: string[];
  readonly foreignRequests: string[];
}

/**
 * Starts chromium with a fresh --user-data-dir, in a process group of its own, and connects to
 * it over the DevTools protocol. `origin` is where the pages may send requests.
 */
export async function startBrowser(origin: string): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'hangar-chromium-'));
  const child: ChildProcess = spawn(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let browser: Browser;
  try {
    const ws = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`chromium did not start within 20 s:\n${stderr}`)), 20_000);
      child.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString('utf8');
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`chromium exited before listening:\n${stderr}`));
      });
    });
    browser = await chromium.connectOverCDP(ws);
  } catch (err) {
    killGroup(child);
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  const pid = child.pid!;
  return {
    browser,
    pid,
    async newPage(opts = {}) {
      const width = opts.width ?? 1280;
      const phone = width < 500;
      const context = await browser.newContext({
        viewport: { width, height: opts.height ?? 800 },
        // a phone: overlay scrollbars, touch
        isMobile: phone,
        hasTouch: phone,
        colorScheme: opts.colorScheme ?? 'light',
        reducedMotion: 'reduce',
      });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const problems: Problems = { consoleErrors: [], foreignRequests: [] };
      page.on('console', (m) => {
        if (m.type() === 'error') problems.consoleErrors.push(m.text());
      });
      page.on('pageerror', (e) => problems.consoleErrors.push(`uncaught: ${e.message}`));
      page.on('request', (r) => {
        const url = r.url();
        if (!url.startsWith(`${origin}/`) && !url.startsWith('data:') && url !== 'about:blank') problems.foreignRequests.push(url);
      });
      return { context, page, problems };
    },
    async close() {
      await browser.close().catch(() => undefined);
      killGroup(child);
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Ends chromium and its helpers (renderers, zygote): the process group of the pid we started. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: string[];
}

/**
 * Runs axe-core in the page (evaluated through the DevTools protocol, so the page's CSP stays
 * as it is) and returns the serious and critical violations.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'], runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Logs in through the login form. */
export async function logIn(page: Page, login: string, password: string): Promise<void> {
  await page.getByLabel('Login', { exact: true }).fill(login);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
