#!/usr/bin/env node
// Builds hangar (`npm run build`) only when what the build reads changed since the last build:
// `npm start` then starts in about a second instead of spending half a minute on a build of the
// same sources (and `npm ci`, which builds through `prepare`, is followed by no second build).
//
// The build writes a stamp: a fingerprint (path, size, modification time) of its inputs, taken
// when it begins (`--begin`; a file changed while it runs makes the next start build again) and
// kept when it ends (`--end`; a build that fails leaves no stamp, so the next start builds).
//
//   node scripts/build-if-changed.mjs           builds when the stamp is missing or differs
//   node scripts/build-if-changed.mjs --check   exit 0 when the build is up to date, 1 when not
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
/** Folders and files the build reads (tsconfig.build.json: src and bench; the console's own build is in src/console). */
const INPUT_DIRS = ['src', 'bench'];
const INPUT_FILES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/bundle-bin.mjs',
  'scripts/build-if-changed.mjs',
];
const STAMP = join(root, 'dist', '.build-stamp');
const PENDING = `${STAMP}.pending`;
/** What the build leaves that `npm start` runs. */
const OUTPUT = join(root, 'dist', 'src', 'cli', 'bin.js');

/** `path size mtime` of each input, sorted, hashed: any edit, addition or removal changes it. */
function fingerprint() {
  const lines = [];
  const add = (path) => {
    const s = statSync(path, { throwIfNoEntry: false });
    if (s?.isFile()) lines.push(`${relative(root, path)} ${s.size} ${s.mtimeMs}`);
  };
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      // tests are no part of the build (tsconfig.build.json excludes them)
      else if (!e.name.endsWith('.test.ts')) add(path);
    }
  };
  for (const d of INPUT_DIRS) if (existsSync(join(root, d))) walk(join(root, d));
  for (const f of INPUT_FILES) add(join(root, f));
  return createHash('sha256').update(lines.sort().join('\n')).digest('hex');
}

const upToDate = () => existsSync(OUTPUT) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === fingerprint();

const mode = process.argv[2];
if (mode === '--begin') {
  rmSync(STAMP, { force: true });
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(PENDING, `${fingerprint()}\n`);
} else if (mode === '--end') {
  if (existsSync(PENDING)) renameSync(PENDING, STAMP);
} else if (mode === '--check') {
  process.exit(upToDate() ? 0 : 1);
} else if (mode === undefined) {
  if (upToDate()) process.exit(0);
  console.error('hangar: the sources changed since the last build (or it never ran): npm run build');
  const npm = process.env.npm_execpath;
  const run = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(run.status ?? 1);
} else {
  console.error(`usage: node scripts/build-if-changed.mjs [--check | --begin | --end], not ${mode}`);
  process.exit(2);
}
