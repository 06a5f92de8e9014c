import type { Instance } from '../domain/model.js';
import { expireAcls, nextAclExpiry } from '../store/acl-repository.js';
import { appendAuditEvent } from '../store/audit-repository.js';
import type { Db } from '../store/database.js';
import { endInstanceRotation } from '../store/instance-repository.js';
import { endDueRedisUserRotations, nextRedisUserRotationEnd } from '../store/redis-user-repository.js';

/**
 * Things that happen at a time rather than on a request: an ACL's expiry, the end of a password
 * rotation's grace period. A pass carries out whatever is due (recording each in the account's
 * audit log) and asks to run again at the next one, so the edge refuses an expired source at
 * its time, and a hangar that was down carries out what fell due meanwhile at its first pass.
 */

/** The longest a pass waits for a deadline before it runs again (timers cannot wait for weeks). */
const MAX_WAIT_MS = 3_600_000;

/** Carries out what is due at `now` for the instance; returns the instance as it is then. */
export async function carryOutDue(db: Db, inst: Instance, now: number): Promise<Instance> {
  let out = inst;
  await db.transaction().execute(async (trx) => {
    await expireAcls(trx, inst, now);
    const audit = (action: string, target: string) =>
      appendAuditEvent(trx, { accountId: inst.accountId, login: inst.login, action, target, sourceIp: null, outcome: 'success', statusCode: null, requestId: null, createdAt: now });
    if (inst.passwordRotationEndsAt !== null && inst.passwordRotationEndsAt <= now && (await endInstanceRotation(trx, inst.id, now, { dueAt: now }))) {
      await audit('instance.password.retire', `instance:${inst.name}`);
      out = { ...inst, passwordPrior: null, passwordRotationEndsAt: null };
    }
    for (const user of await endDueRedisUserRotations(trx, inst.id, now)) await audit('redis_user.password.retire', `instance:${inst.name}/user:${user}`);
  });
  return out;
}

/** How long until the instance's next deadline, bounded; undefined when none is to come. */
export async function untilNextDeadline(db: Db, inst: Instance, now: number): Promise<number | undefined> {
  const times = [
    await nextAclExpiry(db, inst.id, now),
    inst.passwordRotationEndsAt !== null && inst.passwordRotationEndsAt > now ? inst.passwordRotationEndsAt : undefined,
    await nextRedisUserRotationEnd(db, inst.id, now),
  ].filter((t): t is number => t !== undefined);
  if (times.length === 0) return undefined;
  return Math.min(MAX_WAIT_MS, Math.max(0, Math.min(...times) - now));
}
