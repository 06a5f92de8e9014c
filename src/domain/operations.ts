/**
 * Operations: every asynchronous action on an instance (a build, a resize, an ACL change...) as
 * one resource with a state, the steps it went through, and an error when it failed. Events:
 * what the live stream and webhooks carry (instance state changes, operation progress).
 */

/** Kinds hangar records itself, each tracked through the instance's progress in the store. */
export const INSTANCE_OPERATION_KINDS = [
  'create',
  'resize',
  'engine.switch',
  'rename',
  'delete',
  'acl.add',
  'acl.delete',
  'acl.replace',
  'user.create',
  'user.update',
  'user.delete',
  'password.rotate',
  'password.finish',
  'config.update',
  'tls.mode',
  'tls.rotate',
  'tls.revoke',
] as const;

/** Kinds started and finished by the service that does the work (`OperationLog.start`, `succeed`, `fail`). */
export const DRIVEN_OPERATION_KINDS = ['backup', 'restore'] as const;

export const OPERATION_KINDS = [...INSTANCE_OPERATION_KINDS, ...DRIVEN_OPERATION_KINDS] as const;
export type InstanceOperationKind = (typeof INSTANCE_OPERATION_KINDS)[number];
/** A kind of operation; later kinds are strings of the same shape (`word` or `word.word`). */
export type OperationKind = (typeof OPERATION_KINDS)[number] | (string & {});

export const OPERATION_STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
/** States from which an operation still moves. */
export const OPEN_OPERATION_STATES: readonly OperationState[] = ['PENDING', 'RUNNING'];

export function isInstanceKind(kind: string): kind is InstanceOperationKind {
  return (INSTANCE_OPERATION_KINDS as readonly string[]).includes(kind);
}

/** One step an operation went through, with its time. */
export interface OperationStep {
  readonly name: string;
  readonly at: number;
  readonly message?: string;
}

/** Who asked: the account's login and the credential used (a token's id, an API key's user_key). */
export interface RequestedBy {
  readonly login: string;
  readonly credential: 'token' | 'password' | 'api_key';
  /** The token's id or the key pair's user_key; null for a password. */
  readonly id: string | null;
}

export interface OperationError {
  readonly code: string;
  readonly message: string;
}

export interface Operation {
  readonly id: string;
  readonly kind: OperationKind;
  readonly accountId: string;
  readonly instanceId: string | null;
  readonly instanceName: string | null;
  readonly state: OperationState;
  readonly steps: readonly OperationStep[];
  /** 0-100 where it can be known; null otherwise. */
  readonly progress: number | null;
  readonly error: OperationError | null;
  readonly requestedBy: RequestedBy | null;
  readonly requestId: string | null;
  /** Kind-specific facts: the plans of a resize, the names of a rename, the ACL of an ACL change... */
  readonly detail: Readonly<Record<string, unknown>>;
  /** Instance kinds: the spec version whose carrying out completes the operation. */
  readonly targetVersion: number | null;
  readonly cancellable: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** When it is failed if it has not finished. */
  readonly deadlineAt: number;
  /** The id of the event recorded with its latest change: a stream resumed after it misses nothing of it. */
  readonly lastEventId: number | null;
  /** Moves on every change (optimistic concurrency between replicas). */
  readonly rev: number;
}

/** Every kind of event the stream and webhooks carry. */
export const EVENT_KINDS = [
  'instance.created',
  'instance.state',
  'instance.renamed',
  'instance.deleted',
  'operation.created',
  'operation.progress',
  'operation.succeeded',
  'operation.failed',
  'operation.cancelled',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** The event of an operation's change to `state` (a step of an open one is `operation.progress`). */
export function operationEventKind(state: OperationState, created: boolean): EventKind {
  if (created) return 'operation.created';
  if (state === 'SUCCEEDED') return 'operation.succeeded';
  if (state === 'FAILED') return 'operation.failed';
  if (state === 'CANCELLED') return 'operation.cancelled';
  return 'operation.progress';
}

/**
 * Whether an event kind is selected by a filter: `*` (every kind), a family (`operation`,
 * `instance`, or `operation.*`), or a kind itself.
 */
export function kindSelected(kind: string, filters: readonly string[]): boolean {
  return filters.some((f) => f === '*' || f === kind || kind.startsWith(`${f.replace(/\.\*$/, '')}.`));
}

/** Whether a filter entry names kinds that exist. */
export function isKindFilter(f: string): boolean {
  if (f === '*' || (EVENT_KINDS as readonly string[]).includes(f)) return true;
  const family = f.replace(/\.\*$/, '');
  return EVENT_KINDS.some((k) => k.startsWith(`${family}.`));
}

export interface StreamEvent {
  readonly id: number;
  readonly accountId: string;
  readonly kind: string;
  readonly instanceId: string | null;
  readonly instanceName: string | null;
  readonly operationId: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  readonly createdAt: number;
}

/** Seconds an operation of each kind family may run (`acl` covers acl.add and acl.delete); `default` for kinds not named. */
export type OperationDeadlines = Readonly<Record<string, number>>;

export const DEADLINE_FAMILIES = [
  'create',
  'resize',
  'engine',
  'rename',
  'delete',
  'acl',
  'user',
  'password',
  'config',
  'backup',
  'restore',
  'default',
] as const;

/** Seconds an operation of `kind` may run before it is failed. */
export function deadlineSeconds(deadlines: OperationDeadlines, kind: string): number {
  return deadlines[kind] ?? deadlines[kind.split('.')[0]!] ?? deadlines.default ?? 3600;
}
