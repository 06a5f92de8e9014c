import { PLANS, type Service } from '../domain/catalog.js';
import { errors } from '../domain/errors.js';
import { READY_STATES } from '../domain/model.js';
import type { Operation } from '../domain/operations.js';
import { productNamed } from '../engines/products.js';
import { bumpInstance, getSpecVersion } from '../store/instance-repository.js';
import type { Caller, Origin, ServiceDeps } from './deps.js';
import { type InstanceService, type Started, assertInstanceFits } from './instances.js';
import type { ZoneService } from './zones.js';

const NOT_CHANGED = new Error('not changed');

/**
 * Records a larger plan for an instance of `service` (and its resize operation), once it fits
 * its zone; the reconciler applies it to the engines (Redis live, an Elasticsearch node by a
 * restart with the new heap, its data kept). The instance turns RESIZING until then.
 */
export async function recordResize(
  deps: ServiceDeps,
  instances: InstanceService,
  zones: ZoneService,
  caller: Caller,
  service: Service,
  name: string,
  newPlan: number,
  origin: Origin,
  step: (name: string) => void,
): Promise<Started<string>> {
  const inst = assertInstanceFits(await instances.find(caller, name), name, service);
  const plans = PLANS[service];
  if (!plans.includes(newPlan)) throw errors.invalidValue('new_plan', `"new_plan" ${newPlan} is not a ${service} plan`, plans);
  if (newPlan <= inst.plan) {
    const larger = plans.filter((p) => p > inst.plan);
    if (larger.length === 0)
      throw errors.invalidValue('new_plan', `"new_plan": instance "${name}" is on the largest plan (${inst.plan}) already`);
    throw errors.invalidValue('new_plan', `"new_plan" must be larger than the current plan ${inst.plan}`, larger);
  }
  if (inst.deleting) throw errors.instanceDeleting(name);
  if (!READY_STATES.includes(inst.state)) throw errors.operationInProgress(name, inst.state);
  const now = deps.now();
  const zone = deps.zones.get(inst.zone);
  const { operations } = deps;
  // The larger plan must fit the zone before it is recorded (a zone no longer configured has no limits to check).
  const operation = await deps.db
    .transaction()
    .execute(async (trx): Promise<Operation | undefined> => {
      const op = await operations.start(
        {
          kind: 'resize',
          instance: { id: inst.id, name },
          account: caller.accountId,
          ...origin,
          detail: { from_plan: inst.plan, to_plan: newPlan },
        },
        trx,
      );
      if (zone) await zones.assertFits(trx, zone, { engine: inst.engine, type: inst.type, plan: newPlan }, inst.id);
      const changed = await bumpInstance(
        trx,
        inst.id,
        { desiredPlan: newPlan, state: 'RESIZING', stateReason: null, transitionAt: now },
        now,
        {
          states: READY_STATES,
          notDeleting: true,
        },
      );
      if (!changed) throw NOT_CHANGED;
      await operations.setTarget(trx, op.id, await getSpecVersion(trx, inst.id));
      return op;
    })
    .catch((err: unknown) => {
      if (err === NOT_CHANGED) return undefined;
      throw err;
    });
  if (!operation) {
    // Another request got there first.
    const current = assertInstanceFits(await instances.find(caller, name), name, service);
    if (current.deleting) throw errors.instanceDeleting(name);
    throw errors.operationInProgress(name, current.state);
  }
  step('resize:recorded');
  deps.work.enqueue(inst.id);
  const unit = productNamed(inst.engine).planUnit;
  return { result: `Resizing of instance "${name}" from ${inst.plan} ${unit} to ${newPlan} ${unit} has started`, operation };
}
