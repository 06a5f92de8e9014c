import { describe, expect, it } from 'vitest';
import { patternProblem, ruleProblem, takePattern, userRules, usernameProblem } from './redis-users.js';

describe('ruleProblem', () => {
  it('allows grantable categories, commands and subcommands, and taking anything away', () => {
    for (const rule of [
      '+@read',
      '+@write',
      '+@pubsub',
      '+get',
      '+client|setname',
      '-@admin',
      '-@dangerous',
      '-@all',
      '-config',
      '-flushall',
      '+GET',
    ]) {
      expect(ruleProblem(rule), rule).toBeUndefined();
    }
  });

  it('refuses the commands hangar keeps for itself, naming them', () => {
    for (const [rule, named] of [
      ['+config', 'CONFIG'],
      ['+config|get', 'CONFIG'],
      ['+acl', 'ACL'],
      ['+replicaof', 'REPLICAOF'],
      ['+slaveof', 'SLAVEOF'],
      ['+shutdown', 'SHUTDOWN'],
      ['+debug', 'DEBUG'],
      ['+module', 'MODULE'],
      ['+monitor', 'MONITOR'],
      ['+client', 'CLIENT'],
      ['+client|kill', 'CLIENT'],
    ] as const) {
      expect(ruleProblem(rule)?.problem, rule).toContain(named);
    }
  });

  it('refuses granting admin, dangerous or all, unknown categories and what is not a rule', () => {
    for (const rule of ['+@admin', '+@dangerous', '+@all', '+@nothing', 'get', '~app:*', '+get bad', '']) {
      expect(ruleProblem(rule), rule).toBeDefined();
    }
    expect(ruleProblem('+@admin')?.allowed).toContain('@read');
  });
});

describe('names and patterns', () => {
  it('keeps default and hangar for hangar, and names simple', () => {
    expect(usernameProblem('app')).toBeUndefined();
    expect(usernameProblem('app.reports-2')).toBeUndefined();
    for (const name of ['default', 'hangar', '', 'has space', '-x', 'x'.repeat(65)]) expect(usernameProblem(name), name).toBeDefined();
  });

  it('takes glob patterns without spaces or quotes', () => {
    expect(patternProblem('app:*')).toBeUndefined();
    expect(patternProblem('user:[0-9]?')).toBeUndefined();
    for (const p of ['', 'a b', 'a"b', 'x'.repeat(257)]) expect(patternProblem(p), p).toBeDefined();
  });
});

describe('userRules', () => {
  it('resets, enables, hashes every password, then keys, channels, commands, and -@admin last', () => {
    const rules = userRules({
      name: 'app',
      passwords: ['new-password', 'old-password'],
      keys: ['app:*'],
      channels: [],
      commands: ['+@READ', '-keys'],
    });
    expect(rules[0]).toBe('reset');
    expect(rules[1]).toBe('on');
    expect(rules.slice(2, 4).every((r) => /^#[0-9a-f]{64}$/.test(r))).toBe(true);
    expect(rules.slice(4)).toEqual(['~app:*', '+@read', '-keys', '-@admin']);
  });
});

describe('takePattern', () => {
  it('takes a pattern written as Redis writes it without its mark, and says so; the rules then mark it once', () => {
    const key = takePattern('keys', '~app:*');
    expect(key).toEqual({
      pattern: 'app:*',
      note: '"~app:*" was stored as "app:*": hangar writes the "~" of Redis\'s key patterns itself',
    });
    const channel = takePattern('channels', '&news.*');
    expect(channel).toMatchObject({ pattern: 'news.*', note: expect.stringContaining('"&" of Redis\'s channel patterns') });
    const rules = userRules({ name: 'u', passwords: [], keys: ['app:*'], channels: ['news.*'], commands: [] });
    expect(rules).toContain('~app:*');
    expect(rules).toContain('&news.*');
    expect(rules.some((r) => r.startsWith('~~') || r.startsWith('&&'))).toBe(false);
  });

  it("takes a plain pattern as it is, and the other kind's mark as part of the pattern", () => {
    expect(takePattern('keys', 'app:*')).toEqual({ pattern: 'app:*' });
    expect(takePattern('keys', '&odd')).toEqual({ pattern: '&odd' });
    expect(takePattern('channels', '~odd')).toEqual({ pattern: '~odd' });
  });

  it('refuses key permissions and a mark alone, which would match nothing', () => {
    for (const given of ['%R~app:*', '%W~app:*', '%RW~app:*', '%rw~x']) {
      expect(takePattern('keys', given), given).toEqual({ problem: expect.stringContaining('is a key permission') });
    }
    expect(takePattern('keys', '~')).toEqual({ problem: expect.stringContaining('the mark "~" alone') });
    expect(takePattern('channels', '&')).toEqual({ problem: expect.stringContaining('the mark "&" alone') });
  });
});
