import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start` builds only when the sources changed since the last build: scripts/build-if-changed.mjs
 * in a project of its own whose build counts its runs (the real build takes half a minute).
 */
describe('npm start builds only what changed (scripts/build-if-changed.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-build-stamp-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const builds = () => readFileSync(join(dir, 'builds.log'), 'utf8').split('\n').filter(Boolean).length;
  const start = () => spawnSync(process.execPath, ['scripts/build-if-changed.mjs'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  const check = () => spawnSync(process.execPath, ['scripts/build-if-changed.mjs', '--check'], { cwd: dir }).status;
  const later = (path: string, s: number) => utimesSync(path, new Date(Date.now() + s * 1000), new Date(Date.now() + s * 1000));

  it('builds the first time, then not until a source is edited, added or removed; a failed build is built again', () => {
    mkdirSync(join(dir, 'scripts'));
    mkdirSync(join(dir, 'src'));
    copyFileSync(resolve('scripts/build-if-changed.mjs'), join(dir, 'scripts', 'build-if-changed.mjs'));
    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 1;\n');
    writeFileSync(join(dir, 'src', 'a.test.ts'), '// a test\n');
    writeFileSync(join(dir, 'builds.log'), '');
    // the build as package.json has it: --begin, the compilers, --end (FAIL makes it fail between)
    writeFileSync(
      join(dir, 'build.mjs'),
      `import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
appendFileSync('builds.log', 'built\\n');
if (existsSync('FAIL')) process.exit(1);
mkdirSync('dist/src/cli', { recursive: true });
writeFileSync('dist/src/cli/bin.js', '');
`,
    );
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'p',
        private: true,
        scripts: { build: 'node scripts/build-if-changed.mjs --begin && node build.mjs && node scripts/build-if-changed.mjs --end' },
      }),
    );

    expect(check()).toBe(1);
    const first = start();
    expect(first.status, first.stderr).toBe(0);
    expect(builds()).toBe(1);
    expect(check()).toBe(0);
    expect(start().status).toBe(0);
    expect(builds()).toBe(1);

    later(join(dir, 'src', 'a.ts'), 5);
    expect(check()).toBe(1);
    start();
    expect(builds()).toBe(2);
    start();
    expect(builds()).toBe(2);

    // tests are no part of the build
    later(join(dir, 'src', 'a.test.ts'), 10);
    start();
    expect(builds()).toBe(2);

    writeFileSync(join(dir, 'src', 'b.ts'), 'export const b = 2;\n');
    start();
    expect(builds()).toBe(3);
    rmSync(join(dir, 'src', 'b.ts'));
    start();
    expect(builds()).toBe(4);
    later(join(dir, 'package.json'), 15);
    start();
    expect(builds()).toBe(5);

    // a build that fails leaves no stamp: the next start builds again
    writeFileSync(join(dir, 'FAIL'), '');
    later(join(dir, 'src', 'a.ts'), 20);
    expect(start().status).not.toBe(0);
    expect(builds()).toBe(6);
    rmSync(join(dir, 'FAIL'));
    start();
    expect(builds()).toBe(7);
    start();
    expect(builds()).toBe(7);

    // the binary gone: built again
    rmSync(join(dir, 'dist', 'src', 'cli', 'bin.js'));
    start();
    expect(builds()).toBe(8);
  }, 120_000);
});
