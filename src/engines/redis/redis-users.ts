import { createHash } from 'node:crypto';
import type { EngineUser } from '../../domain/units.js';

/**
 * Application users of a Redis instance, as Redis ACL users: a name, passwords, key patterns
 * (`~app:*`), channel patterns (`&news.*`) and command rules (`+@read`, `-keys`). hangar keeps
 * the administrative commands for itself: no rule can grant them, and every user's rules end
 * with `-@admin` whatever they say.
 */

/** The user hangar administers a Redis engine as (CONFIG, INFO, SHUTDOWN); clients never get it. */
export const REDIS_ADMIN_USER = 'hangar';

/** Categories a rule may grant (`+@read`). `-@x` may remove any category. */
export const GRANTABLE_CATEGORIES = [
  'keyspace',
  'read',
  'write',
  'set',
  'sortedset',
  'list',
  'hash',
  'string',
  'bitmap',
  'hyperloglog',
  'geo',
  'stream',
  'pubsub',
  'fast',
  'slow',
  'blocking',
  'connection',
  'transaction',
  'scripting',
] as const;

/** Categories that exist but cannot be granted: they hold commands hangar keeps for itself. */
const RESERVED_CATEGORIES = ['admin', 'dangerous', 'all'] as const;

/**
 * The commands (and subcommands) of Redis 7's `@admin` category: replication, configuration,
 * users, persistence, shutdown, debugging, modules, cluster and client administration. A rule
 * granting one of them, or the whole command of one of these subcommands, is refused.
 */
export const RESERVED_COMMANDS: readonly string[] = [
  'acl',
  'bgrewriteaof',
  'bgsave',
  'client|kill',
  'client|list',
  'client|no-evict',
  'client|pause',
  'client|unblock',
  'client|unpause',
  'cluster',
  'config',
  'debug',
  'failover',
  'lastsave',
  'latency',
  'module',
  'monitor',
  'pfdebug',
  'pfselftest',
  'psync',
  'replconf',
  'replicaof',
  'role',
  'save',
  'shutdown',
  'slaveof',
  'slowlog',
  'sync',
];

/** The users no tenant may create, change or delete: Redis's `default` (the instance password) and hangar's own. */
export const RESERVED_USERS: readonly string[] = ['default', REDIS_ADMIN_USER];

const RULE = /^([+-])(@[a-z]+|[a-z][a-z0-9_-]*(\|[a-z0-9_-]+)?)$/;

/** Why a command rule is refused (naming the command or category), or undefined when it may be used. */
export function ruleProblem(rule: string): { problem: string; allowed?: readonly string[] } | undefined {
  const m = RULE.exec(rule.toLowerCase());
  if (!m)
    return { problem: `${JSON.stringify(rule)} is not a command rule: +@category, -@category, +command, -command or +command|subcommand` };
  const [, sign, what] = m as unknown as [string, '+' | '-', string];
  if (what.startsWith('@')) {
    const category = what.slice(1);
    const known = [...GRANTABLE_CATEGORIES, ...RESERVED_CATEGORIES] as readonly string[];
    if (!known.includes(category))
      return { problem: `${JSON.stringify(rule)}: no command category @${category}`, allowed: GRANTABLE_CATEGORIES.map((c) => `@${c}`) };
    if (sign === '+' && !(GRANTABLE_CATEGORIES as readonly string[]).includes(category)) {
      return {
        problem: `${JSON.stringify(rule)}: category @${category} holds commands hangar keeps for itself and cannot be granted`,
        allowed: GRANTABLE_CATEGORIES.map((c) => `@${c}`),
      };
    }
    return undefined;
  }
  if (sign === '-') return undefined;
  const [command] = what.split('|') as [string];
  const reserved = RESERVED_COMMANDS.find((r) => r === what || r === command || r.startsWith(`${what}|`));
  if (reserved) {
    const which = reserved === command ? command.toUpperCase() : `${command.toUpperCase()} (${reserved.toUpperCase().replace('|', ' ')})`;
    return { problem: `${JSON.stringify(rule)}: ${which} is a command hangar keeps for itself and cannot be granted` };
  }
  return undefined;
}

/** How Redis marks each kind of pattern in a user's rules (`~app:*`, `&news.*`): hangar writes the mark itself. */
const PATTERN_MARK = { keys: '~', channels: '&' } as const;

/**
 * A key or channel pattern as the API takes it: the pattern alone, without the mark Redis
 * writes before it in a user's rules, which hangar adds (`~` for keys, `&` for channels). A
 * pattern given the way Redis writes it (`~app:*`) would be marked twice (`~~app:*`) and match
 * only keys that begin with `~`: it is taken without its mark, with a note saying so. Key
 * permissions (`%R~app:*`, `%W~...`, `%RW~...`) are refused, since they would never match as
 * patterns: hangar grants read and write through the commands. Returns the pattern to store,
 * or why it is refused.
 */
export function takePattern(kind: 'keys' | 'channels', given: string): { pattern: string; note?: string } | { problem: string } {
  const mark = PATTERN_MARK[kind];
  if (kind === 'keys' && /^%[RW]*~/i.test(given)) {
    return {
      problem: `is a key permission (%R~, %W~, %RW~), which hangar does not take: give the pattern alone (${JSON.stringify(given.replace(/^%[RW]*~/i, ''))}) and grant reads or writes with "commands" (+@read, +@write)`,
    };
  }
  if (!given.startsWith(mark)) return { pattern: given };
  const pattern = given.slice(1);
  if (pattern.length === 0)
    return { problem: `is the mark "${mark}" alone: give the pattern it marks, e.g. ${kind === 'keys' ? 'app:*' : 'news.*'}` };
  return {
    pattern,
    note: `${JSON.stringify(given)} was stored as ${JSON.stringify(pattern)}: hangar writes the "${mark}" of Redis's ${kind === 'keys' ? 'key' : 'channel'} patterns itself`,
  };
}

/** Why a key or channel pattern is refused, or undefined. */
export function patternProblem(pattern: string): string | undefined {
  if (pattern.length === 0 || pattern.length > 256) return 'must be 1 to 256 characters';
  if (/[\s\x00-\x1f\x7f"]/.test(pattern)) return 'must not hold spaces, quotes or control characters';
  return undefined;
}

/** Why a user name is refused, or undefined. */
export function usernameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name))
    return 'must be 1 to 64 ASCII letters (A-Z, a-z), digits, "_", "." or "-", starting with a letter or digit';
  if (RESERVED_USERS.includes(name)) return `"${name}" is a user hangar keeps for itself (the instance password is the default user's)`;
  return undefined;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * The rules of `ACL SETUSER <name> ...` (and of a redis.conf `user` line) that make the user
 * exactly as asked: reset first, then on, its passwords (as SHA-256, never in clear), keys,
 * channels and commands, with `-@admin` last. One command, so the change is atomic.
 */
export function userRules(user: EngineUser): string[] {
  return [
    'reset',
    'on',
    ...user.passwords.map((p) => `#${sha256(p)}`),
    ...user.keys.map((k) => `~${k}`),
    ...user.channels.map((c) => `&${c}`),
    ...user.commands.map((c) => c.toLowerCase()),
    '-@admin',
  ];
}

/** SHA-256 hashes of passwords, as `ACL GETUSER` lists them. */
export function passwordHashes(passwords: readonly string[]): string[] {
  return passwords.map(sha256);
}
