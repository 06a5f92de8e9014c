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

  it('names, before its walkthrough starts, every program the walkthrough runs (jq among them)', () => {
    const walkthrough = readme.slice(readme.indexOf('## Walkthrough'), readme.indexOf('## Web console'));
    const intro = walkthrough.slice(0, walkthrough.indexOf('```'));
    // the programs at the head of each command and of each stage of its pipes, shell words left out
    const SHELL = new Set(['export', 'for', 'do', 'done', 'echo', 'sleep']);
    const programs = new Set<string>();
    for (const line of walkthrough.split('\n').filter((l) => l.startsWith('$ '))) {
      const code = line
        .slice(2)
        .replace(/'[^']*'/g, "''")
        .replace(/"[^"]*"/g, '""');
      for (const stage of code.split(/[|;]|\$\(/)) {
        const word = stage.trim().split(/\s+/)[0] ?? '';
        if (/^[a-z][\w.-]*$/.test(word) && !SHELL.has(word)) programs.add(word);
      }
    }
    expect([...programs].sort()).toEqual(['curl', 'jq', 'python3', 'redis-cli']);
    for (const p of programs) expect(intro, `the walkthrough runs ${p} without naming it first`).toContain(`\`${p}\``);
  });

  it('walks through one Redis instance: every command reaches the port its create answered, as one run printed it', () => {
    const redis = readme.slice(readme.indexOf('## Walkthrough'), readme.indexOf('MongoDB needs `mongod`/`mongos`'));
    const port = /"connect_string": "redis:\/\/127\.0\.0\.1:(\d+)"/.exec(redis)?.[1];
    expect(port).toBeDefined();
    const used = [...redis.matchAll(/-p (\d+)|127\.0\.0\.1",(\d+)\)|"port":(\d+)|redis:\/\/127\.0\.0\.1:(\d+)"\}/g)].map((m) =>
      m.slice(1).find(Boolean),
    );
    expect(used.length).toBeGreaterThan(5);
    expect(new Set(used)).toEqual(new Set([port]));
    // redis-cli with a refused password says so on stderr, then runs the command unauthenticated
    expect(redis).toMatch(/AUTH failed: WRONGPASS [^\n]*\nNOAUTH Authentication required\.\n/);
  });
});
