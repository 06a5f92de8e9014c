import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Operating hangar'));

describe('README', () => {
  it('starts with the two commands a newcomer runs', () => {
    const head = readme.split('\n').slice(0, 25).join('\n');
    expect(head).toContain('npm ci && npm start');
    expect(head).toContain('npm test');
  });

  it.each(SETTINGS.map((s) => [s.env, s] as const))('documents %s with its flag and default', (env, s) => {
    const row = table.split('\n').find((l) => l.includes(`\`${env}\``));
    expect(row, `no row for ${env}`).toBeDefined();
    expect(row).toContain(`\`--${s.flag}\``);
    if (s.default !== undefined) expect(row).toContain(`\`${s.default}\``);
  });
});
