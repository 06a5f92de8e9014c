import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVENTS_LOCK } from '../event-repository.js';

const folder = dirname(fileURLToPath(import.meta.url));
const migrations = readdirSync(folder).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));

/** Every module a file names: static imports and re-exports, dynamic imports, `import x = require(...)`. */
function importsOf(text: string): string[] {
  const found = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
    ...text.matchAll(/\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  return found.map((m) => m[1]!);
}

describe('migrations', () => {
  it('are all listed here (the check below reads them)', () => {
    expect(migrations).toContain('index.ts');
    expect(migrations.length).toBeGreaterThan(5);
  });

  it.each(migrations)('%s imports nothing but kysely and the files of this folder (frozen: no live code)', (file) => {
    const text = readFileSync(join(folder, file), 'utf8');
    for (const name of importsOf(text)) {
      const allowed = name === 'kysely' || (name.startsWith('./') && !name.slice(2).includes('/'));
      expect(allowed, `${file} imports ${name}`).toBe(true);
    }
  });

  it('the check finds an import from outside the folder', () => {
    expect(importsOf("import { EVENTS_LOCK } from '../event-repository.js';\nimport type { Kysely } from 'kysely';")).toEqual([
      '../event-repository.js',
      'kysely',
    ]);
    expect(importsOf("import {\n  a,\n  b,\n} from '../x.js';\nconst m = await import('../y.js');")).toEqual(['../x.js', '../y.js']);
  });

  it('the events lock of 2026-11-26T1200 is the one the live code takes (both must lock the same key)', () => {
    const text = readFileSync(join(folder, '2026-11-26T1200-events-lock-first.ts'), 'utf8');
    expect(/const EVENTS_LOCK = (\d+);/.exec(text)?.[1]).toBe(String(EVENTS_LOCK));
  });
});
