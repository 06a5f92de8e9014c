import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Processes } from './processes.js';

const script = (name: string): string => join(import.meta.dirname, '..', 'ceilings', `${name}.js`);

/**
 * Runs a ceiling (bench/ceilings/<name>.ts) in a process of its own and returns what it
 * printed: one JSON document on its last line of output.
 */
export async function runCeiling<T>(procs: Processes, name: string, args: readonly string[]): Promise<T> {
  const child = procs.spawn(process.execPath, [script(name), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('exit', resolve);
    child.once('error', reject);
  });
  if (code !== 0) throw new Error(`ceiling ${name} exited with ${code}: ${err.slice(-2000)}`);
  const last = out.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as T;
}

/** A ceiling that serves until stopped (the bare HTTP server). */
export interface CeilingServer {
  readonly port: number;
  readonly child: ChildProcess;
}

/** Starts a serving ceiling; it prints `listening <port>` when ready. */
export async function startCeilingServer(procs: Processes, name: string, args: readonly string[]): Promise<CeilingServer> {
  const child = procs.spawn(process.execPath, [script(name), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`ceiling ${name} exited with ${code}: ${err.slice(-2000)}`)));
  });
  return { port, child };
}
