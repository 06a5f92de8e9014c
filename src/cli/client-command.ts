import { connect as netConnect } from 'node:net';
import { HangarApiError, READY_STATES, type HangarClient, type Instance, type Operation } from '../client/index.js';
import { type Io, UsageError } from './io.js';
import type { DependentValues } from './completion.js';
import { Progress } from './progress.js';
import { type Connection, type Env, connect } from './session.js';

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** For help: e.g. `--zone ZONE  datacenter`. */
  readonly value?: string;
  readonly description: string;
  /** Values offered by shell completion. */
  readonly choices?: readonly string[];
  /** Values offered by shell completion once another flag is given (`--plan` after `--service redis`). */
  readonly choicesBy?: DependentValues;
}

export type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

export interface ClientContext {
  readonly args: readonly string[];
  readonly opts: Values;
  readonly io: Io;
  readonly env: Env;
  /** The client, logged in as `hangar login` left it (or from HANGAR_* variables). */
  connection(): Connection;
}

/** A command for people who use the API: talks to any hangar over HTTP, needs no server settings. */
export interface ClientCommand {
  readonly kind: 'client';
  /** Words that name it, e.g. `instances create`. */
  readonly name: string;
  readonly summary: string;
  /**
   * Positional arguments, e.g. `['NAME', 'NEW_NAME']`; a trailing `?` makes one optional, and a
   * last `...ARGS` takes the rest (after `--`).
   */
  readonly args: readonly string[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  readonly examples: readonly string[];
  /** More to say in --help. */
  readonly details?: string;
  /** Takes --url (talks to hangar). */
  readonly remote: boolean;
  /**
   * The API's fields this command fills from its flags or arguments, and how the command line
   * names them (`plan` is `--plan`; `acls[].cidr_mask`, any index, is `--acl`): an error the API
   * answers about a field is said with the flag.
   */
  readonly fields?: Readonly<Record<string, string>>;
  run(ctx: ClientContext): Promise<void>;
}

/** Options every remote command takes. */
export const REMOTE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  url: {
    type: 'string',
    value: 'URL',
    description: 'hangar to talk to (default: HANGAR_URL, 127.0.0.1 at HANGAR_PORT, or the one of hangar login)',
  },
  json: { type: 'boolean', description: 'print JSON (for scripts) instead of text' },
};

/** Options of commands that wait for an instance. */
export const WAIT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'no-wait': { type: 'boolean', description: 'answer at once instead of waiting until it is done' },
  timeout: { type: 'string', value: 'SECONDS', description: 'give up waiting after this long (default 600; exit code 5)' },
};

export const str = (v: Values[string]): string | undefined => (typeof v === 'string' ? v : undefined);
export const list = (v: Values[string]): string[] => (Array.isArray(v) ? v : typeof v === 'string' ? [v] : []);

export function need(v: Values[string], flag: string, hint = ''): string {
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${flag} is required${hint ? ` (${hint})` : ''}`);
  return v;
}

export function timeoutMs(opts: Values): number {
  const raw = str(opts.timeout);
  if (raw === undefined) return 600_000;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--timeout must be a number of seconds, got "${raw}"`);
  return n * 1000;
}

export function contextFor(args: readonly string[], opts: Values, io: Io, env: Env): ClientContext {
  // a wrong --timeout is wrong usage before anything is asked of hangar, not after
  if (opts.timeout !== undefined) timeoutMs(opts);
  return { args, opts, io, env, connection: () => connect(env, str(opts.url)) };
}

/** Waits until the instance serves, with a live progress line; returns its record. */
export async function waitReady(client: HangarClient, io: Io, name: string, opts: Values): Promise<Instance> {
  const progress = new Progress(io, name);
  try {
    const inst = await client.waitUntilReady(name, {
      timeoutMs: timeoutMs(opts),
      onPoll: (i) => i && i.state !== 'ACTIVE' && i.state !== 'COMPLETED' && progress.update(i.state),
    });
    progress.finish(inst.state);
    return inst;
  } catch (err) {
    progress.stop();
    throw err;
  }
}

/** Waits until the instance is gone, with a live progress line. */
export async function waitGone(client: HangarClient, io: Io, name: string, opts: Values): Promise<void> {
  const progress = new Progress(io, name);
  try {
    await client.waitUntilGone(name, { timeoutMs: timeoutMs(opts), onPoll: (i) => i && progress.update(i.state) });
    progress.finish('deleted');
  } catch (err) {
    progress.stop();
    throw err;
  }
}

/**
 * Follows the operation a command started, on the event stream (no polling): the live line shows
 * the instance's state as it changes, until the operation is finished. `done` says what success
 * means here: the instance serves (`ready`; its record is returned) or is gone. A failure throws
 * as the polling waits do: INSTANCE_FAILED for a create whose instance FAILED, WAIT_TIMEOUT
 * (`instance "x" is still BUILDING after 600 s`), OPERATION_FAILED otherwise.
 */
export async function followOperation(
  client: HangarClient,
  io: Io,
  name: string,
  operationId: string,
  opts: Values,
  done: 'ready' | 'gone',
): Promise<Instance | undefined> {
  const progress = new Progress(io, name);
  const limit = timeoutMs(opts);
  let state: string | undefined;
  const show = (s: string) => {
    state = s;
    if (!READY_STATES.includes(s)) progress.update(s);
  };
  let op: Operation;
  try {
    const current = await client.getInstance(name).catch(() => undefined);
    if (current) show(current.state);
    op = await client.waitForOperation(operationId, {
      timeoutMs: limit,
      onEvent: (e) => {
        const to = (e.data as { to?: unknown }).to;
        if (e.kind === 'instance.state' && typeof to === 'string') show(to);
      },
    });
  } catch (err) {
    progress.stop();
    if (err instanceof HangarApiError && err.code === 'WAIT_TIMEOUT') {
      throw new HangarApiError(0, 'WAIT_TIMEOUT', `instance "${name}" is still ${state ?? 'there'} after ${Math.round(limit / 1000)} s`);
    }
    throw err;
  }
  if (op.state === 'SUCCEEDED') {
    if (done === 'gone') {
      progress.finish('deleted');
      return undefined;
    }
    const inst = await client.getInstance(name).catch((err: unknown) => {
      progress.stop();
      throw err;
    });
    progress.finish(inst.state);
    return inst;
  }
  progress.stop();
  if (op.kind === 'create' && op.state === 'FAILED') {
    const inst = await client.getInstance(name).catch(() => undefined);
    throw new HangarApiError(
      0,
      'INSTANCE_FAILED',
      `instance "${name}" FAILED: ${inst?.state_reason ?? op.error?.message ?? 'no reason given'}`,
      inst ? { instance: inst } : {},
    );
  }
  const why = op.error?.message ?? op.steps.at(-1)?.message ?? 'no reason given';
  throw new HangarApiError(0, 'OPERATION_FAILED', `${op.kind} of "${name}" ${op.state}: ${why}`);
}

/**
 * The address this machine uses to reach hangar: the local address of a TCP connection to the
 * hangar URL. It is the address hangar (and its edge) sees whenever nothing translates
 * addresses in between (same host, same network, a VPN); behind NAT or a proxy it is not, and
 * the public address must be given instead.
 */
export function myAddress(url: string): Promise<string> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no connection to ${u.host} within 10 s`)));
    socket.once('connect', () => {
      const local = socket.localAddress ?? '';
      socket.destroy();
      resolve(local.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1'));
    });
    socket.once('error', (err) => reject(new HangarApiError(0, 'NETWORK_ERROR', `cannot reach hangar at ${url}: ${err.message}`)));
  });
}
