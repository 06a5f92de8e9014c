import { createHash } from 'node:crypto';
import { newObjectId } from '../lib/ids.js';
import { matcher, parseCidr, sameRange } from '../lib/cidr.js';
import {
  countAcls,
  expireAcls,
  findAcl,
  insertAcl,
  listAcls,
  listLiveAcls,
  markAclDeleting,
  reviveAcl,
  updateAcl,
} from '../store/acl-repository.js';
import { bumpInstance, getSpecVersion } from '../store/instance-repository.js';
import type { Db } from '../store/database.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps } from './deps.js';
import { type HangarError, allProblems, errors } from '../domain/errors.js';
import { accessGroups, type AccessGroup } from '../domain/endpoints.js';
import { productNamed } from '../engines/products.js';
import { toSpec } from '../engines/spec.js';
import type { AccessEnforcer, DeniedConnection } from '../domain/units.js';
import type { InstanceService, Started } from './instances.js';
import type { Acl, Instance } from '../domain/model.js';
import { aclFields, aclProblems, assertAcl, type AclInput, type ValidAcl } from './validate.js';

/** How long an ACL change waits for the edge before answering (it is durable either way). */
const SETTLE_MS = 2000;

/** The answer to "would this address get in?". */
export interface AclCheck {
  readonly instance: Instance;
  readonly ip: string;
  readonly admitted: boolean;
  /** The ACL that admits it (the most specific one), if any. */
  readonly acl: Acl | undefined;
}

/** One enforcer compared with the store. */
export interface EnforcerReport extends AccessEnforcer {
  readonly inSync: boolean;
  /** Sources the store admits that the enforcer does not, per group. */
  readonly missing: Partial<Record<AccessGroup, string[]>>;
  /** Sources the enforcer admits that the store does not, per group. */
  readonly extra: Partial<Record<AccessGroup, string[]>>;
}

export interface EffectiveAccess {
  readonly inSync: boolean;
  /** What the store asks, per access group. */
  readonly desired: Partial<Record<AccessGroup, string[]>>;
  readonly enforcers: readonly EnforcerReport[];
  readonly checkedAt: number;
}

/** The ETag of an ACL list: it changes whenever the list would read differently. */
export function aclsEtag(acls: readonly Acl[]): string {
  const h = createHash('sha256');
  for (const a of [...acls].sort((x, y) => x.id.localeCompare(y.id))) {
    h.update(JSON.stringify([a.id, a.cidrMask, a.description, a.transport, a.kibana, a.expiresAt]));
  }
  return `"${h.digest('hex').slice(0, 32)}"`;
}

/** Whether an If-Match header value lets a change of the list with ETag `etag` go on. */
function ifMatchAllows(header: string, etag: string): boolean {
  return header.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

/** One rule however its range is written (`a.b.c.d` and `a.b.c.d/32` are one). */
const ruleKey = (a: { cidrMask: string; transport: boolean; kibana: boolean }) =>
  `${parseCidr(a.cidrMask)?.text ?? a.cidrMask}|${a.transport}|${a.kibana}`;

/**
 * Per-instance network ACLs. A change is recorded, then enforced at the edge by the reconciler.
 *
 * Each change is one transaction that first bumps the instance's spec version (in PostgreSQL
 * that locks the instance's row, so changes to one instance, its deletion included, run one
 * after the other), then checks and writes the ACL. A crash leaves either both or neither.
 * ACLs whose expiry has passed are expired (and audited) by whichever comes first: a change
 * here, or the reconciler at that time.
 */
export class AclService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
  ) {
    this.step = requestStep(deps);
  }

  /** The instance's ACLs in force now (an expired one is gone from the list at once) and their ETag. */
  async list(caller: Caller, name: string): Promise<{ instance: Instance; acls: Acl[]; etag: string }> {
    const instance = await this.instances.get(caller, name);
    const acls = await listLiveAcls(this.deps.db, instance.id, this.deps.now());
    return { instance, acls, etag: aclsEtag(acls) };
  }

  async get(caller: Caller, name: string, aclId: string): Promise<{ instance: Instance; acl: Acl }> {
    const instance = await this.instances.get(caller, name);
    const acl = await findAcl(this.deps.db, instance.id, aclId, this.deps.now());
    if (!acl) throw errors.aclNotFound(aclId, name);
    return { instance, acl };
  }

  /**
   * The problems of an ACL body that each of its values has on its own, whatever the instance
   * (the flags are judged against its service by create): for an answer that names them all.
   */
  bodyProblems(body: unknown): readonly HangarError[] {
    return aclProblems(aclFields(body), undefined, this.deps.now()).problems;
  }

  /** Records the ACL (and its operation), has the edge admit it, and returns its id. */
  async create(caller: Caller, name: string, input: AclInput, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    const instance = await this.instances.get(caller, name);
    const { db, config } = this.deps;
    const now = this.deps.now();
    const acl = assertAcl(input, { service: instance.service, groups: productNamed(instance.engine).features.aclGroups }, now);
    if (instance.deleting) throw errors.instanceDeleting(name);
    const id = newObjectId(now);
    const { operations } = this.deps;
    const operation = await db.transaction().execute(async (trx) => {
      const op = await operations.start(
        {
          kind: 'acl.add',
          instance: { id: instance.id, name },
          account: caller.accountId,
          ...origin,
          detail: { acl_id: id, cidr_mask: acl.cidrMask },
        },
        trx,
      );
      if (!(await bumpInstance(trx, instance.id, {}, now, { notDeleting: true }))) throw errors.instanceDeleting(name);
      // An expired ACL for the same range must not stand in the way of a new one.
      await expireAcls(trx, instance, now);
      // Counted under the instance's lock: ACLs added at once cannot pass the quota together.
      if ((await countAcls(trx, instance.id, now)) >= config.maxAclsPerInstance) {
        throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
      }
      // The same range however written (`a.b.c.d` and `a.b.c.d/32`) is one rule: the store's
      // unique key sees the text only, so the range is compared here, under the instance's lock.
      const same = (await listAcls(trx, instance.id, true)).find(
        (a) => a.transport === acl.transport && a.kibana === acl.kibana && sameRange(a.cidrMask, acl.cidrMask),
      );
      if (same) throw errors.aclExists(same.cidrMask, name);
      if (!(await insertAcl(trx, { ...acl, id, instanceId: instance.id, accountId: caller.accountId, createdAt: now }))) {
        throw errors.aclExists(acl.cidrMask, name);
      }
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, instance.id));
      this.step('acl-add:inserted');
      return op;
    });
    this.step('acl-add:recorded');
    await this.apply(instance.id);
    return { result: id, operation, warnings: acl.warnings };
  }

  async delete(caller: Caller, name: string, aclId: string, origin: Origin = NO_ORIGIN): Promise<Started<void>> {
    const instance = await this.instances.get(caller, name);
    const { db, operations } = this.deps;
    const now = this.deps.now();
    const operation = await db.transaction().execute(async (trx) => {
      const op = await operations.start(
        { kind: 'acl.delete', instance: { id: instance.id, name }, account: caller.accountId, ...origin, detail: { acl_id: aclId } },
        trx,
      );
      if (!(await bumpInstance(trx, instance.id, {}, now))) throw errors.instanceNotFound(name);
      if (!(await findAcl(trx, instance.id, aclId, now)) || !(await markAclDeleting(trx, instance.id, aclId)))
        throw errors.aclNotFound(aclId, name);
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, instance.id));
      this.step('acl-delete:marked');
      return op;
    });
    this.step('acl-delete:recorded');
    await this.apply(instance.id);
    return { result: undefined, operation };
  }

  /**
   * Replaces the whole list in one transaction: ACLs of the new list that exist already (same
   * range and flags) stay as they are (their description and expiry follow the new list), the
   * others are added, and those left out are removed. The edge gets the difference: nothing it
   * keeps is ever taken away meanwhile. With `ifMatch`, the list must still have that ETag.
   */
  async replace(
    caller: Caller,
    name: string,
    inputs: readonly AclInput[],
    ifMatch: string | undefined,
    origin: Origin = NO_ORIGIN,
  ): Promise<Started<{ instance: Instance; acls: Acl[]; etag: string }>> {
    const instance = await this.instances.get(caller, name);
    const { db, config, operations } = this.deps;
    const now = this.deps.now();
    // Every item is judged, so that one answer names the problems of all of them.
    const on = { service: instance.service, groups: productNamed(instance.engine).features.aclGroups };
    const judged = inputs.map((a, i) => aclProblems(a, on, now, `[${i}].`));
    const problems = judged.flatMap((j) => j.problems);
    if (problems.length > 0) throw allProblems(problems);
    const wanted = judged.map((j) => j.acl!);
    const seen = new Set<string>();
    for (const a of wanted) {
      if (seen.has(ruleKey(a))) throw errors.invalidValue('cidr_mask', `the list holds ${a.cidrMask} twice`);
      seen.add(ruleKey(a));
    }
    if (wanted.length > config.maxAclsPerInstance) throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
    if (instance.deleting) throw errors.instanceDeleting(name);
    const operation = await db.transaction().execute(async (trx) => {
      const op = await operations.start(
        {
          kind: 'acl.replace',
          instance: { id: instance.id, name },
          account: caller.accountId,
          ...origin,
          detail: { cidr_masks: wanted.map((w) => w.cidrMask) },
        },
        trx,
      );
      if (!(await bumpInstance(trx, instance.id, {}, now, { notDeleting: true }))) throw errors.instanceDeleting(name);
      await expireAcls(trx, instance, now);
      const current = await listLiveAcls(trx, instance.id, now);
      const etag = aclsEtag(current);
      if (ifMatch !== undefined && !ifMatchAllows(ifMatch, etag)) throw errors.preconditionFailed(etag);
      await this.applyList(trx, instance, caller, current, wanted, now);
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, instance.id));
      return op;
    });
    // applied even when nothing changed: the operation completes with the pass that carries its version out
    await this.apply(instance.id);
    return { result: await this.list(caller, name), operation, warnings: wanted.flatMap((w) => w.warnings) };
  }

  /** Writes the difference between `current` and `wanted`; says whether anything changed. */
  private async applyList(
    trx: Db,
    instance: Instance,
    caller: Caller,
    current: readonly Acl[],
    wanted: readonly ValidAcl[],
    now: number,
  ): Promise<boolean> {
    const byKey = new Map(current.map((a) => [ruleKey(a), a]));
    let changed = false;
    for (const w of wanted) {
      const kept = byKey.get(ruleKey(w));
      if (kept) {
        byKey.delete(ruleKey(w));
        if (kept.description !== w.description || kept.expiresAt !== w.expiresAt) {
          await updateAcl(trx, instance.id, kept.id, { description: w.description, expiresAt: w.expiresAt });
          changed = true;
        }
        continue;
      }
      // one being removed (deleted or expired a moment ago) is kept after all
      if (
        (await reviveAcl(trx, instance.id, w)) === undefined &&
        !(await insertAcl(trx, { ...w, id: newObjectId(now), instanceId: instance.id, accountId: caller.accountId, createdAt: now }))
      ) {
        throw errors.aclExists(w.cidrMask, instance.name);
      }
      changed = true;
    }
    for (const gone of byKey.values()) {
      await markAclDeleting(trx, instance.id, gone.id);
      changed = true;
    }
    return changed;
  }

  /** Whether the edge would admit `ip` on the instance's client listeners, and which ACL admits it. */
  async check(caller: Caller, name: string, ip: string): Promise<AclCheck> {
    const parsed = parseCidr(ip);
    if (!parsed || parsed.text.includes('/')) {
      throw errors.invalidValue('ip', `"ip" must be one IPv4 or IPv6 address (not a range); got ${JSON.stringify(ip)}`);
    }
    const instance = await this.instances.get(caller, name);
    const acls = await listLiveAcls(this.deps.db, instance.id, this.deps.now());
    // Kibana ACLs open Kibana only: the client listeners obey the others.
    const admitting = acls.filter((a) => !a.kibana && matcher([a.cidrMask])(parsed.text));
    const best = admitting.sort((a, b) => (parseCidr(b.cidrMask)?.prefix ?? 0) - (parseCidr(a.cidrMask)?.prefix ?? 0))[0];
    return { instance, ip: parsed.text, admitted: best !== undefined, acl: best };
  }

  /** What the instance's edge (or NetworkPolicy) enforces right now, compared with the store. */
  async effective(caller: Caller, name: string): Promise<EffectiveAccess> {
    const instance = await this.instances.get(caller, name);
    const zone = this.deps.zones.get(instance.zone);
    const now = this.deps.now();
    const acls = await listLiveAcls(this.deps.db, instance.id, now);
    const groups = accessGroups(
      productNamed(instance.engine).edgeRoutes(instance.type, instance.ports),
      acls.map((a) => ({ cidr: a.cidrMask, transport: a.transport, kibana: a.kibana })),
    );
    const desired: Partial<Record<AccessGroup, string[]>> = Object.fromEntries(
      [...groups].map(([g, list]) => [g, [...new Set(list)].sort()]),
    );
    const enforcers: AccessEnforcer[] = zone
      ? await zone
          .effectiveAccess(toSpec(instance))
          .catch((err: unknown) => [{ name: 'edge', groups: {}, problem: (err as Error).message }])
      : [{ name: 'edge', groups: {}, problem: `zone "${instance.zone}" is not configured on this hangar` }];
    const reports = enforcers.map((e) => compare(e, desired));
    return { inSync: reports.length > 0 && reports.every((r) => r.inSync), desired, enforcers: reports, checkedAt: now };
  }

  /** The last connections the instance's edge refused (newest first). */
  async denied(caller: Caller, name: string, limit: number): Promise<DeniedConnection[]> {
    const instance = await this.instances.get(caller, name);
    const zone = this.deps.zones.get(instance.zone);
    if (!zone) return [];
    return zone.deniedConnections(toSpec(instance), limit);
  }

  private async apply(instanceId: string): Promise<void> {
    const settled = this.deps.work.settle(instanceId, SETTLE_MS);
    this.deps.work.enqueue(instanceId);
    await settled;
  }
}

function compare(e: AccessEnforcer, desired: Partial<Record<AccessGroup, string[]>>): EnforcerReport {
  const missing: Partial<Record<AccessGroup, string[]>> = {};
  const extra: Partial<Record<AccessGroup, string[]>> = {};
  if (e.problem === undefined) {
    for (const group of Object.keys(desired) as AccessGroup[]) {
      const want = desired[group] ?? [];
      const have = e.groups[group] ?? [];
      const m = want.filter((c) => !have.includes(c));
      const x = have.filter((c) => !want.includes(c));
      if (m.length > 0) missing[group] = m;
      if (x.length > 0) extra[group] = x;
    }
  }
  const inSync = e.problem === undefined && Object.keys(missing).length === 0 && Object.keys(extra).length === 0;
  return { ...e, inSync, missing, extra };
}
