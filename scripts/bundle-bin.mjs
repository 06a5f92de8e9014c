// Bundles the hangar binary (dist/src/cli/bin.js, as tsc emits it) into one file in its place,
// with hangar's own modules and the two pure-ESM libraries of many small files it loads at every
// start (kysely, typebox: some 630 files) inside. Node loads one file instead of some 800: the
// start of `hangar serve` spends about a third of the time it did in loading modules. Packages
// with native parts or of CommonJS stay external, loaded from node_modules as before. What is
// imported lazily (the Kubernetes runtime, S3 storage, each command) becomes a chunk beside it.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'src', 'cli');
const INSIDE = /^(kysely|typebox)(\/|$)/;

rmSync(join(cli, 'chunks'), { recursive: true, force: true });
await build({
  input: join(cli, 'bin.js'),
  platform: 'node',
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !INSIDE.test(id),
  logLevel: 'warn',
  output: { dir: cli, format: 'esm', entryFileNames: 'bin.js', chunkFileNames: 'chunks/[name]-[hash].js' },
});
