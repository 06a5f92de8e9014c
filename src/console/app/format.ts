import type { EngineProduct, Instance, Operation } from '../../client/index.js';
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

/** A plan in its unit (the product's `plan_unit`: MB of memory, or GB); the bare number while the unit is not known. */
export function formatPlan(unit: string | undefined, plan: number): string {
  return `${plan.toLocaleString('en-US')}${unit ? ` ${unit}` : ''}`;
}

/** The memory a plan of a type of `product` promises, in MB, as GET /v2/engines/ gives it. */
export function promisedMb(product: EngineProduct, type: string, plan: number): number | undefined {
  return product.plans.find((p) => p.type === type && p.plan === plan)?.promised_mb;
}

/**
 * Why the server would refuse `plan` in a zone with `freeMb` free (null: unlimited), by its own
 * rule: what the plan promises (GET /v2/engines/) must fit in what the zone has free; a resize
 * from `fromPlan` needs only the difference. Undefined: it fits.
 */
export function planRefusal(
  product: EngineProduct | undefined,
  type: string,
  plan: number,
  freeMb: number | null,
  fromPlan?: number,
): string | undefined {
  if (!product || freeMb === null) return undefined;
  const need = promisedMb(product, type, plan);
  if (need === undefined) return undefined;
  const more = fromPlan === undefined ? need : need - (promisedMb(product, type, fromPlan) ?? 0);
  if (more <= freeMb) return undefined;
  const mb = (n: number) => `${n.toLocaleString('en-US')} MB`;
  return fromPlan === undefined
    ? `needs ${mb(need)}, the zone has ${mb(freeMb)} free`
    : `needs ${mb(more)} more, the zone has ${mb(freeMb)} free`;
}

/** Bytes of a unit of plans. */
export function planUnitBytes(unit: string | undefined): number {
  return unit === 'GB' ? 1024 ** 3 : unit === 'MB' ? 1024 ** 2 : 1;
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

export interface Problem {
  /** What happened. */
  readonly what: string;
  /** What to do about it. */
  readonly remedy: string;
  readonly requestId?: string;
  readonly field?: string;
}

/**
 * An API message in the words of the form: each quoted field name it has (`"cidr_mask"`,
 * `"acls[0].cidr_mask"`) becomes the label of the field on the page ("Address or range").
 */
export function fieldMessage(message: string, labels: Readonly<Record<string, string>>): string {
  const out = message.replace(/"(?:[\w[\]]+\.)*([\w]+)"/g, (quoted, field: string) => labels[field] ?? quoted);
  return out.charAt(0).toUpperCase() + out.slice(1);
}

/** Every failure as the page says it: what happened and what to do. */
export function describeError(err: unknown): Problem {
  if (!(err instanceof HangarApiError)) {
    return {
      what: err instanceof Error ? err.message : String(err),
      remedy: 'Reload the page; if it happens again, tell your hangar operator.',
    };
  }
  const base = { what: err.message, ...(err.requestId ? { requestId: err.requestId } : {}), ...(err.field ? { field: err.field } : {}) };
  switch (err.code) {
    case 'NETWORK_ERROR':
      return { ...base, what: 'hangar does not answer.', remedy: 'Check your connection and that hangar is running, then try again.' };
    case 'TIMEOUT':
      return {
        ...base,
        what: 'hangar did not answer in time.',
        remedy: 'Try again; the change may have been made, so check the list first.',
      };
    case 'ROUTE_NOT_FOUND':
    case 'METHOD_NOT_ALLOWED':
      return { ...base, remedy: 'This hangar is older than the console expects: ask your operator to update it.' };
    default:
  }
  if (err.status === 400)
    return { ...base, remedy: err.allowed ? `Choose one of: ${err.allowed.join(', ')}.` : 'Correct the value and try again.' };
  if (err.status === 401) return { ...base, remedy: 'Log in again.' };
  if (err.status === 404) return { ...base, remedy: 'It may have been deleted or renamed: go back to the list.' };
  if (err.status === 409) {
    if (err.code === 'OPERATION_IN_PROGRESS' || err.code === 'INSTANCE_NOT_READY')
      return { ...base, remedy: 'Wait until the instance is ACTIVE, then try again.' };
    if (err.code === 'OPERATION_NOT_CANCELLABLE') return { ...base, remedy: 'The operation carries on: follow it here until it finishes.' };
    if (err.code === 'QUOTA_EXCEEDED')
      return { ...base, remedy: 'Delete something you no longer need, or ask your operator for a higher limit.' };
    return { ...base, remedy: 'Choose another value, or refresh to see the current state.' };
  }
  if (err.status === 422) return { ...base, remedy: 'Choose another service, or ask your operator to install its engine.' };
  if (err.status === 429) return { ...base, remedy: `Wait ${err.retryAfterSeconds ?? 'a few'} seconds and try again.` };
  if (err.status === 503) return { ...base, remedy: 'Try again in a moment.' };
  return { ...base, remedy: `Try again; if it fails again, give your operator the request id${err.requestId ? ` ${err.requestId}` : ''}.` };
}

// --- operations ----------------------------------------------------------------------------

/** States from which an operation still moves. */
export const OPEN_OPERATION_STATES: readonly string[] = ['PENDING', 'RUNNING'];

export function isOpen(op: Pick<Operation, 'state'>): boolean {
  return OPEN_OPERATION_STATES.includes(op.state);
}

/**
 * Whether the page offers to cancel it: an open operation started as cancellable, or an open
 * create (cancellable until its build starts; after that the API's 409 says why not).
 */
export function offersCancel(op: Pick<Operation, 'state' | 'kind' | 'cancellable'>): boolean {
  return isOpen(op) && (op.cancellable || op.kind === 'create');
}

/** The newer of two records of one operation: by the event of its latest change, then by its update time. */
export function newerOperation(a: Operation, b: Operation): Operation {
  const ea = a.last_event_id ?? -1;
  const eb = b.last_event_id ?? -1;
  if (ea !== eb) return eb > ea ? b : a;
  return b.date_updated.$date >= a.date_updated.$date ? b : a;
}

/** The order of the API's list: newest first, then by id. */
function newestFirst(a: Operation, b: Operation): number {
  return b.date_created.$date - a.date_created.$date || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0);
}

/**
 * A list of operations (newest first) with `op` in it: an older record of it is replaced (a
 * newer one kept), and an operation not in the list is added only when `insert` says so.
 */
export function upsertOperation(list: readonly Operation[], op: Operation, insert: boolean): readonly Operation[] {
  const i = list.findIndex((o) => o.id === op.id);
  if (i >= 0) {
    const kept = newerOperation(list[i]!, op);
    if (kept === list[i]) return list;
    return list.map((o, j) => (j === i ? kept : o));
  }
  return insert ? [...list, op].sort(newestFirst) : list;
}

/** What the operations page shows: the filters of its URL (`#/operations?instance=cache&state=PENDING,RUNNING&kind=create`). */
export interface OperationFilter {
  readonly instance: string;
  /** Comma-separated states, '' for all. */
  readonly state: string;
  /** One kind, '' for all. */
  readonly kind: string;
}

export function operationFilterOf(q: URLSearchParams): OperationFilter {
  return { instance: (q.get('instance') ?? '').trim(), state: q.get('state') ?? '', kind: q.get('kind') ?? '' };
}

/** The URL query of a filter (empty fields left out). */
export function operationFilterQuery(f: OperationFilter): string {
  const q = new URLSearchParams();
  if (f.instance) q.set('instance', f.instance);
  if (f.state) q.set('state', f.state);
  if (f.kind) q.set('kind', f.kind);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Whether an operation (a new one, seen on the stream) belongs in a filtered list. */
export function operationMatches(op: Operation, f: OperationFilter): boolean {
  if (f.instance && op.instance_name !== f.instance && op.instance_id !== f.instance) return false;
  if (f.state && !f.state.split(',').includes(op.state)) return false;
  if (f.kind && op.kind !== f.kind) return false;
  return true;
}

/** A step's name as a person reads it: `create:primary-started` -> "Primary started", `state:ACTIVE` -> "Instance ACTIVE". */
export function stepLabel(name: string): string {
  const state = /^state:(.+)$/.exec(name);
  if (state) return `Instance ${state[1]}`;
  const own = /^[a-z.]+:(.+)$/.exec(name);
  const words = (own ? own[1]! : name).replace(/[-_]/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Epoch milliseconds as `YYYY-MM-DD HH:MM:SS` (UTC), as the API's `created` fields. */
export function formatUtc(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, '');
}

/** Times of a chart's axis (epoch seconds) as the console says times: 24-hour, UTC ("14:05:30"; "14:05" when all are whole minutes). */
export function tickLabels(splits: readonly number[]): string[] {
  const times = splits.map((s) => formatUtc(s * 1000).slice(11));
  return times.every((t) => t.endsWith(':00')) ? times.map((t) => t.slice(0, 5)) : times;
}

/** A duration as "340 ms", "4.2 s", "3 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * What an operation changes, from its kind's `detail`: "redis 500 MB in US-Dallas", "500 MB → 1,000 MB", "cache → sessions".
 * `planUnit`: the unit of the plans it names (its product's).
 */
export function operationSummary(op: Pick<Operation, 'kind' | 'detail'>, planUnit?: string): string {
  const d = op.detail;
  const str = (k: string): string => (typeof d[k] === 'string' || typeof d[k] === 'number' ? String(d[k]) : '');
  switch (op.kind) {
    case 'create':
      return [str('service'), typeof d.plan === 'number' ? formatPlan(planUnit, d.plan) : '', str('zone') ? `in ${str('zone')}` : '']
        .filter(Boolean)
        .join(' ');
    case 'resize':
      return typeof d.from_plan === 'number' && typeof d.to_plan === 'number'
        ? `${formatPlan(planUnit, d.from_plan)} → ${formatPlan(planUnit, d.to_plan)}`
        : '';
    case 'rename':
      return str('from') && str('to') ? `${str('from')} → ${str('to')}` : '';
    case 'acl.add':
      return str('cidr_mask');
    case 'acl.delete':
      return str('acl_id') ? `ACL ${str('acl_id')}` : '';
    case 'user.create':
    case 'user.update':
    case 'user.delete':
      return str('username') ? `${str('username')} on ${str('database')}` : '';
    case 'backup':
      return d.scheduled === true ? 'scheduled' : 'on demand';
    case 'restore':
      return str('backup_id')
        ? `backup ${str('backup_id')}${d.in_place === false ? ' into a new instance' : d.in_place === true ? ' in place' : ''}`
        : '';
    default:
      return '';
  }
}

// --- backups -------------------------------------------------------------------------------

/** A size in bytes as people read it (binary units, as the plans): "900 B", "1.5 KB", "12.3 MB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

/** The first characters of a SHA-256, enough to tell backups apart and to compare with `sha256sum`. */
export function shortSha(sha: string | null): string {
  return sha ? sha.slice(0, 12) : '—';
}

/** The plans (in `unit`, MB or GB) that hold what a backed-up instance used; every plan when it is not known. */
export function plansHolding(unit: string | undefined, plans: readonly number[], usedBytes: number | null): number[] {
  const bytes = planUnitBytes(unit);
  return plans.filter((p) => usedBytes === null || p * bytes >= usedBytes);
}

/** A backup policy as a sentence: "Daily at 03:00 UTC, keeping the last 7 and those of the last 30 days". */
export function describePolicy(p: {
  schedule: string;
  every_hours: number | null;
  daily_at: string | null;
  keep_last: number | null;
  keep_days: number | null;
}): string {
  const when =
    p.schedule === 'every'
      ? `Every ${p.every_hours} hour${p.every_hours === 1 ? '' : 's'}`
      : p.schedule === 'daily'
        ? `Daily at ${p.daily_at} UTC`
        : 'No scheduled backups';
  const keep = [
    p.keep_last !== null ? `the last ${p.keep_last}` : '',
    p.keep_days !== null ? `those of the last ${p.keep_days} day${p.keep_days === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  return `${when}; ${keep.length > 0 ? `keeping ${keep.join(' and ')}` : 'every backup kept'}`;
}

/** The body of `PUT .../backup-policy/` from the form's text fields: only the fields of its schedule, empty retention is null. */
export function policyBody(form: { schedule: string; every_hours: string; daily_at: string; keep_last: string; keep_days: string }): {
  schedule: string;
  every_hours?: number | string;
  daily_at?: string;
  keep_last: number | string | null;
  keep_days: number | string | null;
} {
  // what was typed goes to the API as it is ("1.5", "-2" and "x" come back as its 400 naming the field), never read as "no limit"
  const num = (s: string): number | string => (/^-?\d+(\.\d+)?$/.test(s.trim()) ? Number(s.trim()) : s.trim());
  const opt = (s: string): number | string | null => (s.trim() === '' ? null : num(s));
  return {
    schedule: form.schedule,
    ...(form.schedule === 'every' && form.every_hours.trim() !== '' ? { every_hours: num(form.every_hours) } : {}),
    ...(form.schedule === 'daily' ? { daily_at: form.daily_at.trim() } : {}),
    keep_last: opt(form.keep_last),
    keep_days: opt(form.keep_days),
  };
}
