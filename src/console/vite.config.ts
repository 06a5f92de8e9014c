import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The web console's build: `src/console` -> `dist/console` (index.html, assets/ with content
 * hashes in their names), served by hangar at `/` and `/console/`. No inline script or style
 * ends up in the page, so it runs under the strict Content-Security-Policy hangar sends with it.
 */
export default defineConfig({
  root: here,
  base: '/console/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    // Everything as files of its own: a data: URI or an inline script would need a looser policy.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
