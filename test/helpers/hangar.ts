import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { EmulatedEngine } from '../../src/engines/emulated/emulated-engines.js';
import { EmulatedRuntime } from '../../src/runtimes/emulated/emulated-runtime.js';
import { createLogger, startHangar, type Hangar } from '../../src/server.js';
import { accounts } from './accounts.js';
import { fetchClearOfStaleConnections, toHeaders } from './fetch.js';
import { type Dialect, freshPostgres } from './database.js';
import { killAllUnder } from '../e2e/helpers/processes.js';

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export type Auth = { token: string } | { basic: [string, string] } | undefined;

/**
 * Where a Client sends its requests: the URL of a listening hangar, or a hangar's app in this
 * process (requests go through `app.inject`: the whole HTTP stack but the socket). The app is
 * looked up at each request, so that clients keep working across a restart of the test hangar.
 */
export type Target = string | { readonly app: () => FastifyInstance };

/**
 * What the test hangars of this process logged at level error (the last lines): a test that gets
 * an unexpected 500 prints them, so that a failure seen once (in CI) says what broke.
 */
const serverErrors: string[] = [];
const SERVER_ERRORS_KEPT = 20;
const errorLog = {
  write(line: string) {
    serverErrors.push(line.trimEnd());
    if (serverErrors.length > SERVER_ERRORS_KEPT) serverErrors.shift();
  },
};

/** A minimal HTTP client of the API, as a real client would talk to it. */
export class Client {
  constructor(
    readonly target: Target,
    readonly auth: Auth,
  ) {}

  /** One request through the target: over the network, or injected into the app. */
  private async send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<{ status: number; text: string; headers: Headers }> {
    if (typeof this.target === 'string') {
      const res = await fetchClearOfStaleConnections(`${this.target}${path}`, { method, headers, body });
      return { status: res.status, text: await res.text(), headers: res.headers };
    }
    const res = await this.target
      .app()
      .inject({ method: method as 'GET', url: path, headers, ...(body !== undefined ? { payload: body } : {}) });
    return { status: res.statusCode, text: res.body, headers: toHeaders(res.headers) };
  }

  async request<T = any>(
    method: string,
    path: string,
    opts: { body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (this.auth && 'token' in this.auth) headers['x-auth-token'] = this.auth.token;
    if (this.auth && 'basic' in this.auth) headers.authorization = `Basic ${Buffer.from(this.auth.basic.join(':')).toString('base64')}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await this.send(method, path, headers, body);
    const text = res.text;
    if (res.status === 500) console.error(`${method} ${path} answered 500; hangar logged:\n${serverErrors.join('\n')}`);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: the test will see the text */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get<T = any>(path: string, opts?: { headers?: Record<string, string> }) {
    return this.request<T>('GET', path, opts);
  }
  post<T = any>(path: string, body?: unknown, opts?: { headers?: Record<string, string> }) {
    return this.request<T>('POST', path, { body, ...opts });
  }
  patch<T = any>(path: string, body?: unknown) {
    return this.request<T>('PATCH', path, { body });
  }
  delete<T = any>(path: string, opts?: { rawBody?: string; headers?: Record<string, string> }) {
    return this.request<T>('DELETE', path, opts);
  }

  /** Polls an instance until `predicate` holds for its record (or fails after `ms`). */
  async waitFor(name: string, predicate: (rec: any) => boolean, ms = 10_000): Promise<any> {
    const until = Date.now() + ms;
    let last: Reply | undefined;
    while (Date.now() < until) {
      last = await this.get(`/v2/instances/${name}/`);
      if (predicate(last.status === 200 ? last.body.data : undefined)) return last.body?.data;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`instance ${name} did not reach the expected state: last ${JSON.stringify(last?.body)}`);
  }

  /** Creates an instance and waits until it is ready (ACTIVE, or COMPLETED for elasticsearch). */
  async ready(body: { name: string; service: string }): Promise<any> {
    const res = await this.post('/v2/instances/', body);
    if (res.status !== 200) throw new Error(`create ${body.name} failed: ${res.status} ${JSON.stringify(res.body)}`);
    return this.waitFor(body.name, (r) => r?.state === (body.service === 'elasticsearch' ? 'COMPLETED' : 'ACTIVE'));
  }

  /** Waits until the instance is gone (404). */
  async waitGone(name: string, ms = 10_000): Promise<void> {
    await this.waitFor(name, (r) => r === undefined, ms);
  }
}

/** A logged-in account: a client carrying its token, with its login and password. */
export type Account = Client & { login: string; password: string };

export interface TestHangar {
  readonly hangar: Hangar;
  /** Where clients of this hangar send their requests (the app itself unless it listens). */
  readonly target: Target;
  /** The URL it listens on; only for a hangar started with `listen: true` (raw sockets, TLS, other processes). */
  readonly url: string;
  readonly config: Config;
  /** A new account, logged in: a client carrying its token. */
  signup(login?: string): Promise<Account>;
  anonymous(): Client;
  /** The emulated runtime of the running hangar. */
  readonly runtime: EmulatedRuntime;
  /** The emulated MongoDB engine of the running hangar (its users, as the engine holds them). */
  readonly mongodb: EmulatedEngine;
  /** Holds the runtime's work (builds, changes, removals) until the returned function is called. */
  hold(): () => void;
  /** Stops hangar (engines keep running) and keeps the data. */
  stop(): Promise<void>;
  /** Starts hangar again on the same data dir / database. */
  restart(env?: Record<string, string>): Promise<void>;
  /** Stops hangar and removes its data. */
  close(): Promise<void>;
}

let counter = 0;

export const PASSWORD = 'correct-horse-battery';

export interface TestHangarOptions {
  readonly dialect?: Dialect;
  readonly env?: Record<string, string>;
  /** Listen on a free port (tests of sockets, TLS, other processes); otherwise requests are injected into the app. */
  readonly listen?: boolean;
  /** The clock backup schedules are read with (tests move it). */
  readonly backupClock?: () => number;
  /** A data dir to use (and keep); a new temp dir when left out. */
  readonly dataDir?: string;
  /** A PostgreSQL database to use (and keep) instead of a fresh one. */
  readonly databaseUrl?: string;
  /** When a pass first writes to its operations, in ms (default a quarter second). */
  readonly operationFirstFlushMs?: number;
}

/** Starts a real hangar with a temp data dir and the emulated runtime; listening on a free port when asked. */
export async function startTestHangar(opts: TestHangarOptions = {}): Promise<TestHangar> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'hangar-test-'));
  const pgdb = opts.databaseUrl
    ? { url: opts.databaseUrl, drop: async () => {} }
    : opts.dialect === 'postgres'
      ? await freshPostgres()
      : undefined;
  const makeConfig = (extra: Record<string, string> = {}) =>
    loadConfig(
      {},
      {
        HANGAR_PORT: '0',
        HANGAR_DATA_DIR: dataDir,
        HANGAR_RUNTIME: 'emulated',
        // errors are kept in memory and printed when a request answers 500 (errorLog above)
        HANGAR_LOG_LEVEL: 'error',
        HANGAR_HOST_ID: `test-${process.pid}-${++counter}`,
        // tests stop their hangars at once (the drain has a test of its own)
        HANGAR_DRAIN_PERIOD: '0',
        ...(pgdb ? { HANGAR_DATABASE_URL: pgdb.url } : {}),
        ...opts.env,
        ...extra,
      },
    );
  const listen = opts.listen === true;
  let config = makeConfig();
  const startOptions = {
    listen,
    ...(opts.backupClock ? { backupClock: opts.backupClock } : {}),
    ...(opts.operationFirstFlushMs !== undefined ? { operationFirstFlushMs: opts.operationFirstFlushMs } : {}),
  };
  let hangar = await startHangar(config, createLogger(config, errorLog), startOptions);
  let stopped = false;
  const target: Target = listen ? hangar.url : { app: () => hangar.app };
  const th: TestHangar = {
    get hangar() {
      return hangar;
    },
    target,
    get url() {
      if (!listen) throw new Error('this test hangar does not listen: start it with listen: true');
      return hangar.url;
    },
    get config() {
      return config;
    },
    async signup(login = `user${++counter}@example.com`) {
      await accounts(hangar).createAccount(login, PASSWORD);
      const basic = new Client(target, { basic: [login, PASSWORD] });
      const res = await basic.get('/v2/tokens/');
      if (res.status !== 200) throw new Error(`login failed: ${JSON.stringify(res.body)}`);
      return Object.assign(new Client(target, { token: res.body.data.token }), { login, password: PASSWORD });
    },
    anonymous: () => new Client(target, undefined),
    get runtime() {
      const runtime = hangar.zones.targets()[0]?.runtime;
      if (!(runtime instanceof EmulatedRuntime)) throw new Error('this test hangar does not run the emulated runtime');
      return runtime;
    },
    get mongodb() {
      const engine = hangar.zones.targets()[0]?.engines.require('mongod');
      if (!(engine instanceof EmulatedEngine)) throw new Error('this test hangar does not run the emulated engines');
      return engine;
    },
    hold: () => th.runtime.hold(),
    async stop() {
      if (!stopped) await hangar.close();
      stopped = true;
    },
    async restart(env = {}) {
      await th.stop();
      config = makeConfig({ ...env, ...(listen ? { HANGAR_PORT: String(new URL(hangar.url).port) } : {}) });
      hangar = await startHangar(config, createLogger(config, errorLog), startOptions);
      stopped = false;
    },
    async close() {
      await th.stop();
      await pgdb?.drop();
      // a data dir of the test's own: engines and the edge outlive hangar by design, and go with it
      if (!opts.dataDir) {
        await killAllUnder(dataDir);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
  return th;
}

/** A test hangar and its two accounts. */
export interface TwoAccounts {
  readonly th: TestHangar;
  readonly alice: Account;
  readonly bob: Account;
}

/** Starts a test hangar with two accounts, alice and bob: the set-up of most HTTP test files. */
export async function startWithTwoAccounts(opts: TestHangarOptions = {}): Promise<TwoAccounts> {
  const th = await startTestHangar(opts);
  return { th, alice: await th.signup(), bob: await th.signup() };
}
