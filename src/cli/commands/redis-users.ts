import type { RedisUser } from '../../client/index.js';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, type OptionSpec, type Values, list, str } from '../client-command.js';
import { type Io, UsageError, json } from '../io.js';
import { table } from '../table.js';

/** The API's fields of a redis user, as these commands name them. */
const REDIS_USER_FIELDS = {
  username: 'USER',
  password: 'the password',
  'keys[]': '--key',
  'channels[]': '--channel',
  'commands[]': '--command',
};
const KEY: OptionSpec = { type: 'string', multiple: true, value: 'PATTERN', description: 'a key pattern the user may use (app:*)' };
const CHANNEL: OptionSpec = { type: 'string', multiple: true, value: 'PATTERN', description: 'a Pub/Sub channel pattern the user may use' };
const COMMAND: OptionSpec = {
  type: 'string',
  multiple: true,
  value: 'RULE',
  description:
    'a command rule, in order: +@read, +get; one that takes away is written --command=-@dangerous (admin commands cannot be granted)',
};
const PASSWORD_STDIN: OptionSpec = {
  type: 'boolean',
  description: 'read the password from stdin (otherwise hangar makes one and prints it)',
};

async function passwordFrom(io: Io, opts: Values): Promise<string | undefined> {
  if (opts['password-stdin'] !== true) return undefined;
  if (!io.readStdin) throw new UsageError('--password-stdin: no stdin to read');
  return (await io.readStdin()).replace(/\r?\n$/, '');
}

const rulesOf = (u: RedisUser) =>
  [u.keys.map((k) => `~${k}`).join(' '), u.channels.map((c) => `&${c}`).join(' '), u.commands.join(' ')].filter(Boolean).join(' ');

async function ls(ctx: ClientContext): Promise<void> {
  const users = await ctx.connection().client.listRedisUsers(ctx.args[0]!);
  if (ctx.opts.json === true) ctx.io.out(json(users));
  else if (users.length === 0) ctx.io.out(`No users on ${ctx.args[0]} besides the instance password's.`);
  else
    ctx.io.out(
      table(
        ['USER', 'RULES', 'ROTATION ENDS'],
        users.map((u) => [u.name, rulesOf(u) || '-', u.previous_password_valid_until ?? '-']),
      ),
    );
}

async function add(ctx: ClientContext): Promise<void> {
  const [name, username] = ctx.args as [string, string];
  const password = await passwordFrom(ctx.io, ctx.opts);
  const created = await ctx.connection().client.createRedisUser(name, {
    username,
    ...(password !== undefined ? { password } : {}),
    keys: list(ctx.opts.key),
    channels: list(ctx.opts.channel),
    commands: list(ctx.opts.command),
  });
  if (ctx.opts.json === true) ctx.io.out(json(created));
  else if (password !== undefined)
    ctx.io.out(`User ${username} added to ${name}: ${rulesOf(created.user) || 'no key, channel or command yet'}.`);
  else {
    ctx.io.err(`User ${username} added to ${name}; its password (shown this once):`);
    ctx.io.out(created.password);
  }
}

async function set(ctx: ClientContext): Promise<void> {
  const [name, username] = ctx.args as [string, string];
  const password = await passwordFrom(ctx.io, ctx.opts);
  const change = {
    ...(password !== undefined ? { password } : {}),
    ...(ctx.opts.key !== undefined || ctx.opts['no-keys'] === true ? { keys: list(ctx.opts.key) } : {}),
    ...(ctx.opts.channel !== undefined || ctx.opts['no-channels'] === true ? { channels: list(ctx.opts.channel) } : {}),
    ...(ctx.opts.command !== undefined || ctx.opts['no-commands'] === true ? { commands: list(ctx.opts.command) } : {}),
  };
  if (Object.keys(change).length === 0)
    throw new UsageError('give --key, --channel, --command (or --no-keys, --no-channels, --no-commands) or --password-stdin');
  const user = await ctx.connection().client.updateRedisUser(name, username, change);
  ctx.io.out(ctx.opts.json === true ? json(user) : `User ${username} of ${name}: ${rulesOf(user) || 'no key, channel or command'}.`);
}

async function rm(ctx: ClientContext): Promise<void> {
  const [name, username] = ctx.args as [string, string];
  await ctx.connection().client.deleteRedisUser(name, username);
  ctx.io.out(
    ctx.opts.json === true
      ? json({ instance: name, user: username, deleted: true })
      : `User ${username} deleted from ${name}; its connections are closed.`,
  );
}

async function rotate(ctx: ClientContext): Promise<void> {
  const [name, username] = ctx.args as [string, string];
  const { client } = ctx.connection();
  if (ctx.opts.finish === true) {
    const retired = await client.finishRedisUserPasswordRotation(name, username);
    ctx.io.out(
      ctx.opts.json === true
        ? json({ retired })
        : retired
          ? `The old password of ${username} no longer works.`
          : `No rotation of ${username} was in progress.`,
    );
    return;
  }
  const r = await client.rotateRedisUserPassword(name, username);
  if (ctx.opts.json === true) ctx.io.out(json(r));
  else {
    ctx.io.err(
      `New password of ${username} on ${name}; the old one works until ${r.previous_valid_until} (or: hangar redis users rotate-password ${name} ${username} --finish):`,
    );
    ctx.io.out(r.password);
  }
}

const RULES_HELP =
  "Users connect with AUTH <user> <password> (redis-cli --user). Command categories that may be granted: @keyspace @read @write @set @sortedset @list @hash @string @bitmap @hyperloglog @geo @stream @pubsub @fast @slow @blocking @connection @transaction @scripting; administrative commands (CONFIG, ACL, REPLICAOF, SHUTDOWN, DEBUG, MODULE, ...) are hangar's.";

export const redisUserCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'redis users ls',
    summary: 'List the application users of a redis instance',
    args: ['NAME'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar redis users ls cache'],
    run: ls,
  },
  {
    kind: 'client',
    name: 'redis users add',
    fields: REDIS_USER_FIELDS,
    summary: 'Add a user to a redis instance, with its keys, channels and commands',
    args: ['NAME', 'USER'],
    remote: true,
    options: { ...REMOTE_OPTIONS, key: KEY, channel: CHANNEL, command: COMMAND, 'password-stdin': PASSWORD_STDIN },
    examples: [
      "hangar redis users add cache app --key 'app:*' --command +@read --command +@write --command=-@dangerous",
      'printf %s "$PW" | hangar redis users add cache reports --key \'reports:*\' --command +@read --password-stdin',
    ],
    details: RULES_HELP,
    run: add,
  },
  {
    kind: 'client',
    name: 'redis users set',
    fields: REDIS_USER_FIELDS,
    summary: "Change a user's keys, channels, commands or password (given lists replace the old ones)",
    args: ['NAME', 'USER'],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      key: KEY,
      channel: CHANNEL,
      command: COMMAND,
      'no-keys': { type: 'boolean', description: 'no key any more' },
      'no-channels': { type: 'boolean', description: 'no channel any more' },
      'no-commands': { type: 'boolean', description: 'no command any more' },
      'password-stdin': { type: 'boolean', description: 'a new password from stdin, at once (for no downtime: rotate-password)' },
    },
    examples: ["hangar redis users set cache app --key 'app:*' --key 'jobs:*'", 'hangar redis users set cache app --command +@read'],
    details: RULES_HELP,
    run: set,
  },
  {
    kind: 'client',
    name: 'redis users rm',
    summary: 'Delete a user of a redis instance (its connections are closed)',
    args: ['NAME', 'USER'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar redis users rm cache app'],
    run: rm,
  },
  {
    kind: 'client',
    name: 'redis users rotate-password',
    summary: 'Give a user a new password; the old one works until the grace period ends (or --finish)',
    args: ['NAME', 'USER'],
    remote: true,
    options: { ...REMOTE_OPTIONS, finish: { type: 'boolean', description: 'retire the old password now' } },
    examples: ['hangar redis users rotate-password cache app', 'hangar redis users rotate-password cache app --finish'],
    run: rotate,
  },
];

/** `hangar redis config`: show or change the settings of the allow-list. */
async function config(ctx: ClientContext): Promise<void> {
  const [name, ...assignments] = ctx.args as [string, ...string[]];
  const { client } = ctx.connection();
  if (assignments.length === 0) {
    const values = await client.redisConfig(name);
    ctx.io.out(
      ctx.opts.json === true
        ? json(values)
        : table(
            ['SETTING', 'VALUE'],
            Object.entries(values).map(([k, v]) => [k, v === '' ? '""' : v]),
          ),
    );
    return;
  }
  const change: Record<string, string> = {};
  for (const a of assignments) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new UsageError(`"${a}": expected SETTING=VALUE, e.g. maxmemory-policy=allkeys-lru`);
    change[a.slice(0, eq)] = a.slice(eq + 1);
  }
  const held = await client.setRedisConfig(name, change);
  ctx.io.out(
    ctx.opts.json === true
      ? json(held)
      : `Settings of ${name} applied: ${Object.keys(change)
          .map((k) => `${k}=${held[k] ?? change[k]}`)
          .join(', ')}.`,
  );
}

async function slowlog(ctx: ClientContext): Promise<void> {
  const name = ctx.args[0]!;
  const limit = str(ctx.opts.limit);
  const entries = await ctx.connection().client.redisSlowlog(name, limit !== undefined ? { limit: Number(limit) } : {});
  if (ctx.opts.json === true) ctx.io.out(json(entries));
  else if (entries.length === 0) ctx.io.out(`The slow log of ${name} is empty.`);
  else
    ctx.io.out(
      table(
        ['ID', 'TIME', 'MICROSECONDS', 'COMMAND', 'CLIENT'],
        entries.map((e) => [e.id, e.time, e.duration_us, e.command.join(' ').slice(0, 80), e.client]),
      ),
    );
}

export const redisConfigCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'redis config',
    summary: 'Show the settings a tenant may change, or change them (SETTING=VALUE...), live on primary and replica',
    args: ['NAME', '...SETTINGS'],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: [
      'hangar redis config cache',
      'hangar redis config cache -- maxmemory-policy=allkeys-lru timeout=300',
      'hangar redis config cache -- notify-keyspace-events=Ex',
    ],
    details:
      'Settings: maxmemory-policy, maxmemory-samples, timeout, tcp-keepalive, notify-keyspace-events, slowlog-log-slower-than, slowlog-max-len, maxclients, hz, lazyfree-lazy-eviction, lazyfree-lazy-expire, lazyfree-lazy-server-del, lazyfree-lazy-user-del, lazyfree-lazy-user-flush. A wrong value is refused with the allowed ones.',
    run: config,
  },
  {
    kind: 'client',
    name: 'redis slowlog',
    summary: 'The slow log of a redis instance, newest first',
    args: ['NAME'],
    remote: true,
    options: { ...REMOTE_OPTIONS, limit: { type: 'string', value: 'N', description: 'how many entries, 1-1000 (default 20)' } },
    examples: ['hangar redis slowlog cache', 'hangar redis slowlog cache --limit 100 --json'],
    run: slowlog,
  },
];
