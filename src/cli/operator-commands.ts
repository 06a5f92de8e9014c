import type { Config } from '../config.js';
import { INSTALL_RECIPES } from '../engines/installs.js';
import type { Io } from './io.js';

// Loaded when run: they bring the server, the store and the drivers, which the commands of API
// users (and --help) have no use for.
const accounts = () => import('./commands/accounts.js');
const engines = () => import('./commands/engines.js');

type Opts = Record<string, string | boolean | undefined>;

/** What an operator command gets besides the settings and its flags. */
export interface OperatorRun {
  /** Its arguments (the words after its name). */
  readonly args: readonly string[];
  /** The environment (for the programs it looks for: JAVA_HOME, PATH). */
  readonly env: NodeJS.ProcessEnv;
}

/** A command of the operator: works on a data dir or database directly and takes the server settings. */
export interface OperatorCommand {
  readonly kind: 'operator';
  /** Words that name it, e.g. `accounts create`. */
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly examples: readonly string[];
  /** Flags of its own, besides the settings (--data-dir, --database-url, ...). */
  readonly options: Readonly<Record<string, { type: 'string' | 'boolean'; short?: string }>>;
  /** Its arguments after its name (`PRODUCT@VERSION`), each required; none when absent. */
  readonly args?: readonly string[];
  /** Words its first argument may be, for shell completion. */
  readonly argWords?: () => readonly string[];
  run(config: Config, opts: Opts, io: Io, more: OperatorRun): Promise<void>;
}

const login = { login: { type: 'string' as const } };
/** Commands on the store take --init: without it, a data dir or database without a store is refused. */
const init = { init: { type: 'boolean' as const } };

export const OPERATOR_COMMANDS: readonly OperatorCommand[] = [
  {
    kind: 'operator',
    name: 'serve',
    summary: 'Serve the API, run the reconciler and supervise the engines',
    usage: 'hangar serve [--port N] [--data-dir DIR] [--database-url URL] [--runtime local|emulated] [...]',
    examples: ['hangar serve', 'HANGAR_BOOTSTRAP_LOGIN=me@example.com HANGAR_BOOTSTRAP_PASSWORD=long-password hangar serve --port 8080'],
    options: {},
    run: async (config, _opts, io) => (await import('./commands/serve.js')).serve(config, io),
  },
  {
    kind: 'operator',
    name: 'doctor',
    summary: 'Tell which services this machine can host, the engines found and what to install for the others',
    usage: 'hangar doctor [--json]',
    examples: ['hangar doctor', 'hangar doctor --json'],
    options: { json: { type: 'boolean' } },
    run: async (config, opts, io) => (await import('./commands/doctor.js')).doctor(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'down',
    summary:
      'Stop every engine and the edge of a data dir (hangar serve must be stopped); instances stay recorded and run again at the next serve',
    usage: 'hangar down [--data-dir DIR] [--database-url URL]',
    examples: ['hangar down', 'hangar down --data-dir /srv/hangar'],
    options: {},
    run: async (config, opts, io) => (await import('./commands/down.js')).down(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'accounts create',
    summary: 'Create an account (prints it as JSON)',
    usage: 'hangar accounts create --login LOGIN --password PASSWORD [--init]',
    examples: [
      'hangar accounts create --login ops@example.com --password "correct horse battery"',
      'hangar accounts create --data-dir /srv/hangar --init --login ops@example.com --password "correct horse battery"   # a new store',
    ],
    options: { ...login, ...init, password: { type: 'string' } },
    run: async (config, opts, io) => (await accounts()).accountsCreate(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'keys create',
    summary: 'Create an API key pair for an account; prints {"id", "user_key", "pass_key", "created"} (the pass_key is shown once)',
    usage: 'hangar keys create --login LOGIN [--init]',
    examples: ['hangar keys create --login ops@example.com'],
    options: { ...login, ...init },
    run: async (config, opts, io) => (await accounts()).keysCreate(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'keys ls',
    summary: "List an account's API keys (without secrets)",
    usage: 'hangar keys ls --login LOGIN [--init]',
    examples: ['hangar keys ls --login ops@example.com'],
    options: { ...login, ...init },
    run: async (config, opts, io) => (await accounts()).keysList(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'keys rm',
    summary: 'Delete an API key pair',
    usage: 'hangar keys rm --login LOGIN --user-key KEY [--init]',
    examples: ['hangar keys rm --login ops@example.com --user-key 3f2a...'],
    options: { ...login, ...init, 'user-key': { type: 'string' } },
    run: async (config, opts, io) => (await accounts()).keysDelete(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'tokens revoke',
    summary: 'Revoke every token of an account (its clients must log in again)',
    usage: 'hangar tokens revoke --login LOGIN [--init]',
    examples: ['hangar tokens revoke --login ops@example.com'],
    options: { ...login, ...init },
    run: async (config, opts, io) => (await accounts()).tokensRevoke(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'secrets rotate',
    summary: 'Re-encrypt every stored secret with a new key',
    usage: 'hangar secrets rotate [--init]',
    examples: ['hangar secrets rotate', 'HANGAR_SECRET_KEY="$(openssl rand -base64 32),$OLD_KEY" hangar secrets rotate'],
    options: init,
    run: async (config, opts, io) => (await import('./commands/secrets-rotate.js')).secretsRotate(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'audit',
    summary: 'Print the audit log, newest first',
    usage: 'hangar audit [--login LOGIN] [--limit N] [--init]',
    examples: ['hangar audit --limit 20', 'hangar audit --login ops@example.com'],
    options: { ...login, ...init, limit: { type: 'string' } },
    run: async (config, opts, io) => (await import('./commands/audit.js')).audit(config, opts, io),
  },
  {
    kind: 'operator',
    name: 'engines install',
    summary:
      'Fetch an engine no Debian package provides (Elasticsearch, OpenSearch, FerretDB) from its publisher, check it and keep it in the engine cache',
    usage: 'hangar engines install PRODUCT@VERSION [--from URL|FILE] [--sha1 HEX] [--force] [--json] [--engine-cache DIR]',
    examples: [
      'hangar engines install elasticsearch@7.17.25',
      'hangar engines install opensearch@2.19.1 --from https://maven.example.com/maven2   # a mirror of Maven Central',
      'hangar engines install elasticsearch@6.8.23 --from ./elasticsearch-6.8.23.zip   # checked against its .sha1',
      'hangar engines install ferretdb@1.24.2   # built with the Go toolchain',
      `products and versions: ${INSTALL_RECIPES.flatMap((r) => r.versions.map((v) => `${r.product}@${v}`)).join(' ')}`,
    ],
    options: { from: { type: 'string' }, sha1: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' } },
    args: ['PRODUCT@VERSION'],
    argWords: () => INSTALL_RECIPES.flatMap((r) => r.versions.map((v) => `${r.product}@${v}`)),
    run: async (config, opts, io, { args, env }) => {
      const e = await engines();
      await e.engineInstall(e.parseEngineInstall(config, opts, args, env), io);
    },
  },
  {
    kind: 'operator',
    name: 'engines ls',
    summary: 'List the engines in the engine cache: product, version, program, size, when installed and the Java each runs on',
    usage: 'hangar engines ls [--json] [--engine-cache DIR]',
    examples: ['hangar engines ls', 'hangar engines ls --json'],
    options: { json: { type: 'boolean' } },
    run: async (config, opts, io) => (await engines()).engineList(config, opts, io),
  },
];
