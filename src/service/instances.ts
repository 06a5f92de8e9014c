import { parseCidr } from '../lib/cidr.js';
import { newBuildId, newObjectId, randomHex } from '../lib/ids.js';
import { sleep } from '../lib/time.js';
import {
  PortRaceError,
  bumpInstance,
  countInstances,
  createInstance,
  findInstanceById,
  findInstanceByName,
  findOwnedInstance,
  getInstanceListVersion,
  getSpecVersion,
  findNameHolder,
  listInstances,
  renameInstance,
} from '../store/instance-repository.js';
import type { NewAcl } from '../store/acl-repository.js';
import { insertRestore } from '../store/backup-repository.js';
import { INSTANCE_TYPES, PLANS, SERVICES, isService, type InstanceType, type Service } from '../domain/catalog.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps, type ZoneView } from './deps.js';
import type { Operation } from '../domain/operations.js';
import type { ZoneService } from './zones.js';
import { PRODUCTS, firstProductOf, productNamed, productsOf } from '../engines/products.js';
import { chooseEngine, serviceOffering } from '../engines/registry.js';
import type { Product } from '../engines/product.js';
import { type HangarError, allProblems, errors } from '../domain/errors.js';
import type { Offerings } from '../domain/units.js';
import type { Instance, PortMap } from '../domain/model.js';
import { pickFreePorts } from '../store/ports.js';
import { Problems, aclFields, aclProblems, assertAcl, assertInstanceName, assertOneOf, type AclInput } from './validate.js';

/** The 404 of the spec's service routes (`/v2/redis/<name>/...`, `/v2/mongodb/<id>/...`): their own words. */
const NOT_FOUND_IN: Partial<Record<Service, (given: string) => HangarError>> = {
  redis: errors.notARedisInstance,
  mongodb: errors.notAMongodbInstance,
  elasticsearch: errors.notAnElasticsearchInstance,
};

/**
 * The 404 of a request about one instance: none the caller owns by that name (or id), or one
 * of another service than the request is for (`service`). Another account's instance is none,
 * with the same answer byte for byte.
 */
export function assertInstanceFits<T extends { service: string }>(found: T | undefined, given: string, service?: Service): T {
  if (!found) throw (service ? NOT_FOUND_IN[service] : undefined)?.(given) ?? errors.instanceNotFound(given);
  if (service !== undefined && found.service !== service) throw errors.wrongService(given, found.service, service);
  return found;
}

export interface CreateInstanceInput {
  readonly name: string;
  readonly plan: number;
  readonly service: string;
  readonly type: string;
  readonly version: string;
  readonly zone: string;
  /** The product to run it; default: the first of its service the zone can run. */
  readonly engine?: string;
  readonly encryption?: boolean;
  readonly storage_engine?: string;
  readonly acls?: readonly AclInput[];
  /** A backup id: the instance is built, then restored from it. */
  readonly restore_from?: string;
}

/** What a create with `restore_from` needs of the backups. */
export interface RestoreSources {
  /** The caller's backup that an instance of `service` on `plan` can be restored from, or the 4xx saying why not. */
  restorable(
    caller: Caller,
    backupId: string,
    service: string,
    plan: number,
    field: string,
    format?: string,
  ): Promise<{ readonly id: string }>;
  /** Gives a new instance the default backup policy. */
  applyDefaultPolicy(inst: { readonly id: string; readonly accountId: string }): Promise<void>;
}

/** A change that started an operation: its answer, and the operation. */
export interface Started<T> {
  readonly result: T;
  readonly operation: Operation;
  /** What the caller is told besides (an HTTP Warning each): what was done otherwise than asked, or what it risks. */
  readonly warnings?: readonly string[];
}

/** Thrown in a rename's transaction when another request renamed or deleted the instance first. */
const NOT_RENAMED = new Error('not renamed');

/**
 * Instances: list, create, read, rename, delete. Slow work is left to the reconciler; each
 * change is recorded with its operation, in one transaction.
 */
export class InstanceService {
  private readonly step: (name: string) => void;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly zones: ZoneService,
    private readonly backups?: RestoreSources,
  ) {
    this.step = requestStep(deps);
  }

  async list(caller: Caller): Promise<Instance[]> {
    return listInstances(this.deps.db, this.deps.keyring, caller.accountId);
  }

  /**
   * A number that changes whenever any of the caller's instance records would read differently
   * (created, deleted, renamed, state, plan...): what was rendered at one version can be reused
   * while the version stays the same.
   */
  recordsVersion(caller: Caller): Promise<number> {
    return getInstanceListVersion(this.deps.db, caller.accountId);
  }

  /** The caller's instance by name; another account's instance is the same 404 as none. */
  async get(caller: Caller, name: string): Promise<Instance> {
    const inst = await this.find(caller, name);
    if (!inst) throw errors.instanceNotFound(name);
    return inst;
  }

  async find(caller: Caller, name: string): Promise<Instance | undefined> {
    return findInstanceByName(this.deps.db, this.deps.keyring, caller.accountId, name);
  }

  /**
   * The owner check of a request about one instance, before anything of the request is read:
   * throws its 404 unless the caller owns an instance by that name (`byId`: or id) that is of
   * `service` when given. No secret is read.
   */
  async assertOwned(caller: Caller, given: string, opts: { byId?: boolean; service?: Service } = {}): Promise<void> {
    assertInstanceFits(await findOwnedInstance(this.deps.db, caller.accountId, given, opts), given, opts.service);
  }

  /** The caller's instance by id, or by name when no id matches. */
  async getByIdOrName(caller: Caller, idOrName: string): Promise<Instance | undefined> {
    const byId = await findInstanceById(this.deps.db, this.deps.keyring, idOrName);
    if (byId && byId.accountId === caller.accountId) return byId;
    return findInstanceByName(this.deps.db, this.deps.keyring, caller.accountId, idOrName);
  }

  /**
   * Every problem of a create body that can be judged on its own, in this order: the service,
   * the name, and, once the service is known, its type, plan, zone, version (once the zone is known),
   * encryption, storage engine, and each ACL; not only the first, so that a client can fix them
   * all in one round trip. A field that is missing or of the wrong JSON type is the schema's to
   * name, and is left out here. Reads nothing stored.
   */
  createProblems(body: unknown): readonly HangarError[] {
    const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    const text = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : undefined);
    const p = new Problems();
    const given = text('service');
    if (given !== undefined && !isService(given)) {
      p.add(errors.invalidValue('service', `"service" ${JSON.stringify(given)} is not a service`, SERVICES));
    }
    const service = given !== undefined && isService(given) ? given : undefined;
    let product: Product | undefined;
    const name = text('name');
    if (name !== undefined) p.check(() => assertInstanceName(name));
    if (service !== undefined) {
      const type = text('type');
      if (type !== undefined)
        p.check(() => assertOneOf('type', type, INSTANCE_TYPES[service] as readonly string[], `"type" of a ${service} instance`));
      const plan = b.plan;
      if (Number.isInteger(plan)) p.check(() => assertOneOf('plan', plan as number, PLANS[service], `"plan" of a ${service} instance`));
      const zoneName = text('zone');
      const zone = zoneName === undefined ? undefined : p.check(() => this.zones.zoneFor(service, zoneName));
      // The engine the create gets: the one named, else the zone's default (one that cannot run
      // here is a 422 of its own, in create); its product says what the body may carry.
      const named = text('engine');
      const names = productsOf(service).map((x) => x.name);
      if (named !== undefined && !names.includes(named)) {
        p.add(errors.invalidValue('engine', `"engine" of a ${service} instance ${JSON.stringify(named)} is not allowed`, names));
      }
      const choice = zone ? serviceOffering(zone.engines.offerings(), service) : undefined;
      const offering = named === undefined ? choice?.default : choice?.engines.find((e) => e.engine === named && e.available);
      product = offering
        ? productNamed(offering.engine)
        : named !== undefined && names.includes(named)
          ? productNamed(named)
          : firstProductOf(service);
      if (b.encryption === true && !product.features.encryption) {
        const encryptable = [...new Set(PRODUCTS.filter((x) => x.features.encryption).map((x) => x.service))].sort();
        p.add(errors.invalidValue('encryption', `"encryption" applies to ${encryptable.join(' and ')} instances only`));
      }
      const storageEngine = text('storage_engine');
      const storageEngines = product.features.storageEngines;
      if (storageEngine !== undefined) {
        if (!storageEngines) {
          const services = [...new Set(PRODUCTS.filter((x) => x.features.storageEngines).map((x) => x.service))];
          p.add(errors.invalidValue('storage_engine', `"storage_engine" applies to ${services.join(' and ')} instances only`));
        } else p.check(() => assertOneOf('storage_engine', storageEngine, storageEngines));
      }
      const version = text('version');
      // a version known but not served here is create's to refuse (422, saying why)
      const unservable = offering?.unavailableVersions?.some((v) => v.version === version) && !offering?.versions.includes(version ?? '');
      if (offering && version !== undefined && !unservable) {
        // the engine is named in the message when the body named it: a body without one reads as it always did
        const onEngine = named !== undefined ? ` on ${offering.engine}` : '';
        p.check(() => assertOneOf('version', version, offering.versions, `"version" of a ${service} instance${onEngine}`));
      }
      if (
        offering &&
        storageEngine !== undefined &&
        storageEngines?.includes(storageEngine) &&
        offering.storageEngines &&
        !offering.storageEngines.includes(storageEngine)
      ) {
        // mmapv1 exists up to MongoDB 4.0; the engines a host runs may be newer
        const message = `"storage_engine" ${JSON.stringify(storageEngine)} is not available with the ${offering.engine} installed on this host`;
        p.add(errors.invalidValue('storage_engine', message, offering.storageEngines));
      }
    }
    if (Array.isArray(b.acls)) {
      const now = this.deps.now();
      const on = service && product ? { service, groups: product.features.aclGroups } : undefined;
      const acls = b.acls.map((a: unknown, i) => aclProblems(aclFields(a), on, now, `acls[${i}].`));
      for (const a of acls) p.add(...a.problems);
      // The same rule twice, however written, among the valid ACLs.
      const seen = new Set<string>();
      for (const a of acls) {
        if (!a.acl) continue;
        const key = `${parseCidr(a.acl.cidrMask)?.text ?? a.acl.cidrMask}|${a.acl.transport}|${a.acl.kibana}`;
        if (seen.has(key)) {
          p.add(errors.invalidValue('acls', `"acls" lists ${a.acl.cidrMask} twice`));
          break;
        }
        seen.add(key);
      }
    }
    return p.list;
  }

  async create(caller: Caller, input: CreateInstanceInput, origin: Origin = NO_ORIGIN): Promise<Started<Instance>> {
    const { config, keyring, db } = this.deps;
    const problems = this.createProblems(input);
    if (problems.length > 0) throw allProblems(problems);
    const service = input.service as Service;
    const zone = this.zones.zoneFor(service, input.zone);
    // what createProblems judged without a zone's engines is judged here (422s: the engine cannot run here)
    const offering = chooseEngine(zone.engines.offerings(), service, input.engine);
    const product = productNamed(offering.engine);
    if (!product.types.includes(input.type as InstanceType)) {
      throw errors.serviceUnavailableHere(service, typeRefusal(product, input.type as InstanceType, zone.engines.offerings()));
    }
    // a version the engine knows of but cannot serve here: 422 saying why (not a 400: the body is right)
    const unavailable = offering.unavailableVersions?.find((v) => v.version === input.version);
    if (unavailable && !offering.versions.includes(input.version)) {
      throw errors.versionUnavailableHere(service, product.name, input.version, unavailable.reason, offering.versions);
    }
    const on = { service, groups: product.features.aclGroups };
    const acls = (input.acls ?? []).map((a, i) => assertAcl(a, on, this.deps.now(), `acls[${i}].`));
    if (acls.length > config.maxAclsPerInstance) throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
    if ((await countInstances(db, caller.accountId)) >= config.maxInstancesPerAccount) {
      throw errors.quotaExceeded('instances per account', config.maxInstancesPerAccount);
    }
    const holder = await findNameHolder(db, caller.accountId, input.name);
    if (holder !== undefined) throw errors.nameTaken(input.name, holder);
    let restoreFrom: string | undefined;
    if (input.restore_from !== undefined) {
      if (!this.backups) throw errors.invalidValue('restore_from', '"restore_from": backups are not available on this hangar');
      const format = zone.engines.require(offering.engine).backups?.format;
      restoreFrom = (await this.backups.restorable(caller, input.restore_from, service, input.plan, 'restore_from', format)).id;
    }

    const now = this.deps.now();
    const id = newObjectId(now);
    const type = input.type as InstanceType;
    const roles = product.portRoles(type);
    const newAcls: NewAcl[] = acls.map((a) => ({
      ...a,
      id: newObjectId(now),
      instanceId: id,
      accountId: caller.accountId,
      createdAt: now,
    }));
    let created: Instance;
    let operation: Operation | undefined;
    // A restore asked with the create has its id, and its `restore` operation, from the start.
    const restoreId = restoreFrom !== undefined ? newObjectId(now) : undefined;
    const recordOperation = async (trx: typeof db) => {
      operation = await this.deps.operations.start(
        {
          kind: 'create',
          instance: { id, name: input.name },
          account: caller.accountId,
          ...origin,
          targetVersion: 1,
          detail: {
            service,
            engine: product.name,
            type: input.type,
            plan: input.plan,
            version: input.version,
            zone: input.zone,
            ...(restoreId !== undefined ? { restore_from: restoreFrom, restore_id: restoreId } : {}),
          },
        },
        trx,
      );
      if (restoreId !== undefined) {
        await this.deps.operations.start(
          {
            id: restoreId,
            kind: 'restore',
            instance: { id, name: input.name },
            account: caller.accountId,
            ...origin,
            detail: { backup_id: restoreFrom, in_place: false },
          },
          trx,
        );
      }
    };
    for (let attempt = 0; ; attempt++) {
      const ports = await this.pickPorts(zone, roles);
      try {
        created = await createInstance(
          db,
          keyring,
          {
            id,
            accountId: caller.accountId,
            login: caller.login,
            name: input.name,
            service,
            engine: product.name,
            type,
            version: input.version,
            zone: input.zone,
            plan: input.plan,
            encrypted: input.encryption === true,
            storageEngine: input.storage_engine ?? null,
            apiKey: randomHex(16),
            password: product.features.password ? randomHex(16) : null,
            adminSecret: randomHex(24),
            buildId: newBuildId(),
            ports,
            createdAt: now,
          },
          zone.ports.scope,
          newAcls,
          {
            maxInstances: config.maxInstancesPerAccount,
            guard: async (trx) => {
              await this.zones.assertFits(trx, zone, { engine: product.name, type, plan: input.plan });
              // recorded with the instance: a restore asked is never lost, and never left without its instance
              if (restoreFrom !== undefined && restoreId !== undefined) {
                await insertRestore(trx, {
                  id: restoreId,
                  accountId: caller.accountId,
                  instanceId: id,
                  instanceName: input.name,
                  backupId: restoreFrom,
                  kind: 'new_instance',
                  requestedAt: now,
                });
              }
            },
            before: recordOperation,
          },
        );
        break;
      } catch (err) {
        // another create took one of these ports between our read and our insert
        if (err instanceof PortRaceError && attempt < 10) {
          await sleep(Math.random() * 10);
          continue;
        }
        throw err;
      }
    }
    await this.backups?.applyDefaultPolicy(created);
    this.step('create:recorded');
    // The answer is the instance as recorded (REQUESTED), not as read back: the worker may
    // already have moved it on by then (it polls the store for new work).
    this.deps.work.enqueue(id);
    return { result: created, operation: operation!, warnings: acls.flatMap((a) => a.warnings) };
  }

  /** Free ports for each role, from the configured range, starting at a random place. */
  private async pickPorts(zone: ZoneView, roles: readonly string[]): Promise<PortMap> {
    const ports = await pickFreePorts(this.deps.db, zone.ports, roles.length);
    return Object.fromEntries(roles.map((role, i) => [role, ports[i]!]));
  }

  async rename(caller: Caller, name: string, newName: string, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    const inst = await this.get(caller, name);
    assertInstanceName(newName);
    if (newName === name) throw errors.invalidValue('name', `"name": the instance is already called "${name}"`);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const { db, operations } = this.deps;
    const operation = await db
      .transaction()
      .execute(async (trx) => {
        const op = await operations.start(
          { kind: 'rename', instance: { id: inst.id, name }, account: caller.accountId, ...origin, detail: { from: name, to: newName } },
          trx,
        );
        if (!(await renameInstance(trx, caller.accountId, inst.id, name, newName, this.deps.now()))) throw NOT_RENAMED;
        await operations.setTarget(trx, op.id, await getSpecVersion(trx, inst.id));
        return op;
      })
      .catch(async (err: unknown) => {
        if (err !== NOT_RENAMED) throw err;
        // Another request got there first: it is being deleted, or no longer has this name.
        const current = await findInstanceById(db, this.deps.keyring, inst.id);
        if (current?.deleting) throw errors.instanceDeleting(name);
        throw errors.instanceNotFound(name);
      });
    this.step('rename:recorded');
    this.deps.work.enqueue(inst.id);
    return { result: `Instance "${name}" renamed to "${newName}"`, operation };
  }

  async delete(caller: Caller, name: string, origin: Origin = NO_ORIGIN): Promise<Started<string>> {
    const inst = await this.get(caller, name);
    const now = this.deps.now();
    const { operations } = this.deps;
    const operation = await this.deps.db.transaction().execute(async (trx) => {
      const op = await operations.start({ kind: 'delete', instance: { id: inst.id, name }, account: caller.accountId, ...origin }, trx);
      const changed = await bumpInstance(trx, inst.id, { deleting: true, state: 'DELETING', stateReason: null, transitionAt: now }, now, {
        notDeleting: true,
      });
      if (!changed) throw errors.instanceDeleting(name);
      return op;
    });
    this.step('delete:recorded');
    this.deps.work.enqueue(inst.id);
    return { result: `Instance "${name}" is being deleted`, operation };
  }
}

/**
 * Why an engine cannot take a type, and where the type can go: the engines of the service that
 * run it and can run in the zone, or why those that run it cannot.
 */
function typeRefusal(product: Product, type: InstanceType, offerings: Offerings): string {
  const head = `${product.label} (engine ${product.name}) runs ${product.types.join(', ')} only, not ${type}`;
  const others = PRODUCTS.filter((p) => p.service === product.service && p.types.includes(type));
  const here = others.filter((p) => offerings.some((o) => o.engine === p.name && o.available)).map((p) => p.name);
  if (here.length > 0) return `${head}: ask for engine ${here.join(' or ')}`;
  const why = others.map((p) => {
    const o = offerings.find((x) => x.engine === p.name);
    const reason = (o?.unavailableReason ?? `${p.name} cannot run here`).replace(new RegExp(`^${p.name} cannot run here: `), '');
    return `${p.name}, which runs it, cannot run here: ${reason}`;
  });
  return why.length > 0 ? `${head}; ${why.join('; ')}` : head;
}
