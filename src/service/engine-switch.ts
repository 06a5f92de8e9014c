import { errors } from '../domain/errors.js';
import { READY_STATES, type Instance } from '../domain/model.js';
import type { Operation } from '../domain/operations.js';
import { dataRefusal, productNamed, productsOf } from '../engines/products.js';
import { chooseEngine } from '../engines/registry.js';
import { findActiveBackup } from '../store/backup-repository.js';
import { bumpInstance, findInstanceById, getSpecVersion } from '../store/instance-repository.js';
import type { Caller, Origin, ServiceDeps } from './deps.js';
import type { Started } from './instances.js';
import { assertOneOf } from './validate.js';
import type { ZoneService } from './zones.js';

/** What `POST /v2/redis/<name>/engine/` asks for. */
export interface EngineSwitchInput {
  readonly engine: string;
  readonly version: string;
}

/** Thrown in the switch's transaction when another request changed the instance first (its operation is undone with it). */
const NOT_CHANGED = new Error('not changed');

/**
 * Records a switch of the instance's engine in place (Redis to Valkey) with its `engine.switch`
 * operation: the desired engine and version are recorded, and the reconciler's passes converge
 * the engines to them (the replica restarted on the new server first, then the primary). The
 * instance stays ACTIVE meanwhile (it serves throughout, but for the primary's restart); its record
 * shows the new engine and version once the engines run them.
 *
 * Refused: an engine that is not one of the service's (400), the engine it runs already (400), an
 * engine that is not promised to load the data files of the one it runs, at the version it runs
 * (400, saying why: Valkey to Redis; Redis 7.4 to Valkey), an engine or version that cannot run in
 * its zone (422, saying why) or a version it does not know there (400 listing those it offers), a
 * zone on Kubernetes (422: not supported there yet), a zone that the new engine's larger promise
 * does not fit (409), and while it is being deleted, not ACTIVE, switching already, or backed up (409).
 */
export async function recordEngineSwitch(
  deps: ServiceDeps,
  zones: ZoneService,
  caller: Caller,
  inst: Instance,
  input: EngineSwitchInput,
  origin: Origin,
): Promise<Started<string>> {
  const { name, service } = inst;
  const names = productsOf(service).map((p) => p.name);
  assertOneOf('engine', input.engine, names, `"engine" of a ${service} instance`);
  if (inst.engine !== inst.desiredEngine || inst.version !== inst.desiredVersion)
    throw errors.engineSwitchInProgress(name, `${inst.desiredEngine} ${inst.desiredVersion}`);
  const from = productNamed(inst.engine);
  const to = productNamed(input.engine);
  if (to.name === from.name) throw errors.invalidValue('engine', `instance "${name}" runs ${from.name} ${inst.version} already`);
  const cannot = (why: string) =>
    `instance "${name}" runs ${from.label} ${inst.version}, which cannot be switched to ${to.label} in place: ${why}`;
  if (!to.loadsDataOf?.[from.name]) {
    const allowed = names.filter((n) => productNamed(n).loadsDataOf?.[from.name] !== undefined);
    const why = dataRefusal({ engine: from.name, version: inst.version }, { engine: to.name, version: input.version })!;
    throw errors.invalidValue('engine', cannot(why), allowed.length > 0 ? allowed : undefined);
  }
  const zone = deps.zones.get(inst.zone);
  if (!zone) throw errors.serviceUnavailableHere(service, `zone "${inst.zone}" is not configured on this hangar`);
  if (zone.runtime === 'kubernetes')
    throw errors.serviceUnavailableHere(service, `switching engines in place is not supported on Kubernetes (zone "${inst.zone}") yet`);
  // 422 when the engine cannot run in the zone, or not that version of it (saying why); 400 for a version it does not know
  const offering = chooseEngine(zone.engines.offerings(), service, to.name);
  const unavailable = offering.unavailableVersions?.find((v) => v.version === input.version);
  if (unavailable && !offering.versions.includes(input.version)) {
    throw errors.versionUnavailableHere(service, to.name, input.version, unavailable.reason, offering.versions);
  }
  assertOneOf('version', input.version, offering.versions, `"version" of a ${service} instance on ${to.name}`);
  // the data of the version it runs must load in the version asked for (Redis 7.4 writes what no Valkey loads)
  const refusal = dataRefusal({ engine: from.name, version: inst.version }, { engine: to.name, version: input.version });
  if (refusal !== undefined) throw errors.invalidValue('engine', cannot(refusal));
  if (inst.deleting) throw errors.instanceDeleting(name);
  if (!READY_STATES.includes(inst.state)) throw errors.operationInProgress(name, inst.state);
  const backup = await findActiveBackup(deps.db, inst.id);
  if (backup) throw errors.backupInProgress(name, backup.id, backup.state);

  const now = deps.now();
  const detail = { from_engine: from.name, from_version: inst.version, to_engine: to.name, to_version: input.version };
  const operation = await deps.db
    .transaction()
    .execute(async (trx): Promise<Operation | undefined> => {
      const op = await deps.operations.start(
        { kind: 'engine.switch', instance: { id: inst.id, name }, account: caller.accountId, ...origin, detail },
        trx,
      );
      // A new engine that promises more memory on the plan asked for must fit the zone for what it
      // adds; one that promises no more (Valkey and Redis promise alike) takes nothing from it,
      // even from a zone whose capacity was lowered below what it holds.
      const grows =
        to.promisedMemoryMb(inst.type, inst.desiredPlan) > productNamed(inst.desiredEngine).promisedMemoryMb(inst.type, inst.desiredPlan);
      if (grows) await zones.assertFits(trx, zone, { engine: to.name, type: inst.type, plan: inst.desiredPlan }, inst.id);
      const changed = await bumpInstance(trx, inst.id, { desiredEngine: to.name, desiredVersion: input.version, transitionAt: now }, now, {
        states: READY_STATES,
        notDeleting: true,
        notSwitching: true,
      });
      if (!changed) throw NOT_CHANGED;
      await deps.operations.setTarget(trx, op.id, await getSpecVersion(trx, inst.id));
      return op;
    })
    .catch((err: unknown) => {
      if (err === NOT_CHANGED) return undefined;
      throw err;
    });
  if (!operation) {
    // Another request got there first.
    const current = await findInstanceById(deps.db, deps.keyring, inst.id);
    if (!current) throw errors.notARedisInstance(name);
    if (current.deleting) throw errors.instanceDeleting(name);
    if (current.engine !== current.desiredEngine)
      throw errors.engineSwitchInProgress(name, `${current.desiredEngine} ${current.desiredVersion}`);
    throw errors.operationInProgress(name, current.state);
  }
  return {
    result: `Switching instance "${name}" from ${from.label} ${inst.version} to ${to.label} ${input.version} has started`,
    operation,
  };
}
