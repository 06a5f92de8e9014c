import { spawn } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';

/** The end of a program's stderr, to say why it failed. */
function tail(text: string): string {
  return text.trim().split('\n').slice(-3).join(' ').slice(0, 500);
}

/**
 * Runs a program whose stdout is the product (a dump): the stream fails when the program exits
 * with another code than 0, with the end of its stderr as the reason.
 */
export function programOutput(bin: string, args: readonly string[], env: NodeJS.ProcessEnv): Readable {
  const out = new PassThrough();
  const child = spawn(bin, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...args], { env, stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-4000)));
    input.once('error', (e) => child.kill('SIGKILL') && reject(e));
    child.stdin.on('error', () => {});
    input.pipe(child.stdin);
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${bin} exited with ${code}: ${tail(err)}`))));
  });
}
