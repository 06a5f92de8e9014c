import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { HangarClient } from '../client/index.js';
import { NotLoggedInError, UsageError } from './io.js';

/** The address `hangar login` uses when none is given: `hangar serve`'s default. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** What `hangar login` keeps: where hangar is and a token for it (never the password). */
export interface StoredSession {
  readonly url: string;
  readonly login?: string;
  readonly token?: string;
  /** `YYYY-MM-DD HH:MM:SS`, UTC. */
  readonly token_expires?: string;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** `$XDG_CONFIG_HOME/hangar`, or `~/.config/hangar`. */
export function configDir(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME;
  return xdg?.startsWith('/') ? join(xdg, 'hangar') : join(env.HOME || homedir(), '.config', 'hangar');
}

export const sessionFile = (env: Env): string => join(configDir(env), 'config.json');

export function loadSession(env: Env): StoredSession | undefined {
  const file = sessionFile(env);
  if (!existsSync(file)) return undefined;
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as StoredSession;
    return typeof s.url === 'string' ? s : undefined;
  } catch {
    throw new UsageError(`${file} is not valid JSON: remove it and run hangar login again`);
  }
}

/** Writes the session readable by its owner only (0600, in a 0700 directory), atomically. */
export function saveSession(env: Env, session: StoredSession): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = sessionFile(env);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}

/** Drops the token; the URL and login stay as defaults of the next login. */
export function forgetToken(env: Env): void {
  const s = loadSession(env);
  if (!s) return;
  const { token: _t, token_expires: _e, ...rest } = s;
  saveSession(env, rest);
}

/** A URL as hangar's base: `http(s)://host[:port]`, without a trailing slash or /v2. */
export function normalizeUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UsageError(`"${raw}" is not a URL (e.g. ${DEFAULT_URL})`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`"${raw}" is not an http(s) URL`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '').replace(/\/v2$/, '')}`;
}

/**
 * Where hangar is when no --url says: HANGAR_URL; else, when HANGAR_PORT is set (a `hangar serve`
 * or `npm start` of this shell listens there), that port on HANGAR_HOST (127.0.0.1 when unset or
 * a wildcard); else the URL of the last `hangar login`; else the default.
 */
export function defaultUrl(env: Env, stored: StoredSession | undefined): string {
  if (env.HANGAR_URL) return env.HANGAR_URL;
  const port = env.HANGAR_PORT;
  if (port) {
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) throw new UsageError(`HANGAR_PORT "${port}" is not a TCP port`);
    const host = !env.HANGAR_HOST || env.HANGAR_HOST === '0.0.0.0' || env.HANGAR_HOST === '::' ? '127.0.0.1' : env.HANGAR_HOST;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }
  return stored?.url ?? DEFAULT_URL;
}

export interface Connection {
  readonly url: string;
  readonly client: HangarClient;
}

/**
 * The client of a command: hangar's URL from --url, else as defaultUrl says; the
 * token from HANGAR_TOKEN or the saved session (only the session's own URL gets its token);
 * HANGAR_LOGIN and HANGAR_PASSWORD, when set, log in (and again when a token is refused).
 */
export function connect(env: Env, urlFlag: string | undefined): Connection {
  const stored = loadSession(env);
  const url = normalizeUrl(urlFlag ?? defaultUrl(env, stored));
  const token = env.HANGAR_TOKEN || (stored && normalizeUrl(stored.url) === url ? stored.token : undefined);
  const login = env.HANGAR_LOGIN;
  const password = env.HANGAR_PASSWORD;
  const credentials = login && password ? { login, password } : {};
  if (!token && !('login' in credentials)) {
    throw new NotLoggedInError(`not logged in to ${url}: run hangar login${url === DEFAULT_URL ? '' : ` --url ${url}`}`);
  }
  return { url, client: new HangarClient({ url, ...(token ? { token } : {}), ...credentials }) };
}
