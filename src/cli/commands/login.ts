import { HangarClient } from '../../client/index.js';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, str } from '../client-command.js';
import { type Io, UsageError, json } from '../io.js';
import { DEFAULT_URL, defaultUrl, forgetToken, loadSession, normalizeUrl, saveSession } from '../session.js';
import { fields } from '../table.js';

/** Asks on the terminal when there is one; undefined otherwise or on an empty answer. */
async function ask(io: Io, question: string, secret: boolean): Promise<string | undefined> {
  if (!io.inIsTty || !io.prompt) return undefined;
  return (await io.prompt(question, { secret })).trim() || undefined;
}

async function login(ctx: ClientContext): Promise<void> {
  const { io, env, opts } = ctx;
  const stored = loadSession(env);
  const url = normalizeUrl(str(opts.url) ?? defaultUrl(env, stored));
  const storedLogin = stored && normalizeUrl(stored.url) === url ? stored.login : undefined;
  const who =
    str(opts.login) ?? env.HANGAR_LOGIN ?? (await ask(io, `Login${storedLogin ? ` [${storedLogin}]` : ''}: `, false)) ?? storedLogin;
  if (!who) throw new UsageError('give a login: --login LOGIN or HANGAR_LOGIN');
  let password = str(opts.password);
  if (opts['password-stdin'] === true) {
    if (!io.readStdin) throw new UsageError('--password-stdin: no stdin to read');
    password = (await io.readStdin()).replace(/\r?\n$/, '');
  }
  password ??= env.HANGAR_PASSWORD || (await ask(io, 'Password: ', true));
  if (!password) throw new UsageError('give a password: --password-stdin, HANGAR_PASSWORD, or run hangar login in a terminal');
  const client = new HangarClient({ url, login: who, password });
  const token = await client.login();
  const info = await client.verifyToken(token);
  const file = saveSession(env, { url, login: info.login, token, token_expires: info.token_expires });
  if (opts.json === true) {
    io.out(json({ url, login: info.login, token_expires: info.token_expires, config: file }));
    return;
  }
  io.out(`Logged in to ${url} as ${info.login}; the token is valid until ${info.token_expires} UTC.`);
  io.err(`(kept in ${file}, readable by you only)`);
}

async function logout(ctx: ClientContext): Promise<void> {
  const { io, env } = ctx;
  const stored = loadSession(env);
  if (stored?.token) {
    // Revoke it at hangar too; forgetting it here matters most, so a failure is only reported.
    await new HangarClient({ url: stored.url, token: stored.token }).logout().catch((err: unknown) => {
      io.err(`hangar: the token was not revoked at ${stored.url}: ${(err as Error).message}`);
    });
  }
  forgetToken(env);
  if (ctx.opts.json === true) io.out(json({ url: stored?.url ?? null, logged_out: true }));
  else io.out(stored?.token ? `Logged out of ${stored.url}.` : 'Not logged in.');
}

async function whoami(ctx: ClientContext): Promise<void> {
  const { url, client } = ctx.connection();
  const info = await client.verifyToken();
  if (ctx.opts.json === true) {
    ctx.io.out(json({ url, ...info }));
    return;
  }
  ctx.io.out(
    fields([
      ['url', url],
      ['login', info.login],
      ['account', info.account_id],
      ['token expires', `${info.token_expires} UTC`],
    ]),
  );
}

export const loginCommands: readonly ClientCommand[] = [
  {
    kind: 'client',
    name: 'login',
    summary: 'Log in to a hangar and keep the token in your config directory',
    args: [],
    remote: true,
    options: {
      ...REMOTE_OPTIONS,
      login: { type: 'string', value: 'LOGIN', description: 'your login, or an API user_key (default: HANGAR_LOGIN, or asked)' },
      'password-stdin': { type: 'boolean', description: 'read the password (or pass_key) from stdin' },
      password: {
        type: 'string',
        value: 'PASSWORD',
        description: 'the password (visible to other users of this machine: prefer --password-stdin, HANGAR_PASSWORD or the prompt)',
      },
    },
    examples: [
      'hangar login --url http://127.0.0.1:8080 --login me@example.com',
      'echo "$HANGAR_PASSWORD" | hangar login --url https://hangar.example.com --login me@example.com --password-stdin',
      'hangar login --login 3f2a9c...  # an API key pair: the user_key, then the pass_key as the password',
    ],
    details: `The URL and the token are kept in $XDG_CONFIG_HOME/hangar/config.json (or ~/.config/hangar/config.json), mode 0600; the password is not kept. The URL defaults to HANGAR_URL, then 127.0.0.1 at HANGAR_PORT (the port of a hangar serve started with it), the last one used, or ${DEFAULT_URL}. In a terminal, the login and password are asked for when not given.`,
    run: login,
  },
  {
    kind: 'client',
    name: 'logout',
    summary: 'Revoke the kept token and forget it',
    args: [],
    remote: false,
    options: { json: REMOTE_OPTIONS.json! },
    examples: ['hangar logout'],
    run: logout,
  },
  {
    kind: 'client',
    name: 'whoami',
    summary: 'Show the hangar and the account you are logged in to',
    args: [],
    remote: true,
    options: REMOTE_OPTIONS,
    examples: ['hangar whoami', 'hangar whoami --json'],
    run: whoami,
  },
];
