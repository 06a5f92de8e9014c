import type { Acl } from '../domain/model.js';
import type { AclRow, Db } from './database.js';
import { isUniqueViolation } from './errors.js';

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

/** ACLs of an instance; `withDeleting` includes those being removed from the edge. */
export async function listAcls(db: Db, instanceId: string, withDeleting = false): Promise<Acl[]> {
  let q = db.selectFrom('acls').selectAll().where('instance_id', '=', instanceId);
  if (!withDeleting) q = q.where('deleting', '=', 0);
  const rows = await q.orderBy('created_at').orderBy('id').execute();
  return rows.map(toAcl);
}

export async function countAcls(db: Db, instanceId: string): Promise<number> {
  const r = await db.selectFrom('acls').select((eb) => eb.fn.countAll<number>().as('n')).where('instance_id', '=', instanceId).where('deleting', '=', 0).executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function findAcl(db: Db, instanceId: string, id: string): Promise<Acl | undefined> {
  const row = await db.selectFrom('acls').selectAll().where('instance_id', '=', instanceId).where('id', '=', id).where('deleting', '=', 0).executeTakeFirst();
  return row && toAcl(row);
}

/** Marks an ACL for removal; the reconciler takes it off the edge, then drops the row. */
export async function markAclDeleting(db: Db, instanceId: string, id: string): Promise<boolean> {
  const r = await db.updateTable('acls').set({ deleting: 1 }).where('instance_id', '=', instanceId).where('id', '=', id).where('deleting', '=', 0).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function purgeDeletedAcls(db: Db, instanceId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('acls').where('instance_id', '=', instanceId).where('id', 'in', ids).where('deleting', '=', 1).execute();
}
