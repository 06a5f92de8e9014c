import type { Instance } from '../../client/index.js';
import { HangarApiError } from '../../client/index.js';

/** Pure helpers of the console: no DOM, tested under node (format.test.ts). */

/** States in which something is under way, and what the page says meanwhile. */
export const BUSY_STATES: Readonly<Record<string, string>> = {
  REQUESTED: 'Requested: waiting for the builder',
  BUILDING: 'Building: starting the engines and the edge',
  RESIZING: 'Resizing: the engines take the new plan, data kept',
  RESTORING: 'Restoring: a backup replaces the data; clients are cut off until it is done',
  DELETING: 'Deleting: stopping the engines and closing the ports',
  DEGRADED: 'Degraded: hangar is repairing it',
};

export const READY = ['ACTIVE', 'COMPLETED'];

/** Plans are MB for redis, GB for the other services. */
export function formatPlan(service: string, plan: number): string {
  return service === 'redis' ? `${plan.toLocaleString('en-US')} MB` : `${plan} GB`;
}

/** Redis's "used_memory_human" ("1.04M", "512.00K", "3.2G", "900B") in bytes. */
export function parseHumanBytes(s: string): number | undefined {
  const m = /^([\d.]+)\s*([BKMGT]?)$/i.exec(s.trim());
  if (!m) return undefined;
  const scale: Record<string, number> = { '': 1, B: 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
  return Number(m[1]) * (scale[m[2]!.toUpperCase()] ?? 1);
}

export type SortKey = 'name' | 'state' | 'service' | 'type' | 'plan' | 'zone' | 'version' | 'created';

export function filterInstances(list: readonly Instance[], text: string, service: string): Instance[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  return list.filter((i) => {
    if (service && i.service !== service) return false;
    const hay = [i.name, i.state, i.service, i.type, String(i.plan), i.zone, i.version].join(' ').toLowerCase();
    return words.every((w) => hay.includes(w));
  });
}

export function sortInstances(list: readonly Instance[], key: SortKey, dir: 'asc' | 'desc'): Instance[] {
  const value = (i: Instance): string | number => (key === 'plan' ? i.plan : String(i[key] ?? ''));
  const sign = dir === 'asc' ? 1 : -1;
  return [...list].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), 'en', { numeric: true });
    return c !== 0 ? sign * c : a.name.localeCompare(b.name);
  });
}

/** `redis://host:port` -> { host, port } */
export function hostPort(connect: string): { host: string; port: string } | undefined {
  const m = /^(?:\w+:\/\/)?\[?([^\]\s/]+?)\]?:(\d+)\/?$/.exec(connect.trim());
  return m ? { host: m[1]!, port: m[2]! } : undefined;
}

/** A redis-cli command line; the password goes in REDISCLI_AUTH, not in argv (and not in `ps`). */
export function redisCliCommand(connect: string, password: string): string {
  const hp = hostPort(connect);
  if (!hp) return '';
  return `REDISCLI_AUTH='${password.replace(/'/g, "'\\''")}' redis-cli -h ${hp.host} -p ${hp.port}`;
}

/** A mongosh command line for a database user (mongosh asks for the password). */
export function mongoshCommand(connect: string, user: string, db: string): string {
  const first = connect.split(',')[0]?.trim() ?? '';
  const direct = connect.includes(',') ? '&directConnection=true' : '';
  return `mongosh "mongodb://${encodeURIComponent(user)}@${first}/${encodeURIComponent(db)}?authSource=${encodeURIComponent(db)}${direct}"`;
}

export interface Problem {
  /** What happened. */
  readonly what: string;
  /** What to do about it. */
  readonly todo: string;
  readonly requestId?: string;
  readonly field?: string;
}

/** Every failure as the page says it: what happened and what to do. */
export function describeError(err: unknown): Problem {
  if (!(err instanceof HangarApiError)) {
    return { what: err instanceof Error ? err.message : String(err), todo: 'Reload the page; if it happens again, tell your hangar operator.' };
  }
  const base = { what: err.message, ...(err.requestId ? { requestId: err.requestId } : {}), ...(err.field ? { field: err.field } : {}) };
  switch (err.code) {
    case 'NETWORK_ERROR':
      return { ...base, what: 'hangar does not answer.', todo: 'Check your connection and that hangar is running, then try again.' };
    case 'TIMEOUT':
      return { ...base, what: 'hangar did not answer in time.', todo: 'Try again; the change may have been made, so check the list first.' };
    case 'ROUTE_NOT_FOUND':
      return { ...base, todo: 'This hangar is older than the console expects: ask your operator to update it.' };
    default:
  }
  if (err.status === 400) return { ...base, todo: err.allowed ? `Choose one of: ${err.allowed.join(', ')}.` : 'Correct the value and try again.' };
  if (err.status === 401) return { ...base, todo: 'Log in again.' };
  if (err.status === 404) return { ...base, todo: 'It may have been deleted or renamed: go back to the list.' };
  if (err.status === 409) {
    if (err.code === 'OPERATION_IN_PROGRESS' || err.code === 'INSTANCE_NOT_READY') return { ...base, todo: 'Wait until the instance is ACTIVE, then try again.' };
    if (err.code === 'QUOTA_EXCEEDED') return { ...base, todo: 'Delete something you no longer need, or ask your operator for a higher limit.' };
    return { ...base, todo: 'Choose another value, or refresh to see the current state.' };
  }
  if (err.status === 422) return { ...base, todo: 'Choose another service, or ask your operator to install its engine.' };
  if (err.status === 429) return { ...base, todo: `Wait ${err.retryAfterSeconds ?? 'a few'} seconds and try again.` };
  if (err.status === 503) return { ...base, todo: 'Try again in a moment.' };
  return { ...base, todo: `Try again; if it fails again, give your operator the request id${err.requestId ? ` ${err.requestId}` : ''}.` };
}
