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
  instanceNameTaken,
  listInstances,
  renameInstance,
} from '../store/instance-repository.js';
import type { NewAcl } from '../store/acl-repository.js';
import { insertRestore } from '../store/backup-repository.js';
import { INSTANCE_TYPES, PLANS, SERVICES, isService, type InstanceType, type Service } from '../domain/catalog.js';
import { NO_ORIGIN, requestStep, type Caller, type Origin, type ServiceDeps, type ZoneView } from './deps.js';
import type { Operation } from '../domain/operations.js';
import type { ZoneService } from './zones.js';
import { PRODUCTS, productNamed } from '../engines/products.js';
import { chooseEngine } from '../engines/registry.js';
import { errors, type HangarError } from '../domain/errors.js';
import type { Instance, PortMap } from '../domain/model.js';
import { pickFreePorts } from '../store/ports.js';
import { assertAcl, assertInstanceName, assertOneOf, assertTlsChoice, type AclInput } from './validate.js';

/** The 404 of the spec's service routes (`/v2/redis/<name>/...`, `/v2/mongodb/<id>/...`): their own words. */
const NOT_FOUND_IN: Partial<Record<Service, (given: string) => HangarError>> = {
  redis: errors.notARedisInstance,
  mongodb: errors.notAMongodbInstance,
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
  /** How clients reach it over TLS (products that offer a choice); default HANGAR_INSTANCE_TLS. */
  readonly tls?: string;
  /** Its TLS listeners ask for a client certificate. */
  readonly tls_client_auth?: boolean;
}

/** What a create with `restore_from` needs of the backups. */
export interface RestoreSources {
  /** The caller's backup that an instance of `service` on `plan` can be restored from, or the 4xx saying why not. */
  restorable(caller: Caller, backupId: string, service: string, plan: number, field: string): Promise<{ readonly id: string }>;
  /** Gives a new instance the default backup policy. */
  applyDefaultPolicy(inst: { readonly id: string; readonly accountId: string }): Promise<void>;
}

/** A change that started an operation: its answer, and the operation. */
export interface Started<T> {
  readonly result: T;
  readonly operation: Operation;
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

  async create(caller: Caller, input: CreateInstanceInput, origin: Origin = NO_ORIGIN): Promise<Started<Instance>> {
    const { config, keyring, db } = this.deps;
    const service = input.service;
    if (!isService(service)) throw errors.invalidValue('service', `"service" ${JSON.stringify(service)} is not a service`, SERVICES);
    assertInstanceName(input.name);
    assertOneOf('type', input.type, INSTANCE_TYPES[service] as readonly string[], `"type" of a ${service} instance`);
    assertOneOf('plan', input.plan, PLANS[service], `"plan" of a ${service} instance`);
    const zone = this.zones.zoneFor(service, input.zone);
    const offering = chooseEngine(zone.engines.offerings(), service, input.engine);
    const product = productNamed(offering.engine);
    if (!product.types.includes(input.type as InstanceType)) {
      const served = PRODUCTS.filter((p) => p.service === service && p.types.includes(input.type as InstanceType)).map((p) => p.name);
      throw errors.serviceUnavailableHere(
        service,
        `${product.label} (engine ${product.name}) cannot run a ${input.type}${served.length > 0 ? `: ask for engine ${served.join(' or ')}` : ''}`,
      );
    }
    if (input.encryption === true && !product.features.encryption) {
      const encryptable = [...new Set(PRODUCTS.filter((p) => p.features.encryption).map((p) => p.service))].sort();
      throw errors.invalidValue('encryption', `"encryption" applies to ${encryptable.join(' and ')} instances only`);
    }
    if (input.storage_engine !== undefined) {
      if (!product.features.storageEngines) {
        const services = [...new Set(PRODUCTS.filter((p) => p.features.storageEngines).map((p) => p.service))];
        throw errors.invalidValue('storage_engine', `"storage_engine" applies to ${services.join(' and ')} instances only`);
      }
      assertOneOf('storage_engine', input.storage_engine, product.features.storageEngines);
    }
    // the engine is named in the message when the body named it: a body without one reads as it always did
    const onEngine = input.engine !== undefined ? ` on ${product.name}` : '';
    assertOneOf('version', input.version, offering.versions, `"version" of a ${service} instance${onEngine}`);
    if (input.storage_engine !== undefined && offering.storageEngines && !offering.storageEngines.includes(input.storage_engine)) {
      // mmapv1 exists up to MongoDB 4.0; the engines a host runs may be newer
      const message = `"storage_engine" ${JSON.stringify(input.storage_engine)} is not available with the ${product.name} installed on this host`;
      throw errors.invalidValue('storage_engine', message, offering.storageEngines);
    }
    const tls = assertTlsChoice(product, { tls: input.tls, clientAuth: input.tls_client_auth }, config.instanceTls);
    const acls = (input.acls ?? []).map((a, i) => assertAcl(a, service, product.features.aclGroups, this.deps.now(), `acls[${i}].`));
    const seen = new Set<string>();
    for (const a of acls) {
      const key = `${parseCidr(a.cidrMask)?.text ?? a.cidrMask}|${a.transport}|${a.kibana}`;
      if (seen.has(key)) throw errors.invalidValue('acls', `"acls" lists ${a.cidrMask} twice`);
      seen.add(key);
    }
    if (acls.length > config.maxAclsPerInstance) throw errors.quotaExceeded('ACLs per instance', config.maxAclsPerInstance);
    if ((await countInstances(db, caller.accountId)) >= config.maxInstancesPerAccount) {
      throw errors.quotaExceeded('instances per account', config.maxInstancesPerAccount);
    }
    if (await instanceNameTaken(db, caller.accountId, input.name)) throw errors.nameTaken(input.name);
    let restoreFrom: string | undefined;
    if (input.restore_from !== undefined) {
      if (!this.backups) throw errors.invalidValue('restore_from', '"restore_from": backups are not available on this hangar');
      restoreFrom = (await this.backups.restorable(caller, input.restore_from, service, input.plan, 'restore_from')).id;
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
            ...(product.features.tlsModes ? { tls: tls.mode, tls_client_auth: tls.clientAuth } : {}),
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
            tlsMode: tls.mode,
            tlsClientAuth: tls.clientAuth,
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
    return { result: created, operation: operation! };
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
        if (!(await renameInstance(trx, inst.id, name, newName, this.deps.now()))) throw NOT_RENAMED;
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
