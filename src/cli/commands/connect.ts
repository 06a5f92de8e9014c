import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Instance } from '../../client/index.js';
import { REMOTE_OPTIONS, type ClientCommand, type ClientContext, str } from '../client-command.js';
import type { Env } from '../session.js';
import { isService } from '../../domain/catalog.js';
import type { Product, ShellCommand } from '../../engines/product.js';
import { findProduct, firstProductOf } from '../../engines/products.js';
import { EXIT, UsageError, json } from '../io.js';
import { shellLine } from '../../lib/shell-line.js';

export type { ShellCommand };
export { shellLine };

/** The product of an instance record: its engine, or (a server that names none) its service's first. */
export function productOfRecord(inst: Pick<Instance, 'service' | 'engine'>): Product | undefined {
  return (inst.engine ? findProduct(inst.engine) : undefined) ?? (isService(inst.service) ? firstProductOf(inst.service) : undefined);
}

/** The shell command for an instance; `extra` arguments go last (e.g. a redis command to run). */
export function shellFor(
  inst: Instance,
  opts: { servicenet?: boolean; user?: string; db?: string },
  extra: readonly string[] = [],
): ShellCommand {
  const shell = productOfRecord(inst)?.shell;
  if (!shell) {
    throw new UsageError(
      `${inst.service} has no shell; talk to it over HTTP: ${inst.connection_strings?.public.http ?? 'see hangar instances show'}`,
    );
  }
  return shell.command(inst, opts, extra);
}

/** The executable on PATH, or undefined. */
export function findOnPath(command: string, env: Env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

async function connect(ctx: ClientContext): Promise<void> {
  const { io, env, opts } = ctx;
  const name = ctx.args[0]!;
  const { client } = ctx.connection();
  const inst = await client.getInstance(name);
  const cmd = shellFor(
    inst,
    {
      servicenet: opts.servicenet === true,
      ...(str(opts.user) ? { user: str(opts.user)! } : {}),
      ...(str(opts.db) ? { db: str(opts.db)! } : {}),
    },
    ctx.args.slice(1),
  );
  const path = findOnPath(cmd.command, env);
  if (opts.print === true) {
    io.out(opts.json === true ? json({ ...cmd, path: path ?? null }) : shellLine(cmd));
    return;
  }
  if (!path)
    throw new ConnectError(
      `${cmd.command} is not on PATH; install it (${productOfRecord(inst)?.shell?.install ?? 'see its documentation'}), or print the command: hangar connect ${name} --print`,
    );
  if (inst.state !== 'ACTIVE') io.err(`hangar: instance "${name}" is ${inst.state}`);
  if ((await client.listAcls(name)).length === 0) {
    io.err(
      `hangar: no ACL admits any address to "${name}" yet, so the connection will be refused; add yours: hangar acls add ${name} --my-ip`,
    );
  }
  const code = await run(path, cmd, env);
  if (code !== 0) throw new ExitCode(code);
}

/** Runs the shell on this terminal and resolves to its exit code; Ctrl-C belongs to the shell. */
function run(path: string, cmd: ShellCommand, env: Env): Promise<number> {
  const ignore = () => {};
  process.on('SIGINT', ignore);
  return new Promise<number>((resolve, reject) => {
    const child = spawn(path, cmd.args, { stdio: 'inherit', env: { ...env, ...cmd.env } });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : EXIT.FAILURE)));
  }).finally(() => process.off('SIGINT', ignore));
}

/** The shell could not be started. */
export class ConnectError extends Error {
  override name = 'ConnectError';
}

/** The shell ended with this exit code, which hangar connect passes on. */
export class ExitCode extends Error {
  override name = 'ExitCode';
  constructor(readonly code: number) {
    super(`exit code ${code}`);
  }
}

export const connectCommand: ClientCommand = {
  kind: 'client',
  name: 'connect',
  summary: 'Open redis-cli (or mongosh) on an instance, with its address and password',
  args: ['NAME', '...ARGS'],
  remote: true,
  options: {
    ...REMOTE_OPTIONS,
    print: { type: 'boolean', description: 'print the command instead of running it (with --json: command, args, env, path)' },
    servicenet: { type: 'boolean', description: 'redis: use the private-network address' },
    user: { type: 'string', value: 'USER', description: 'mongodb: the database user (mongosh asks for the password)' },
    db: { type: 'string', value: 'DATABASE', description: 'mongodb: the database (default admin)' },
  },
  examples: [
    'hangar connect cache',
    'hangar connect cache -- INFO memory    # runs one command and exits',
    'hangar connect cache --print',
    'hangar connect docs --user app-user --db app',
  ],
  details:
    "redis-cli gets -h and -p, and the password in REDISCLI_AUTH (not on the command line); ARGS after -- are passed to the shell. The edge admits only the addresses of the instance's ACLs: add yours first with hangar acls add NAME --my-ip. Exits with the shell's exit code.",
  run: connect,
};
