import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The version of hangar, from the package.json above this file (src/, dist/src/ and the bundle alike). */
export function hangarVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'hangar' && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}
