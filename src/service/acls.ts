import { newObjectId } from '../lib/ids.js';
import { countAcls, findAcl, insertAcl, listAcls, markAclDeleting } from '../store/acl-repository.js';
import { bumpInstance, getSpecVersion } from '../store/instance-repository.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import { errors } from '../domain/errors.js';
import type { InstanceService, Started } from './instances.js';
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

  /** Records the ACL (and its operation), has the edge admit it, and returns its id. */
  async create(caller: Caller, name: string, input: AclInput, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    const instance = await this.instances.get(caller, name);
    const acl = assertAcl(input, instance.service);
    if (instance.deleting) throw errors.instanceDeleting(name);
    const { db, config } = this.deps;
    const now = this.deps.now();
    const id = newObjectId(now);
    const { operations } = this.deps;
    const operation = await db.transaction().execute(async (trx) => {
      const op = await operations.start(
        { kind: 'acl.add', instance: { id: instance.id, name }, account: caller.accountId, ...origin, detail: { acl_id: id, cidr_mask: acl.cidrMask } },
        trx,
      );
      if (!(await bumpInstance(trx, instance.id, {}, now, { notDeleting: true }))) throw errors.instanceDeleting(name);
      // Counted under the instance's lock: ACLs added at once cannot pass the quota together.
      if ((await countAcls(trx, instance.id)) >= config.maxAclsPerInstance) {
        throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
      }
      if (!(await insertAcl(trx, { ...acl, id, instanceId: instance.id, accountId: caller.accountId, createdAt: now }))) {
        throw errors.aclExists(acl.cidrMask, name);
      }
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, instance.id));
      this.step('acl-add:inserted');
      return op;
    });
    this.step('acl-add:recorded');
    await this.apply(instance.id);
    return { result: id, operation };
  }

  async delete(caller: Caller, name: string, aclId: string, origin: Origin = NO_ORIGIN): Promise<Started<void>> {
    const instance = await this.instances.get(caller, name);
    const { db, operations } = this.deps;
    const now = this.deps.now();
    const operation = await db.transaction().execute(async (trx) => {
      const op = await operations.start({ kind: 'acl.delete', instance: { id: instance.id, name }, account: caller.accountId, ...origin, detail: { acl_id: aclId } }, trx);
      if (!(await bumpInstance(trx, instance.id, {}, now))) throw errors.instanceNotFound(name);
      if (!(await markAclDeleting(trx, instance.id, aclId))) throw errors.aclNotFound(aclId, name);
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, instance.id));
      this.step('acl-delete:marked');
      return op;
    });
    this.step('acl-delete:recorded');
    await this.apply(instance.id);
    return { result: undefined, operation };
  }

  private async apply(instanceId: string): Promise<void> {
    const settled = this.deps.work.settle(instanceId, SETTLE_MS);
    this.deps.work.enqueue(instanceId);
    await settled;
  }
}
