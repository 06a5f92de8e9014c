import { sameRange } from '../lib/cidr.js';
import { newObjectId } from '../lib/ids.js';
import { countAcls, findAcl, insertAcl, listAcls, markAclDeleting } from '../store/acl-repository.js';
import { bumpInstance } from '../store/instance-repository.js';
import { requestStep, type Caller, type ServiceDeps } from './deps.js';
import { errors } from '../domain/errors.js';
import type { InstanceService } from './instances.js';
import type { Acl, Instance } from '../domain/model.js';
import { assertAcl, type AclInput } from './validate.js';

/** How long an ACL change waits for the edge before answering (it is durable either way). */
const SETTLE_MS = 2000;

/**
 * Per-instance network ACLs. A change is recorded, then enforced at the edge by the reconciler.
 *
 * Each change is one transaction that first bumps the instance's spec version (in PostgreSQL
 * that locks the instance's row, so changes to one instance, its deletion included, run one
 * after the other), then checks and writes the ACL. A crash leaves either both or neither.
 */
export class AclService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
  ) {
    this.step = requestStep(deps);
  }

  async list(caller: Caller, name: string): Promise<{ instance: Instance; acls: Acl[] }> {
    const instance = await this.instances.get(caller, name);
    return { instance, acls: await listAcls(this.deps.db, instance.id) };
  }

  async get(caller: Caller, name: string, aclId: string): Promise<{ instance: Instance; acl: Acl }> {
    const instance = await this.instances.get(caller, name);
    const acl = await findAcl(this.deps.db, instance.id, aclId);
    if (!acl) throw errors.aclNotFound(aclId, name);
    return { instance, acl };
  }

  /** Records the ACL, has the edge admit it, and returns its id. */
  async create(caller: Caller, name: string, input: AclInput): Promise<string> {
    const instance = await this.instances.get(caller, name);
    const acl = assertAcl(input, instance.service);
    if (instance.deleting) throw errors.instanceDeleting(name);
    const { db, config } = this.deps;
    const now = this.deps.now();
    const id = newObjectId(now);
    await db.transaction().execute(async (trx) => {
      if (!(await bumpInstance(trx, instance.id, {}, now, { notDeleting: true }))) throw errors.instanceDeleting(name);
      // Counted under the instance's lock: ACLs added at once cannot pass the quota together.
      if ((await countAcls(trx, instance.id)) >= config.maxAclsPerInstance) {
        throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
      }
      // The same range however written (`a.b.c.d` and `a.b.c.d/32`) is one rule: the store's
      // unique key sees the text only, so the range is compared here, under the instance's lock.
      const same = (await listAcls(trx, instance.id, true)).find((a) => a.transport === acl.transport && a.kibana === acl.kibana && sameRange(a.cidrMask, acl.cidrMask));
      if (same) throw errors.aclExists(same.cidrMask, name);
      if (!(await insertAcl(trx, { ...acl, id, instanceId: instance.id, accountId: caller.accountId, createdAt: now }))) {
        throw errors.aclExists(acl.cidrMask, name);
      }
      this.step('acl-add:inserted');
    });
    this.step('acl-add:recorded');
    await this.apply(instance.id);
    return id;
  }

  async delete(caller: Caller, name: string, aclId: string): Promise<void> {
    const instance = await this.instances.get(caller, name);
    const { db } = this.deps;
    const now = this.deps.now();
    await db.transaction().execute(async (trx) => {
      if (!(await bumpInstance(trx, instance.id, {}, now))) throw errors.instanceNotFound(name);
      if (!(await markAclDeleting(trx, instance.id, aclId))) throw errors.aclNotFound(aclId, name);
      this.step('acl-delete:marked');
    });
    this.step('acl-delete:recorded');
    await this.apply(instance.id);
  }

  private async apply(instanceId: string): Promise<void> {
    const settled = this.deps.work.settle(instanceId, SETTLE_MS);
    this.deps.work.enqueue(instanceId);
    await settled;
  }
}
