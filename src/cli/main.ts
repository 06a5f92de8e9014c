import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { HangarApiError } from '../client/index.js';
import { ConfigError, SETTINGS, loadConfig, settingOptions } from '../config.js';
import { HangarError } from '../domain/errors.js';
import { StoreMissingError } from '../store/errors.js';
import { type ClientCommand, type OptionSpec, type Values, contextFor } from './client-command.js';
import { CLIENT_COMMANDS } from './client-commands.js';
import { ConnectError, ExitCode } from './commands/connect.js';
import { closest, closestCommand } from './did-you-mean.js';
import { EXIT, type Io, NotLoggedInError, UsageError, plural } from './io.js';
import { OPERATOR_COMMANDS, type OperatorCommand } from './operator-commands.js';
import type { Env } from './session.js';

export { OPERATOR_COMMANDS, type OperatorCommand } from './operator-commands.js';
export { CLIENT_COMMANDS } from './client-commands.js';

type Command = OperatorCommand | ClientCommand;

const ALL: readonly Command[] = [...CLIENT_COMMANDS, ...OPERATOR_COMMANDS];

const EXIT_CODES =
  'Exit codes: 0 success; 1 failure; 2 wrong usage; 3 not found (instance, ACL or user); 4 not logged in, or credentials refused; 5 gave up waiting (--timeout; hangar keeps working).';

const OPERATOR_EXIT_CODES =
  'Exit codes: 0 success; 1 failure; 2 wrong usage, an invalid setting, or a data dir or database without a store of hangar.';

/** Flags that take a value, in any command: their values are not command words. */
const VALUE_FLAGS = new Set<string>([
  ...Object.keys(settingOptions()),
  ...ALL.flatMap((c) =>
    Object.entries(c.options)
      .filter(([, o]) => o.type === 'string')
      .map(([f]) => f),
  ),
]);

/** The command named by the words of the command line (flags and their values skipped). */
function findCommand(argv: readonly string[]): { command: Command | undefined; words: string[] } {
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (a.startsWith('--') && !a.includes('=') && VALUE_FLAGS.has(a.slice(2))) i++;
      continue;
    }
    words.push(a);
  }
  const command = [...ALL].sort((a, b) => b.name.length - a.name.length).find((c) => c.name.split(' ').every((w, i) => words[i] === w));
  return { command, words };
}

const argUsage = (a: string) => (a.startsWith('...') ? ` [-- ${a.slice(3)}...]` : a.endsWith('?') ? ` [${a.slice(0, -1)}]` : ` ${a}`);
const usageOf = (c: ClientCommand) =>
  `hangar ${c.name}${c.args
    .filter((a) => !a.startsWith('...'))
    .map(argUsage)
    .join('')} [options]${c.args
    .filter((a) => a.startsWith('...'))
    .map(argUsage)
    .join('')}`;

function help(): string {
  const width = Math.max(...ALL.map((c) => c.name.length)) + 2;
  const line = (c: Command) => `  ${c.name.padEnd(width)}${c.summary}`;
  return [
    'hangar: a self-hosted control plane for Redis, MongoDB and Elasticsearch behind the ObjectRocket API v2',
    '',
    'Usage: hangar <command> [options]',
    '',
    'Using hangar (talks to any hangar over HTTP; start with hangar login):',
    ...CLIENT_COMMANDS.map(line),
    '',
    'Running hangar (on its machine, with the settings below):',
    ...OPERATOR_COMMANDS.map(line),
    '',
    'Settings of the commands that run hangar, as flags or environment variables (the flag wins):',
    ...SETTINGS.map((s) => `  --${s.flag} / ${s.env}${s.default !== undefined ? ` (default ${s.default})` : ''}: ${s.description}`),
    '',
    EXIT_CODES,
    'hangar <command> --help shows the command with examples; hangar <group> --help the commands of a group (hangar instances --help). hangar --version shows the version. Shell completion: hangar completion bash|zsh.',
  ].join('\n');
}

function optionLine(flag: string, o: OptionSpec): [string, string] {
  return [
    `${o.short ? `-${o.short}, ` : ''}--${flag}${o.value ? ` ${o.value}` : ''}`,
    `${o.description}${o.multiple ? ' (repeatable)' : ''}`,
  ];
}

function commandHelp(c: Command): string {
  if (c.kind === 'operator') {
    return [
      c.summary,
      '',
      `Usage: ${c.usage}`,
      '',
      'Examples:',
      ...c.examples.map((e) => `  ${e}`),
      '',
      'Settings: see hangar --help',
      OPERATOR_EXIT_CODES,
    ].join('\n');
  }
  // The command's own options first, the common ones (--url, --json) last.
  const common = (f: string) => (f === 'url' || f === 'json' ? 1 : 0);
  const entries = Object.entries(c.options).sort(([a], [b]) => common(a) - common(b));
  const opts = [...entries.map(([f, o]) => optionLine(f, o)), ['-h, --help', 'show this help'] as [string, string]];
  const width = Math.max(...opts.map(([f]) => f.length)) + 2;
  return [
    c.summary,
    '',
    `Usage: ${usageOf(c)}`,
    '',
    'Options:',
    ...opts.map(([f, d]) => `  ${f.padEnd(width)}${d}`),
    ...(c.details ? ['', wrap(c.details)] : []),
    ...(c.remote
      ? [
          '',
          wrap(
            'Environment: HANGAR_URL (or HANGAR_PORT, for a hangar on this machine), HANGAR_TOKEN; HANGAR_LOGIN and HANGAR_PASSWORD log in without hangar login.',
          ),
        ]
      : []),
    '',
    'Examples:',
    ...c.examples.map((e) => `  ${e}`),
    '',
    wrap(EXIT_CODES),
  ].join('\n');
}

/** Breaks text into lines of at most `width` characters, at spaces. */
function wrap(text: string, width = 100): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line].join('\n');
}

/** The commands whose names start with `words` (a group such as `instances` or `mongo users`). */
function groupCommands(words: readonly string[]): Command[] {
  const prefix = `${words.join(' ')} `;
  return words.length === 0 ? [] : ALL.filter((c) => c.name.startsWith(prefix));
}

/** The help of a group: its commands, each with its summary. */
function groupHelp(group: string, commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  return [
    `hangar ${group}: ${plural(commands.length, 'command')}`,
    '',
    `Usage: hangar ${group} <command> [options]`,
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    `hangar ${group} <command> --help shows the command with examples.`,
    commands.every((c) => c.kind === 'operator') ? OPERATOR_EXIT_CODES : EXIT_CODES,
  ].join('\n');
}

/** The version of this hangar, from its package.json. */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Every name a command line may start with: the commands and their groups. */
const NAMES = [...new Set(ALL.flatMap((c) => c.name.split(' ').map((_, i, w) => w.slice(0, i + 1).join(' '))))];

/** Words that name no command: what they most likely meant, and where to look. */
function unknownCommand(words: readonly string[]): string {
  const meant = closestCommand(words, NAMES);
  const group = [...NAMES].sort((a, b) => b.length - a.length).find((n) => n.split(' ').every((w, i) => words[i] === w));
  const help = `hangar ${group ? `${group} ` : ''}--help`;
  return `unknown command "${words.join(' ')}"; ${meant ? `did you mean "hangar ${meant}"? (see ${help})` : `see ${help}`}`;
}

/**
 * Node's words for a flag the command does not take, shortened, with the flag it most likely
 * meant: `Unknown option '--servce' (did you mean --service?)`.
 */
function unknownOption(err: Error, flags: readonly string[]): string {
  const m = /^Unknown option '(-{1,2})([^']+)'/.exec(err.message);
  if (!m) return err.message;
  const meant = m[1] === '--' ? closest(m[2]!, [...flags, 'help']) : undefined;
  return `Unknown option '${m[1]}${m[2]}'${meant ? ` (did you mean --${meant}?)` : ''}`;
}

/** Runs the command line; returns the exit code. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  const { command, words } = findCommand(argv);
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (!command && (argv[0] === '--version' || argv[0] === '-V' || words[0] === 'version')) {
    io.out(`hangar ${version()}`);
    return EXIT.OK;
  }
  if (!command) {
    if (words.length === 0 || words[0] === 'help') {
      const group = groupCommands(words.slice(1));
      io.out(group.length > 0 ? groupHelp(words.slice(1).join(' '), group) : help());
      return words.length === 0 && !wantsHelp ? EXIT.USAGE : EXIT.OK;
    }
    const group = groupCommands(words);
    if (group.length > 0) {
      // `hangar instances --help` (or `hangar help instances`): the group's commands; without --help it is wrong usage
      if (wantsHelp) {
        io.out(groupHelp(words.join(' '), group));
        return EXIT.OK;
      }
      io.err(`"hangar ${words.join(' ')}" needs a command:\n${groupHelp(words.join(' '), group)}`);
      return EXIT.USAGE;
    }
    io.err(unknownCommand(words));
    return EXIT.USAGE;
  }
  if (wantsHelp) {
    io.out(commandHelp(command));
    return EXIT.OK;
  }
  return command.kind === 'operator' ? runOperator(command, argv, env, io) : runClient(command, argv, env, io);
}

/** A command of the operator, unchanged: its flags and the server settings (flag > env > default). */
async function runOperator(command: OperatorCommand, argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...settingOptions(), ...command.options },
      allowPositionals: true,
      strict: true,
    });
    const args = positionals.slice(command.name.split(' ').length);
    const wanted = command.args ?? [];
    if (args.length < wanted.length) throw new UsageError(`missing ${wanted.slice(args.length).join(' ')}`);
    if (args.length > wanted.length) throw new UsageError(`unexpected argument "${args[wanted.length]}"`);
    const config = loadConfig(values, env);
    await command.run(config, values, io, { args, env });
    return EXIT.OK;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      const flags = [...Object.keys(settingOptions()), ...Object.keys(command.options)];
      io.err(`${unknownOption(err as Error, flags)}\nusage: ${command.usage}`);
      return EXIT.USAGE;
    }
    if (err instanceof ConfigError) {
      io.err(`configuration: ${err.message}`);
      return EXIT.USAGE;
    }
    if (err instanceof StoreMissingError) {
      // a wrong --data-dir (or a command run elsewhere): said, never answered with a new empty store
      io.err(
        `hangar: ${err.message}; give the --data-dir (HANGAR_DATA_DIR) or --database-url (HANGAR_DATABASE_URL) that hangar serve uses, or pass --init to create a new store there`,
      );
      return EXIT.USAGE;
    }
    if (err instanceof HangarError) {
      io.err(err.message);
      return EXIT.FAILURE;
    }
    io.err(`hangar: ${(err as Error).message ?? String(err)}`);
    return EXIT.FAILURE;
  }
}

/** A command for API users: its own flags, no server settings; API errors become exit codes. */
async function runClient(command: ClientCommand, argv: readonly string[], env: Env, io: Io): Promise<number> {
  try {
    const options = Object.fromEntries(
      Object.entries(command.options).map(([f, o]) => [
        f,
        { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
      ]),
    );
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    const args = positionals.slice(command.name.split(' ').length);
    const required = command.args.filter((a) => !a.endsWith('?') && !a.startsWith('...')).length;
    const most = command.args.at(-1)?.startsWith('...') ? Infinity : command.args.length;
    if (args.length < required) throw new UsageError(`missing ${command.args.slice(args.length, required).join(' ')}`);
    if (args.length > most) throw new UsageError(`unexpected argument "${args[most]}"`);
    await command.run(contextFor(args, values as Values, io, env));
    return EXIT.OK;
  } catch (err) {
    return clientFailure(command, err, io);
  }
}

function clientFailure(command: ClientCommand, err: unknown, io: Io): number {
  if (err instanceof ExitCode) return err.code;
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    io.err(
      `hangar: ${unknownOption(err as Error, Object.keys(command.options))}\nusage: ${usageOf(command)}  (see hangar ${command.name} --help)`,
    );
    return EXIT.USAGE;
  }
  if (err instanceof NotLoggedInError) {
    io.err(`hangar: ${err.message}`);
    return EXIT.AUTH;
  }
  if (err instanceof HangarApiError) {
    const id = err.status >= 500 && err.requestId ? ` (request id ${err.requestId})` : '';
    io.err(`hangar: ${inCliWords(command, err)}${id}`);
    if (err.status === 401) {
      // refused credentials at `hangar login` are said once; elsewhere the kept token is out of date
      if (command.name !== 'login') io.err('hangar: log in again: hangar login');
      return EXIT.AUTH;
    }
    if (err.status === 404) return EXIT.NOT_FOUND;
    if (err.code === 'WAIT_TIMEOUT') {
      io.err('hangar: hangar keeps working on it; follow it with hangar instances show (or hangar operations ls)');
      return EXIT.TIMEOUT;
    }
    return EXIT.FAILURE;
  }
  if (err instanceof ConnectError) {
    io.err(`hangar: ${err.message}`);
    return EXIT.FAILURE;
  }
  io.err(`hangar: ${(err as Error).message ?? String(err)}`);
  return EXIT.FAILURE;
}

/**
 * An API answer in the words of the command line: the field a command filled from a flag is
 * named by that flag (`"acls[0].cidr_mask" must be...` is `--acl must be...` after `--acl`), and
 * the API's way to log in (`GET /v2/tokens/`) is left to the `hangar login` line that follows.
 */
function inCliWords(command: ClientCommand, err: HangarApiError): string {
  let message = err.message.replace(/: log in (again )?at GET \/v2\/tokens\/.*$/, '');
  if (err.status === 401 && /X-Auth-Token|\/v2\//.test(message)) message = 'hangar did not accept the credentials';
  const field = err.field?.replace(/\[\d+\]/g, '[]');
  const word = field !== undefined ? command.fields?.[field] : undefined;
  if (word !== undefined) message = message.split(`"${err.field}"`).join(word);
  return message;
}
