import { HangarApiError, HangarClient } from '../../client/index.js';

/**
 * The console's session: a token from `GET /v2/tokens/`, kept in memory and in
 * sessionStorage (this tab only, gone when it closes), never the password. Every API call goes
 * through `api()`: a 401 ends the session and sends the user to the login page, their place kept.
 */

export interface Session {
  readonly token: string;
  readonly login: string;
}

const STORAGE_KEY = 'hangar.session';

let current: Session | undefined = load();
let client: HangarClient | undefined;
const listeners = new Set<(s: Session | undefined, why?: 'expired') => void>();

function load(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Partial<Session>;
    return typeof s.token === 'string' && typeof s.login === 'string' ? { token: s.token, login: s.login } : undefined;
  } catch {
    return undefined;
  }
}

function set(s: Session | undefined, why?: 'expired'): void {
  current = s;
  client = undefined;
  try {
    if (s) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    /* storage refused (private mode): the session lives in memory only */
  }
  for (const l of listeners) l(s, why);
}

export function session(): Session | undefined {
  return current;
}

/** Called on every change: log in, log out, expiry. */
export function onSessionChange(listener: (s: Session | undefined, why?: 'expired') => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const origin = (): string => window.location.origin;

/** Logs in with HTTP Basic; the password is used for this request only. */
export async function logIn(login: string, password: string): Promise<void> {
  const c = new HangarClient({ url: origin(), login, password });
  const token = await c.login();
  set({ token, login });
}

/** Revokes the token (best effort: it is forgotten here either way). */
export async function logOut(): Promise<void> {
  const c = client;
  set(undefined);
  try {
    await c?.logout();
  } catch {
    /* already expired or unreachable: nothing more to drop */
  }
}

/** Ends the session because the API refused the token. */
export function expire(): void {
  if (current) set(undefined, 'expired');
}

function apiClient(): HangarClient {
  if (!current) throw new HangarApiError(401, 'UNAUTHORIZED', 'you are not logged in');
  client ??= new HangarClient({ url: origin(), token: current.token });
  return client;
}

/** One or more API calls with the session's token; a 401 ends the session. */
export async function api<T>(call: (c: HangarClient) => Promise<T>): Promise<T> {
  try {
    return await call(apiClient());
  } catch (err) {
    if (err instanceof HangarApiError && err.status === 401) expire();
    throw err;
  }
}
