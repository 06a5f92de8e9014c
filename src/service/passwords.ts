import { randomHex } from '../lib/ids.js';
import { endInstanceRotation, startInstanceRotation } from '../store/instance-repository.js';
import { findRedisUser, finishRedisUserRotation, startRedisUserRotation } from '../store/redis-user-repository.js';
import { bumpInstance } from '../store/instance-repository.js';
import { errors } from '../domain/errors.js';
import type { Caller, ServiceDeps } from './deps.js';
import type { InstanceService } from './instances.js';
import { USER_SETTLE_MS, recordAndApply, redisInstanceOf } from './redis-users.js';

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

  async rotateInstance(caller: Caller, name: string): Promise<Rotation> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    if (inst.passwordPrior !== null) throw errors.rotationInProgress(`instance "${name}"`);
    const now = this.deps.now();
    const password = randomHex(16);
    const endsAt = this.endsAt(now);
    if (!(await startInstanceRotation(this.deps.db, this.deps.keyring, inst, password, endsAt, now))) {
      const current = await this.instances.find(caller, name);
      if (current?.deleting) throw errors.instanceDeleting(name);
      throw errors.rotationInProgress(`instance "${name}"`);
    }
    await this.apply(inst.id);
    return { password, previousValidUntil: endsAt };
  }

  /** Retires the instance's old password now; says whether there was one to retire. */
  async finishInstance(caller: Caller, name: string): Promise<boolean> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const retired = await endInstanceRotation(this.deps.db, inst.id, this.deps.now());
    if (retired) await this.apply(inst.id);
    return retired;
  }

  async rotateUser(caller: Caller, name: string, username: string): Promise<Rotation> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const now = this.deps.now();
    const password = randomHex(16);
    const endsAt = this.endsAt(now);
    await recordAndApply(this.deps, inst, async (trx) => {
      const user = await findRedisUser(trx, this.deps.keyring, inst.id, username);
      if (!user) throw errors.redisUserNotFound(username, name);
      if (!(await startRedisUserRotation(trx, this.deps.keyring, user, password, endsAt, now))) throw errors.rotationInProgress(`user "${username}" of instance "${name}"`);
    });
    return { password, previousValidUntil: endsAt };
  }

  async finishUser(caller: Caller, name: string, username: string): Promise<boolean> {
    const inst = await redisInstanceOf(this.instances, caller, name);
    const now = this.deps.now();
    const user = await findRedisUser(this.deps.db, this.deps.keyring, inst.id, username);
    if (!user) throw errors.redisUserNotFound(username, name);
    const retired = await this.deps.db.transaction().execute(async (trx) => {
      const done = await finishRedisUserRotation(trx, user.id, now);
      if (done) await bumpInstance(trx, inst.id, {}, now);
      return done;
    });
    if (retired) await this.apply(inst.id);
    return retired;
  }

  private async apply(instanceId: string): Promise<void> {
    const settled = this.deps.work.settle(instanceId, USER_SETTLE_MS);
    this.deps.work.enqueue(instanceId);
    await settled;
  }
}
