import type { Acl } from '../domain/model.js';
import type { AclRow, Db } from './database.js';
import { isUniqueViolation } from './errors.js';
import { appendAuditEvent } from './audit-repository.js';

export function toAcl(row: AclRow): Acl {
  return {
    id: row.id,
    instanceId: row.instance_id,
    cidrMask: row.cidr_mask,
    description: row.description,
    transport: row.transport === 1,
    kibana: row.kibana === 1,
    createdAt: row.created_at,
    deleting: row.deleting === 1,
    expiresAt: row.expires_at == null ? null : Number(row.expires_at),
  };
}

export interface NewAcl {
  id: string;
  instanceId: string;
  accountId: string;
  cidrMask: string;
  description: string;
  transport: boolean;
  kibana: boolean;
  createdAt: number;
  /** When it stops admitting (epoch ms); null or left out: never. */
  expiresAt?: number | null;
}

export const aclValues = (a: NewAcl) => ({
  id: a.id,
  instance_id: a.instanceId,
  account_id: a.accountId,
  cidr_mask: a.cidrMask,
  description: a.description,
  transport: a.transport ? 1 : 0,
  kibana: a.kibana ? 1 : 0,
  created_at: a.createdAt,
  deleting: 0,
  expires_at: a.expiresAt ?? null,
});

/** Inserts an ACL; false when the same rule already exists on the instance. */
export async function insertAcl(db: Db, acl: NewAcl): Promise<boolean> {
  try {
    await db.insertInto('acls').values(aclValues(acl)).execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** ACLs of an instance; `withDeleting` includes those being removed from the edge (and expired ones not yet removed). */
export async function listAcls(db: Db, instanceId: string, withDeleting = false): Promise<Acl[]> {
  let q = db.selectFrom('acls').selectAll().where('instance_id', '=', instanceId);
  if (!withDeleting) q = q.where('deleting', '=', 0);
  const rows = await q.orderBy('created_at').orderBy('id').execute();
  return rows.map(toAcl);
}

/** The ACLs of an instance that admit at `now`: not being removed, not expired. */
export async function listLiveAcls(db: Db, instanceId: string, now: number): Promise<Acl[]> {
  const rows = await db
    .selectFrom('acls')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('deleting', '=', 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toAcl);
}

/** ACLs that count against the quota: those not being removed and not expired at `now`. */
export async function countAcls(db: Db, instanceId: string, now: number): Promise<number> {
  const r = await db
    .selectFrom('acls')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('instance_id', '=', instanceId)
    .where('deleting', '=', 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** One ACL that admits at `now`, or undefined. */
export async function findAcl(db: Db, instanceId: string, id: string, now: number): Promise<Acl | undefined> {
  const row = await db
    .selectFrom('acls')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirst();
  return row && toAcl(row);
}

/** Changes what a bulk replace keeps of an ACL that stays: its description and its expiry. */
export async function updateAcl(
  db: Db,
  instanceId: string,
  id: string,
  change: { description: string; expiresAt: number | null },
): Promise<void> {
  await db
    .updateTable('acls')
    .set({ description: change.description, expires_at: change.expiresAt })
    .where('instance_id', '=', instanceId)
    .where('id', '=', id)
    .execute();
}

/**
 * Takes back the removal of an ACL that is still being taken off the edge (same range and
 * flags), with a new description and expiry; returns its id, or undefined when there is none.
 */
export async function reviveAcl(
  db: Db,
  instanceId: string,
  rule: { cidrMask: string; transport: boolean; kibana: boolean; description: string; expiresAt: number | null },
): Promise<string | undefined> {
  const row = await db
    .selectFrom('acls')
    .select('id')
    .where('instance_id', '=', instanceId)
    .where('cidr_mask', '=', rule.cidrMask)
    .where('transport', '=', rule.transport ? 1 : 0)
    .where('kibana', '=', rule.kibana ? 1 : 0)
    .where('deleting', '=', 1)
    .executeTakeFirst();
  if (!row) return undefined;
  await db
    .updateTable('acls')
    .set({ deleting: 0, description: rule.description, expires_at: rule.expiresAt })
    .where('id', '=', row.id)
    .execute();
  return row.id;
}

/**
 * Marks the ACLs whose time has come (expires_at <= now) for removal from the edge, and returns
 * them. An expired ACL that was already marked is not returned again.
 */
export async function markExpiredAcls(db: Db, instanceId: string, now: number): Promise<Acl[]> {
  const rows = await db
    .selectFrom('acls')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('deleting', '=', 0)
    .where('expires_at', '<=', now)
    .execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  await db.updateTable('acls').set({ deleting: 1 }).where('instance_id', '=', instanceId).where('id', 'in', ids).execute();
  return rows.map(toAcl);
}

/**
 * Expires the instance's ACLs whose time has come: marks them for removal from the edge (the
 * reconciler takes them off and drops them) and records one `acl.expire` event each in the
 * account's audit log. Wherever the expiry is noticed first (a pass, a change of the ACLs), it
 * is recorded once. Run it in the transaction of the change that noticed it.
 */
export async function expireAcls(
  db: Db,
  inst: { id: string; name: string; accountId: string; login: string },
  now: number,
): Promise<Acl[]> {
  const expired = await markExpiredAcls(db, inst.id, now);
  for (const acl of expired) {
    await appendAuditEvent(db, {
      accountId: inst.accountId,
      login: inst.login,
      action: 'acl.expire',
      target: `instance:${inst.name}/acl:${acl.id}`,
      sourceIp: null,
      outcome: 'success',
      statusCode: null,
      requestId: null,
      createdAt: now,
    });
  }
  return expired;
}

/** Marks an ACL for removal; the reconciler takes it off the edge, then drops the row. */
export async function markAclDeleting(db: Db, instanceId: string, id: string): Promise<boolean> {
  const r = await db
    .updateTable('acls')
    .set({ deleting: 1 })
    .where('instance_id', '=', instanceId)
    .where('id', '=', id)
    .where('deleting', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function purgeDeletedAcls(db: Db, instanceId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('acls').where('instance_id', '=', instanceId).where('id', 'in', ids).where('deleting', '=', 1).execute();
}
