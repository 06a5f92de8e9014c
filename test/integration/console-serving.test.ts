import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/**
 * How hangar serves the web console (built into dist/console by `npm run build`): the page at
 * `/` and `/console/`, never cached; hashed assets cached for a year; a strict CSP on the
 * console's answers only, the /v2 answers unchanged.
 */
describe('the web console, as served', () => {
  let th: TestHangar;
  let alice: Account;
  let page: string;

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    page = await (await fetch(`${th.url}/`)).text();
  });
  afterAll(() => th.close());

  it('serves the same page at / and /console/ (with or without the slash), revalidated each time', async () => {
    for (const path of ['/', '/console/', '/console']) {
      const res = await fetch(`${th.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toBe(page);
    }
    expect(page).toContain('<div id="root"></div>');
  });

  it('has no inline script or style: only hashed files of its own', async () => {
    const assets = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const a of assets) expect(a).toMatch(/^\/console\/assets\/[\w.-]+-[\w-]{8}\.(js|css|svg)$/);
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page).not.toMatch(/<style|style="/);
  });

  it('caches the hashed assets for a year, immutable, with the console policy', async () => {
    const assets = [...page.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    for (const a of assets) {
      const res = await fetch(`${th.url}${a}`);
      expect(res.status, a).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('sends a strict Content-Security-Policy with the page: everything from hangar, no inline code, no frames', async () => {
    const res = await fetch(`${th.url}/`);
    const csp = res.headers.get('content-security-policy')!;
    for (const d of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ]) {
      expect(csp).toContain(d);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('leaves the /v2 answers as they were: JSON, no console policy', async () => {
    for (const res of [
      await fetch(`${th.url}/v2/instances/`, { headers: { 'x-auth-token': (alice.auth as { token: string }).token } }),
      await fetch(`${th.url}/v2/instances/`),
    ]) {
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('content-security-policy')).toBeNull();
      expect(res.headers.get('x-frame-options')).toBeNull();
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('serves nothing outside its assets: no directory listing, no traversal, no dot files', async () => {
    for (const path of ['/console/assets/', '/console/assets/%2e%2e/%2e%2e/package.json', '/console/assets/.env', '/console/index.html']) {
      const res = await fetch(`${th.url}${path}`);
      expect([403, 404], path).toContain(res.status);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
  });

  it('answers an unknown asset with the JSON 404 of every unknown path', async () => {
    const res = await fetch(`${th.url}/console/assets/nothing-12345678.js`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
  });
});
