import type { Acl, Instance, RedisUser } from '../domain/model.js';
import { expireAcls } from '../store/acl-repository.js';
import { appendAuditEvent } from '../store/audit-repository.js';
import type { Db } from '../store/database.js';
import { endInstanceRotation } from '../store/instance-repository.js';
import { endDueRedisUserRotations } from '../store/redis-user-repository.js';

/**
 * Things that happen at a time rather than on a request: an ACL's expiry, the end of a password
 * rotation's grace period. A pass carries out whatever is due (recording each in the account's
 * audit log) and asks to run again at the next one, so the edge refuses an expired source at
 * its time, and a hangar that was down carries out what fell due meanwhile at its first pass.
 *
 * A pass reads the instance's ACLs and users anyway: whether anything is due, and when the next
 * deadline is, are read off those (no statement of their own); only a pass with something due
 * opens a transaction to carry it out.
 */

/** What of an instance has a deadline: its ACLs and (redis) its users, as a pass reads them (those being removed too). */
export interface Timed {
  readonly acls: readonly Pick<Acl, 'deleting' | 'expiresAt'>[];
  readonly users: readonly Pick<RedisUser, 'rotationEndsAt'>[];
}

/** The longest a pass waits for a deadline before it runs again (timers cannot wait for weeks). */
const MAX_WAIT_MS = 3_600_000;

/**
 * Whether anything is due at `now`: an ACL's expiry (of one not being removed already), the end
 * of the instance's or of a user's rotation: what carryOutDue would carry out.
 */
export function anythingDue(inst: Instance, timed: Timed, now: number): boolean {
  if (inst.passwordRotationEndsAt !== null && inst.passwordRotationEndsAt <= now) return true;
  if (timed.acls.some((a) => !a.deleting && a.expiresAt !== null && a.expiresAt <= now)) return true;
  return timed.users.some((u) => u.rotationEndsAt !== null && u.rotationEndsAt <= now);
}

/** Carries out what is due at `now` for the instance; returns the instance as it is then. */
export async function carryOutDue(db: Db, inst: Instance, now: number): Promise<Instance> {
  let out = inst;
  await db.transaction().execute(async (trx) => {
    await expireAcls(trx, inst, now);
    const audit = (action: string, target: string) =>
      appendAuditEvent(trx, {
        accountId: inst.accountId,
        login: inst.login,
        action,
        target,
        sourceIp: null,
        outcome: 'success',
        statusCode: null,
        requestId: null,
        createdAt: now,
      });
    if (
      inst.passwordRotationEndsAt !== null &&
      inst.passwordRotationEndsAt <= now &&
      (await endInstanceRotation(trx, inst.id, now, { dueAt: now }))
    ) {
      await audit('instance.password.retire', `instance:${inst.name}`);
      out = { ...inst, passwordPrior: null, passwordRotationEndsAt: null };
    }
    for (const user of await endDueRedisUserRotations(trx, inst.id, now))
      await audit('redis_user.password.retire', `instance:${inst.name}/user:${user}`);
  });
  return out;
}

/**
 * How long from `now` until the instance's next deadline after `after` (when the pass carried out
 * what was due), bounded; 0 for one that came due since; undefined when none is to come.
 */
export function untilNextDeadline(inst: Instance, timed: Timed, after: number, now: number): number | undefined {
  let next = Infinity;
  const consider = (t: number | null) => {
    if (t !== null && t > after && t < next) next = t;
  };
  for (const a of timed.acls) if (!a.deleting) consider(a.expiresAt);
  consider(inst.passwordRotationEndsAt);
  for (const u of timed.users) consider(u.rotationEndsAt);
  if (next === Infinity) return undefined;
  return Math.min(MAX_WAIT_MS, Math.max(0, next - now));
}
