import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * The console's policy: everything from hangar itself, no inline script or style, no frames,
 * no plugins. `connect-src 'self'` keeps the page talking to this hangar's /v2 only.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Where the built console's files are served; hashed file names are cached for a year. */
export const CONSOLE_ASSETS_PREFIX = '/console/assets/';

/** `dist/console` of this package, found from this file (src/ and dist/src/ alike). */
export function consoleDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) {
      const built = join(dir, 'dist', 'console');
      return existsSync(join(built, 'index.html')) ? built : undefined;
    }
    dir = dirname(dir);
  }
  return undefined;
}

function consoleHeaders(reply: FastifyReply): void {
  void reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin');
}

/**
 * The web console (`src/console`, built by `npm run build` into `dist/console`): its page at `/`
 * and `/console/`, never cached (it names the current assets), and its assets, whose names carry
 * a content hash, cached for good. The console's answers alone carry its Content-Security-Policy;
 * /v2 answers are left as they are. Without a built console nothing is registered (a 404, as any
 * unknown path).
 */
export async function consoleRoutes(app: FastifyInstance, dir: string | undefined = consoleDir()): Promise<void> {
  if (dir === undefined) return;
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (_req, reply) => consoleHeaders(reply));
    // Read each time (it is small): a rebuild while hangar runs gives the page of the new assets.
    const sendPage = async (_req: unknown, reply: FastifyReply) =>
      reply
        .header('cache-control', 'no-cache')
        .type('text/html; charset=utf-8')
        .send(await readFile(join(dir, 'index.html')));
    for (const url of ['/', '/console/']) scope.get(url, { schema: { hide: true } }, sendPage);
    await scope.register(fastifyStatic, {
      root: join(dir, 'assets'),
      prefix: CONSOLE_ASSETS_PREFIX,
      index: false,
      list: false,
      dotfiles: 'deny',
      decorateReply: false,
      maxAge: 365 * 24 * 3600 * 1000,
      immutable: true,
      schemaHide: true,
    });
  });
}
