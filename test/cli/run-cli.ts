import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { main } from '../../src/cli/main.js';

/** The built binary, as `npm run build` leaves it. */
export const BIN = resolve('dist/src/cli/bin.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  /** stderr so far (progress lines arrive while the command runs). */
  stderr(): string;
  /** Sends the process a signal (SIGKILL: as a crash or an operator's kill -9 would end it). */
  kill(signal: NodeJS.Signals): void;
  readonly done: Promise<CliResult>;
}

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Fails when the binary is missing or older than the sources it is built from. */
export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
  // tsc writes every output file on each build, so the binary is as old as the build.
  const built = statSync(BIN).mtimeMs;
  for (const dir of ['src/cli', 'src/client']) {
    if (newest(resolve(dir)) > built) throw new Error(`dist/ is older than ${dir}: run npm run build first`);
  }
}

/** A user's environment: a home of its own (the config file goes there), no HANGAR_* variable but those given. */
const cliEnv = (opts: { home: string; env?: Record<string, string> }): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: opts.home,
  XDG_CONFIG_HOME: join(opts.home, '.config'),
  ...opts.env,
});

/**
 * Runs `node dist/src/cli/bin.js ARGS` as a user would: with a home of its own (the config
 * file goes there), no HANGAR_* variable but those given, stdin from `input`, not a terminal.
 */
export function startCli(args: readonly string[], opts: { home: string; env?: Record<string, string>; input?: string }): CliRun {
  const child = spawn(process.execPath, [BIN, ...args], { env: cliEnv(opts), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(opts.input ?? '');
  const done = new Promise<CliResult>((resolveDone, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolveDone({ code: code ?? -1, stdout, stderr }));
  });
  return { stderr: () => stderr, kill: (signal) => child.kill(signal), done };
}

export const runCli = (args: readonly string[], opts: { home: string; env?: Record<string, string>; input?: string }): Promise<CliResult> =>
  startCli(args, opts).done;

/**
 * Runs the command line in this process: what the binary runs (`bin.ts` is `main(argv, env,
 * processIo)` and nothing else) without starting a process, for the checks that run a command
 * per command of the CLI. Not a terminal, no HANGAR_* variable but those given.
 */
export async function runCliInProcess(args: readonly string[], opts: { home: string; env?: Record<string, string> }): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const line = (t: string) => (t.endsWith('\n') ? t : `${t}\n`);
  const code = await main(args, cliEnv(opts), { out: (t) => (stdout += line(t)), err: (t) => (stderr += line(t)) });
  return { code, stdout, stderr };
}

const made: string[] = [];

/** A new temp dir, removed by removeTempDirs(). */
export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}
