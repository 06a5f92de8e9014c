import { randomHex } from '../lib/ids.js';
import { endInstanceRotation, startInstanceRotation } from '../store/instance-repository.js';
import { findRedisUser, finishRedisUserRotation, startRedisUserRotation } from '../store/redis-user-repository.js';
import { errors } from '../domain/errors.js';
import type { Db } from '../store/database.js';
import type { Instance } from '../domain/model.js';
import type { Operation } from '../domain/operations.js';
import { NO_ORIGIN, type Caller, type Origin, type ServiceDeps } from './deps.js';
import type { InstanceService, Started } from './instances.js';
import { type ChangeOperation, recordAndApply, redisInstanceOf } from './redis-users.js';

/** Thrown in a finish's transaction when no rotation runs (its operation is undone with it). */
const NOTHING_TO_RETIRE = new Error('no rotation to finish');

export interface Rotation {
  /** The new password: the record shows it from now on. */
  readonly password: string;
  /** Until when the old one works too (epoch ms). */
  readonly previousValidUntil: number;
}

/**
 * Password rotation without downtime, for the instance password and for each Redis user: a
 * new password is added next to the old one and returned; both work until the grace period
 * (HANGAR_PASSWORD_GRACE) ends or the rotation is finished, then the old one is retired (by the
 * reconciler at its time). Clients move to the new password meanwhile, without an outage.
 */
export class PasswordService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
  ) {}

  private endsAt(now: number): number {
    return now + this.deps.config.passwordGraceSeconds * 1000;
  }

  async rotateInstance(caller: Caller, name: string, origin: Origin = NO_ORIGIN): Promise<Started<Rotation>> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    if (inst.passwordPrior !== null) throw errors.rotationInProgress(`instance "${name}"`);
    const now = this.deps.now();
    const password = randomHex(16);
    const endsAt = this.endsAt(now);
    const { operation } = await recordAndApply(
      this.deps,
      inst,
      { kind: 'password.rotate', caller, origin, detail: { service: 'redis', previous_valid_until: endsAt } },
      async (trx) => {
        if (!(await startInstanceRotation(trx, this.deps.keyring, inst, password, endsAt, now)))
          throw errors.rotationInProgress(`instance "${name}"`);
      },
    );
    return { result: { password, previousValidUntil: endsAt }, operation };
  }

  /** Retires the instance's old password now; says whether there was one to retire (and the operation that does, if so). */
  async finishInstance(caller: Caller, name: string, origin: Origin = NO_ORIGIN): Promise<{ retired: boolean; operation?: Operation }> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const now = this.deps.now();
    return this.finish(inst, { kind: 'password.finish', caller, origin, detail: { service: 'redis' } }, (trx) =>
      endInstanceRotation(trx, inst.id, now),
    );
  }

  async rotateUser(caller: Caller, name: string, username: string, origin: Origin = NO_ORIGIN): Promise<Started<Rotation>> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const now = this.deps.now();
    const password = randomHex(16);
    const endsAt = this.endsAt(now);
    const detail = { service: 'redis', username, previous_valid_until: endsAt };
    const { operation } = await recordAndApply(this.deps, inst, { kind: 'password.rotate', caller, origin, detail }, async (trx) => {
      const user = await findRedisUser(trx, this.deps.keyring, inst.id, username);
      if (!user) throw errors.redisUserNotFound(username, name);
      if (!(await startRedisUserRotation(trx, this.deps.keyring, user, password, endsAt, now)))
        throw errors.rotationInProgress(`user "${username}" of instance "${name}"`);
    });
    return { result: { password, previousValidUntil: endsAt }, operation };
  }

  async finishUser(
    caller: Caller,
    name: string,
    username: string,
    origin: Origin = NO_ORIGIN,
  ): Promise<{ retired: boolean; operation?: Operation }> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const now = this.deps.now();
    const user = await findRedisUser(this.deps.db, this.deps.keyring, inst.id, username);
    if (!user) throw errors.redisUserNotFound(username, name);
    return this.finish(inst, { kind: 'password.finish', caller, origin, detail: { service: 'redis', username } }, (trx) =>
      finishRedisUserRotation(trx, user.id, now),
    );
  }

  /** Ends a rotation now, as an operation; nothing (no operation) when there was none to end. */
  private async finish(
    inst: Instance,
    op: ChangeOperation,
    retire: (trx: Db) => Promise<boolean>,
  ): Promise<{ retired: boolean; operation?: Operation }> {
    try {
      const { operation } = await recordAndApply(this.deps, inst, op, async (trx) => {
        if (!(await retire(trx))) throw NOTHING_TO_RETIRE;
      });
      return { retired: true, operation };
    } catch (err) {
      if (err === NOTHING_TO_RETIRE) return { retired: false };
      throw err;
    }
  }
}
