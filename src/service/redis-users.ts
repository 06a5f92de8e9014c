import { newObjectId, randomHex } from '../lib/ids.js';
import type { Db } from '../store/database.js';
import { bumpInstance, getSpecVersion } from '../store/instance-repository.js';
import { findRedisUser, insertRedisUser, listRedisUsers, markRedisUserDeleting, updateRedisUser } from '../store/redis-user-repository.js';
import { patternProblem, ruleProblem, takePattern, usernameProblem } from '../engines/redis/redis-users.js';

/** Command categories a user may be granted (engine knowledge, for the API's documentation). */
export { GRANTABLE_CATEGORIES } from '../engines/redis/redis-users.js';
import { productNamed } from '../engines/products.js';
import { errors } from '../domain/errors.js';
import { Problems } from './validate.js';
import type { Instance, RedisUser } from '../domain/model.js';
import type { OperationKind } from '../domain/operations.js';
import { NO_ORIGIN, type Caller, type Origin, type ServiceDeps } from './deps.js';
import type { InstanceService, Started } from './instances.js';

/** How long a user change waits for the engines before answering (it is durable either way). */
export const USER_SETTLE_MS = 5000;

export interface RedisUserInput {
  readonly username: string;
  readonly password?: string;
  readonly keys?: readonly string[];
  readonly channels?: readonly string[];
  readonly commands?: readonly string[];
}

export interface RedisUserChange {
  readonly password?: string;
  readonly keys?: readonly string[];
  readonly channels?: readonly string[];
  readonly commands?: readonly string[];
}

/** The caller's redis instance by name; anything else is the same 404 as none. */
export async function redisInstanceOf(instances: InstanceService, caller: Caller, name: string): Promise<Instance> {
  const inst = await instances.find(caller, name);
  if (!inst || !productNamed(inst.engine).features.redisApi) throw errors.notARedisInstance(name);
  return inst;
}

/** The operation a change of an instance is recorded as. */
export interface ChangeOperation {
  readonly kind: OperationKind;
  readonly caller: Caller;
  readonly origin: Origin;
  readonly detail?: Readonly<Record<string, unknown>>;
}

/**
 * Records a change of an instance, and its operation, in one transaction that first bumps its
 * spec version (in PostgreSQL that locks the row: changes to one instance and its deletion run
 * one after the other), then has the reconciler apply it and waits for that (bounded; durable
 * either way). The operation succeeds with the pass that carries the change out.
 */
export async function recordAndApply<T>(
  deps: ServiceDeps,
  inst: Instance,
  op: ChangeOperation,
  change: (trx: Db) => Promise<T>,
  settleMs = USER_SETTLE_MS,
): Promise<Started<T>> {
  const now = deps.now();
  const out = await deps.db.transaction().execute(async (trx) => {
    const operation = await deps.operations.start(
      { kind: op.kind, instance: { id: inst.id, name: inst.name }, account: op.caller.accountId, ...op.origin, detail: { ...op.detail } },
      trx,
    );
    if (!(await bumpInstance(trx, inst.id, {}, now, { notDeleting: true }))) throw errors.instanceDeleting(inst.name);
    const result = await change(trx);
    await deps.operations.setTarget(trx, operation.id, await getSpecVersion(trx, inst.id));
    return { result, operation };
  });
  const settled = deps.work.settle(inst.id, settleMs);
  deps.work.enqueue(inst.id);
  await settled;
  return out;
}

/**
 * Application users of Redis instances (Redis ACL users). hangar records each (password
 * sealed) as desired state; the reconciler applies them on the primary and the replica, and
 * writes them into the engines' configuration files, so they outlive restarts.
 */
export class RedisUserService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
  ) {}

  async list(caller: Caller, name: string): Promise<RedisUser[]> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    return listRedisUsers(this.deps.db, this.deps.keyring, inst.id);
  }

  async get(caller: Caller, name: string, username: string): Promise<RedisUser> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const user = await findRedisUser(this.deps.db, this.deps.keyring, inst.id, username);
    if (!user) throw errors.redisUserNotFound(username, name);
    return user;
  }

  /** Creates a user; its password is the one given, or one hangar makes. Returns the user and its password. */
  async create(
    caller: Caller,
    name: string,
    input: RedisUserInput,
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<{ user: RedisUser; password: string }>> {
    // every field judged, so that one answer names each problem
    const p = new Problems();
    const problem = usernameProblem(input.username);
    if (problem) p.add(errors.invalidValue('username', `"username" ${problem}`));
    const password = input.password ?? randomHex(16);
    p.check(() => assertUserPassword(password));
    const keys = p.check(() => assertPatterns('keys', input.keys ?? []));
    const channels = p.check(() => assertPatterns('channels', input.channels ?? []));
    const commands = p.check(() => assertCommands(input.commands ?? []));
    // past this, every check passed: each gave its value
    p.throwIfAny();
    const warnings = [...keys!.notes, ...channels!.notes];
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const now = this.deps.now();
    const { operation } = await recordAndApply(
      this.deps,
      inst,
      { kind: 'user.create', caller, origin, detail: { service: 'redis', username: input.username } },
      async (trx) => {
        const inserted = await insertRedisUser(trx, this.deps.keyring, {
          id: newObjectId(now),
          instanceId: inst.id,
          username: input.username,
          password,
          keys: keys!.patterns,
          channels: channels!.patterns,
          commands: commands!,
          now,
        });
        if (!inserted) throw errors.redisUserExists(input.username, name);
      },
    );
    return { result: { user: await this.get(caller, name, input.username), password }, operation, warnings };
  }

  async update(
    caller: Caller,
    name: string,
    username: string,
    change: RedisUserChange,
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<RedisUser>> {
    if (change.password === undefined && change.keys === undefined && change.channels === undefined && change.commands === undefined) {
      throw errors.invalidBody('send at least one of "password", "keys", "channels", "commands"');
    }
    const p = new Problems();
    if (change.password !== undefined) p.check(() => assertUserPassword(change.password!));
    const keys = change.keys === undefined ? undefined : p.check(() => assertPatterns('keys', change.keys!));
    const channels = change.channels === undefined ? undefined : p.check(() => assertPatterns('channels', change.channels!));
    const commands = change.commands === undefined ? undefined : p.check(() => assertCommands(change.commands!));
    p.throwIfAny();
    const patch = {
      ...(change.password !== undefined ? { password: change.password } : {}),
      ...(keys !== undefined ? { keys: keys.patterns } : {}),
      ...(channels !== undefined ? { channels: channels.patterns } : {}),
      ...(commands !== undefined ? { commands } : {}),
    };
    const warnings = [...(keys?.notes ?? []), ...(channels?.notes ?? [])];
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const now = this.deps.now();
    const detail = { service: 'redis', username, changed: Object.keys(patch).sort() };
    const { operation } = await recordAndApply(this.deps, inst, { kind: 'user.update', caller, origin, detail }, async (trx) => {
      const user = await findRedisUser(trx, this.deps.keyring, inst.id, username);
      if (!user || !(await updateRedisUser(trx, this.deps.keyring, user.id, patch, now))) throw errors.redisUserNotFound(username, name);
    });
    return { result: await this.get(caller, name, username), operation, warnings };
  }

  /** Deletes the user: the engines drop it, which closes its connections. */
  async delete(caller: Caller, name: string, username: string, origin: Origin = NO_ORIGIN): Promise<Started<void>> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const now = this.deps.now();
    return recordAndApply(this.deps, inst, { kind: 'user.delete', caller, origin, detail: { service: 'redis', username } }, async (trx) => {
      const user = await findRedisUser(trx, this.deps.keyring, inst.id, username);
      if (!user || !(await markRedisUserDeleting(trx, user.id, now))) throw errors.redisUserNotFound(username, name);
    });
  }
}

export function assertUserPassword(password: string): void {
  if (password.length < 8 || password.length > 256) throw errors.invalidValue('password', '"password" must be 8 to 256 characters');
  if (/[\x00-\x1f\x7f]/.test(password)) throw errors.invalidValue('password', '"password" must not hold control characters');
}

/**
 * The patterns to store, each checked (every problem thrown at once) and taken without the mark
 * Redis writes before it (`~app:*` is `app:*`), and a note for each pattern taken so.
 */
function assertPatterns(field: 'keys' | 'channels', given: readonly string[]): { patterns: string[]; notes: string[] } {
  const problems = new Problems();
  const patterns: string[] = [];
  const notes: string[] = [];
  given.forEach((p, i) => {
    const taken = takePattern(field, p);
    const problem = 'problem' in taken ? taken.problem : patternProblem(taken.pattern);
    if (problem) {
      problems.add(errors.invalidValue(`${field}[${i}]`, `"${field}[${i}]" ${JSON.stringify(p)} ${problem}`));
      return;
    }
    if ('pattern' in taken) {
      patterns.push(taken.pattern);
      if (taken.note) notes.push(`${field}[${i}] ${taken.note}`);
    }
  });
  problems.throwIfAny();
  return { patterns: [...new Set(patterns)], notes };
}

function assertCommands(rules: readonly string[]): string[] {
  const problems = new Problems();
  rules.forEach((r, i) => {
    const refused = ruleProblem(r);
    if (refused) problems.add(errors.invalidValue(`commands[${i}]`, `"commands[${i}]" ${refused.problem}`, refused.allowed));
  });
  problems.throwIfAny();
  return rules.map((r) => r.toLowerCase());
}
