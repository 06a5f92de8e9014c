import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The built binary (`npm run build`; `npm test` builds first). */
export const BIN = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'bin.js');

export interface ServeProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited and its output is read. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What it wrote so far, stderr then stdout (the JSON log), for checks and failure messages. */
  output(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `hangar serve` from the built binary on a free port (port 0: it prints the URL it
 * serves on), with the emulated runtime unless `runtime` says otherwise.
 */
export async function spawnServe(opts: {
  dataDir: string;
  databaseUrl?: string;
  env?: Record<string, string>;
  runtime?: 'emulated' | 'local';
}): Promise<ServeProcess> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (npm test does)`);
  const args = [BIN, 'serve', '--runtime', opts.runtime ?? 'emulated', '--port', '0', '--data-dir', opts.dataDir];
  if (opts.databaseUrl) args.push('--database-url', opts.databaseUrl);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANGAR_')) env[k] = v;
  const child = spawn(process.execPath, args, {
    env: { ...env, HANGAR_LOG_LEVEL: 'warn', HANGAR_DRAIN_PERIOD: '0', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hangar serve did not start within 20 s:\n${err}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /hangar serving on (https?:\/\/[^/\s]+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`hangar serve exited (code ${code}, signal ${signal}) before serving:\n${err}`));
    });
  });
  return {
    url,
    child,
    exited,
    output: () => `${err}${out}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
