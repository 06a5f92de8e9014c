/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser)
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Server, type Socket, connect, createServer } from 'node:net';
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
];
const DEVTOOLS = ['--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0'];

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
  newPage(opts?: {
    width?: number;
    height?: number;
    colorScheme?: 'light' | 'dark';
    /** The browser's time zone (an IANA name); the machine's when left out. */
    timezoneId?: string;
  }): Promise<{ context: BrowserContext; page: Page; problems: Problems }>;
  /** Closes the browser, ends its process group, removes its profile. */
  close(): Promise<void>;
}

/** What a page did wrong: console errors (a CSP violation among them) and requests to other origins. */
export interface Problems {
  readonly consoleErrors: string[];
  readonly foreignRequests: string[];
}

let isolation: boolean | undefined;

/**
 * Whether chromium can have a network namespace of its own (`unshare --net`, which needs root).
 * Chromium fails every request still waiting for a connection with ERR_NETWORK_CHANGED when it sees
 * an address come or go on any interface of the machine, and other tests add and remove interfaces
 * (the Kubernetes testbed's pods each bring a veth with an address). In CI the namespace is
 * required; elsewhere the browser runs in the machine's network, with a warning.
 * HANGAR_TEST_BROWSER_NETNS=0 runs it in the machine's network anyway.
 */
function networkIsolationAvailable(): boolean {
  if (process.env.HANGAR_TEST_BROWSER_NETNS === '0') return false;
  if (isolation === undefined) {
    isolation = spawnSync('unshare', ['--net', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' }).status === 0;
    if (!isolation) {
      const message =
        'the console tests run chromium in a network namespace of its own (unshare --net and ip, as root), out of reach of network changes made elsewhere on the machine';
      if (process.env.CI === 'true') throw new Error(`${message}: unshare --net failed`);
      console.warn(`${message}; not possible here, so it runs in the machine's network`);
    }
  }
  return isolation;
}

/** A TCP or Unix socket server whose every connection is spliced to a new connection made by `to`. */
async function forwarder(
  to: () => Socket,
  ...listenArgs: [path: string] | [port: number, host: string]
): Promise<{ server: Server; close(): void }> {
  const open = new Set<Socket>();
  const server = createServer((a) => {
    const b = to();
    for (const s of [a, b]) {
      open.add(s);
      s.on('error', () => undefined).on('close', () => {
        open.delete(s);
        a.destroy();
        b.destroy();
      });
    }
    a.pipe(b);
    b.pipe(a);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(...(listenArgs as [string]), resolve);
  });
  return {
    server,
    close() {
      server.close();
      for (const s of open) s.destroy();
    },
  };
}

/**
 * Starts chromium with a fresh --user-data-dir, in a process group of its own, and connects to
 * it over the DevTools protocol. `origin` is where the pages may send requests. Where it can, the
 * browser runs in a network namespace of its own (browser-netns.mjs) that reaches `origin`, and
 * only it, through a Unix socket.
 */
export async function startBrowser(origin: string): Promise<TestBrowser> {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-chromium-'));
  const profile = join(dir, 'profile');
  mkdirSync(profile);
  // chromium's own temporary files (org.chromium.Chromium.*) go in there too, removed with it
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);
  const crossings: { close(): void }[] = [];
  const isolated = networkIsolationAvailable();
  let command = [CHROMIUM, ...FLAGS, ...DEVTOOLS];
  if (isolated) {
    const app = new URL(origin);
    if (app.hostname !== '127.0.0.1') throw new Error(`the browser's namespace reaches 127.0.0.1 only, not ${origin}`);
    crossings.push(await forwarder(() => connect(Number(app.port), app.hostname), join(dir, 'app.sock')));
    // the launcher adds the DevTools flags itself
    command = ['unshare', '--net', process.execPath, join(import.meta.dirname, 'browser-netns.mjs'), app.port, dir, CHROMIUM, ...FLAGS];
  }
  const child: ChildProcess = spawn(command[0]!, [...command.slice(1), `--user-data-dir=${profile}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env: { ...process.env, TMPDIR: tmp },
  });
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cleanUp = () => {
    for (const c of crossings) c.close();
    rmSync(dir, { recursive: true, force: true });
  };
  let browser: Browser;
  try {
    let ws = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`chromium did not start within 20 s:\n${stderr}`)), 20_000);
      child.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString('utf8');
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (m && (!isolated || stderr.includes('browser-netns ready'))) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`chromium exited before listening:\n${stderr}`));
      });
    });
    if (isolated) {
      // DevTools listens inside the namespace: served here on a port of this machine
      const cdp = await forwarder(() => connect(join(dir, 'cdp.sock')), 0, '127.0.0.1');
      crossings.push(cdp);
      const url = new URL(ws);
      url.port = String((cdp.server.address() as { port: number }).port);
      ws = url.toString();
    }
    browser = await chromium.connectOverCDP(ws);
  } catch (err) {
    killGroup(child);
    cleanUp();
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
        ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
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
      cleanUp();
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
  // loaded once per document: the console moves between pages without loading a new one
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: (
            ctx: unknown,
            opts: unknown,
          ) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }>;
        };
      }
    ).axe;
    const r = await axe.run(document, {
      resultTypes: ['violations'],
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
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
