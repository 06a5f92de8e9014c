import { spawn } from 'node:child_process';
import { PassThrough, Readable } from 'node:stream';

/** The end of a program's stderr, to say why it failed. */
function tail(text: string): string {
  return text.trim().split('\n').slice(-3).join(' ').slice(0, 500);
}

/** Where and as whom a program runs: its working directory and, when hangar is root, another user. */
export interface RunAs {
  readonly cwd?: string;
  readonly uid?: number;
  readonly gid?: number;
}

/**
 * Runs a program whose stdout is the product (a dump): the stream fails when the program exits
 * with another code than 0, with the end of its stderr as the reason.
 */
export function programOutput(bin: string, args: readonly string[], env: NodeJS.ProcessEnv, as: RunAs = {}): Readable {
  const out = new PassThrough();
  const child = spawn(bin, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'], ...as });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-4000)));
  child.stdout.pipe(out, { end: false });
  child.once('error', (e) => out.destroy(e));
  child.once('close', (code) => {
    if (code === 0) out.end();
    else out.destroy(new Error(`${bin} exited with ${code}: ${tail(err)}`));
  });
  return out;
}

/** Runs a program fed `input` on stdin; resolves when it exits 0, rejects with the end of its stderr otherwise. */
export function runWithInput(bin: string, args: readonly string[], env: NodeJS.ProcessEnv, input: Readable): Promise<void> {
  return runProgram(bin, args, env, { input }).then(() => undefined);
}

/**
 * Runs a program to its end, fed `input` on stdin (nothing when absent); resolves with its stdout
 * (the first MB) when it exits 0, rejects with the end of its stderr otherwise.
 */
export function runProgram(
  bin: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  opts: RunAs & { readonly input?: Readable | string } = {},
): Promise<string> {
  const { input, ...as } = opts;
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...args], { env, stdio: ['pipe', 'pipe', 'pipe'], ...as });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      if (out.length < 1 << 20) out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-4000)));
    child.stdin.on('error', () => {});
    const source = typeof input === 'string' ? Readable.from([input]) : input;
    if (source) {
      source.once('error', (e) => child.kill('SIGKILL') && reject(e));
      source.pipe(child.stdin);
    } else {
      child.stdin.end();
    }
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${bin} exited with ${code}: ${tail(err)}`))));
  });
}
