import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { ReconcileKind, ReconcileOutcome } from '../lib/metrics.js';
import type { Keyring } from '../lib/secrets.js';
import { HangarError, TerminalError } from '../domain/errors.js';
import { openRoutes } from '../domain/endpoints.js';
import { PortTakenError, type AccessRule, type EdgeTls, type InstanceSpec, type StepContext } from '../domain/units.js';
import type { EngineRegistry } from '../engines/registry.js';
import type { Runtime } from '../runtimes/runtime.js';

/** Where a zone's instances run: its runtime and the engines that drive them. */
export interface Target {
  readonly runtime: Runtime;
  readonly engines: EngineRegistry;
  /** Where its instances get their ports (an engine port taken by a stranger moves within it). */
  readonly ports: PortPool;
}

/** The targets of the zones this hangar serves. */
export interface Targets {
  /** The target of a zone; undefined when the zone is not configured. */
  of(zone: string): Target | undefined;
  /** Every target, once. */
  targets(): readonly Target[];
}
import { READY_STATES, type Instance, type InstanceState } from '../domain/model.js';
import { pickFreePorts, type PortPool } from '../store/ports.js';
import { productNamed } from '../engines/products.js';
import { instanceRoutes, toSpec } from '../engines/spec.js';
import { listAcls, purgeDeletedAcls } from '../store/acl-repository.js';
import { listRedisSettings, listRedisUsers, purgeDeletedRedisUsers } from '../store/redis-user-repository.js';
import { anythingDue, carryOutDue, untilNextDeadline } from './deadlines.js';
import { findActiveRestore } from '../store/backup-repository.js';
import type { Db } from '../store/database.js';
import {
  PortRaceError,
  addInstancePorts,
  deleteInstanceRow,
  findInstanceById,
  replacePort,
  updateInstance,
} from '../store/instance-repository.js';
import { deleteMongoUserRow, listMongoUsers, markMongoUserApplied } from '../store/mongodb-user-repository.js';
import { PassCancelled, type PassResult } from './controller.js';
import type { PassObserver } from './operation-supervisor.js';
import type { ConvergedSpecs } from './converged.js';

export interface ReconcileDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  /** Where each zone's instances run. */
  readonly zones: Targets;
  readonly config: Config;
  readonly log: Logger;
  readonly now: () => number;
  /** Builds the step context of one pass (cancellation and fault injection). */
  readonly steps: (signal: AbortSignal) => StepContext;
  /** Where the duration of each pass is reported, with its kind and outcome. */
  readonly metrics?: { observeReconcile(kind: ReconcileKind, outcome: ReconcileOutcome, seconds: number): void };
  /** Tells the operations of an instance about each pass of it (steps, outcome); undefined: nobody listens. */
  readonly observer?: { observe(instanceId: string): Promise<PassObserver | undefined> };
  /** Restores asked for (in place, or into a new instance), run within the instance's pass. */
  readonly restores?: Restores;
  /** What this process last brought each instance's units to; absent: every pass converges the units. */
  readonly converged?: ConvergedSpecs;
  /** The certificates of the instances' TLS listeners; absent: TLS listeners are left out (none can be served). */
  readonly tls?: EdgeCertificates;
}

/** The certificates of instances' TLS listeners, signed by the deployment's CA. */
export interface EdgeCertificates {
  /** What the instance's TLS listeners present and check (renewed first when due); throws TLS_UNAVAILABLE when none can be made now. */
  edgeTls(inst: Instance): Promise<EdgeTls>;
  /** The instance's edge serves its certificate `serial` now (the ones before it are retired). */
  markServed(instanceId: string, serial: string): Promise<boolean>;
  /** The instance is gone: forget what is kept of it. */
  forget(instanceId: string): void;
}

/** A restore as the pass sees it: what ran, and how it ended. */
export interface RestoreResult {
  readonly ok: boolean;
  readonly reason?: string;
  readonly restore: { readonly id: string; readonly backupId: string; readonly kind: string };
}

/** Runs the restores asked for an instance, from within its pass (its engines run, nothing else touches them). */
export interface Restores {
  /** Runs the restore asked for the instance, if any, with the spec the pass applied; undefined when none was. */
  runRestore(inst: Instance, target: Target, ctx: StepContext, spec: InstanceSpec): Promise<RestoreResult | undefined>;
  /** Fails the restores still asked for an instance that is being deleted or failed to build. */
  cancelRestores(instanceId: string, reason: string, why: 'deleted' | 'failed'): Promise<void>;
  /** The instance serves again after a restore: what follows its restores (their operations) is told. */
  settleRestores(instanceId: string): Promise<void>;
}

/** States in which a pass looks for a restore to run. */
const RESTORE_STATES: readonly InstanceState[] = ['RESTORING', 'REQUESTED', 'BUILDING', 'DEGRADED'];

/** What a pass worked on and, when the result alone does not say it, how it ended. */
interface PassReport {
  kind: ReconcileKind;
  outcome?: ReconcileOutcome;
}

/** How often a degraded instance is looked at again. */
const DEGRADED_RETRY_MS = 1000;
/** How often an instance of a zone that is not configured is looked at again. */
const UNPLACED_RETRY_MS = 30_000;

/**
 * One level-based pass over one instance: read what is asked (the store) and what runs (the
 * runtime), and close the gap. Safe to repeat at any point, so a pass cut short by a crash is
 * finished by the next one. State is written only if no newer request arrived meanwhile.
 */
export async function reconcileInstance(deps: ReconcileDeps, id: string, signal: AbortSignal): Promise<PassResult> {
  const report: PassReport = { kind: 'heal' };
  const started = performance.now();
  let outcome: ReconcileOutcome = 'error';
  try {
    const result = await pass(deps, id, signal, report);
    outcome = report.outcome ?? (result?.requeueAfterMs !== undefined ? 'retry' : 'ok');
    return result;
  } catch (err) {
    if (err instanceof PassCancelled || signal.aborted) outcome = 'cancelled';
    throw err;
  } finally {
    deps.metrics?.observeReconcile(report.kind, outcome, (performance.now() - started) / 1000);
  }
}

/** Whether the record shows what was asked of the engines: the plan, the engine and its version. */
function converged(inst: Instance): boolean {
  return inst.plan === inst.desiredPlan && inst.engine === inst.desiredEngine && inst.version === inst.desiredVersion;
}

/**
 * The kind of work a pass does, from the instance as found: a build, a resize, a switch of engines, a teardown, a
 * recorded change (ACLs; a rename) to apply, or a check that repairs drift (`heal`). A change
 * that turns out to be user work is reported as `users` by syncUsers.
 */
function kindOf(inst: Instance): ReconcileKind {
  if (inst.deleting) return 'delete';
  if (inst.state === 'REQUESTED' || inst.state === 'BUILDING') return 'create';
  if (inst.state === 'RESTORING') return 'restore';
  if (inst.state === 'RESIZING' || inst.plan !== inst.desiredPlan) return 'resize';
  if (inst.engine !== inst.desiredEngine || inst.version !== inst.desiredVersion) return 'engine';
  if (inst.state !== 'FAILED' && inst.observedVersion < inst.specVersion) return 'access';
  return 'heal';
}

async function pass(deps: ReconcileDeps, id: string, signal: AbortSignal, report: PassReport): Promise<PassResult> {
  const { db } = deps;
  const ctx = deps.steps(signal);
  const found = await findInstanceById(db, deps.keyring, id);
  if (!found) {
    // Known to a runtime but not to the store: an orphan, or the tail of a finished delete.
    report.kind = 'delete';
    deps.converged?.drop(id);
    for (const t of deps.zones.targets()) {
      await t.runtime.removeInstance(id, ctx);
      t.engines.forget(id);
    }
    return;
  }
  let inst = found;
  const target = deps.zones.of(inst.zone);
  if (!target) return unplaced(deps, inst);
  const { runtime } = target;
  report.kind = kindOf(inst);
  if (inst.deleting) return teardown(deps, target, inst, ctx);
  const version = inst.specVersion;
  if (inst.state === 'FAILED') {
    // FAILED is final until the instance is deleted: nothing is rebuilt, changes are only recorded.
    if (inst.observedVersion < version) {
      // FAILED from outside a pass (a create past its deadline, while its build was stuck):
      // what the build made is removed, as when a pass fails a build.
      if ((await runtime.listInstanceIds()).includes(id)) {
        await runtime.removeInstance(id, ctx);
        target.engines.forget(id);
      }
      await updateInstance(db, id, { observedVersion: version }, { specVersion: version });
    }
    return;
  }

  if (inst.state === 'REQUESTED') {
    await updateInstance(db, id, { state: 'BUILDING', updatedAt: deps.now() }, { specVersion: version });
    ctx.step('create:building');
  }

  // the product asked for: another than the record shows while a switch of engines is under way
  const product = productNamed(inst.desiredEngine);
  inst = await ensurePorts(deps, target, inst);
  // Expired ACLs and rotations whose grace period is over are taken off below, with the rest.
  const readTimed = async () => ({
    acls: await listAcls(db, id, true),
    users: product.features.redisApi ? await listRedisUsers(db, deps.keyring, id, true) : [],
  });
  let timed = await readTimed();
  const dueAt = deps.now();
  if (anythingDue(inst, timed, dueAt)) {
    inst = await carryOutDue(db, inst, dueAt);
    timed = await readTimed();
  }
  const { acls, users } = timed;
  const rules: AccessRule[] = acls.filter((a) => !a.deleting).map((a) => ({ cidr: a.cidrMask, transport: a.transport, kibana: a.kibana }));
  const base = toSpec(inst, product.features.redisApi ? { users, settings: await listRedisSettings(db, id) } : {});
  let spec: InstanceSpec;
  try {
    spec = withTls(deps, base, await edgeTlsOf(deps, inst));
  } catch (err) {
    return failedPass(deps, target, inst, err, report);
  }
  // A pass that only checks (nothing was asked) first says whether the instance serves, so
  // that a fault it is about to heal (an engine or the edge died) shows as DEGRADED meanwhile.
  // Not before this process has tried to bring the instance up: what does not run then was not
  // started yet (a start after `hangar down`, a reboot, a takeover), which is no fault. That
  // first pass converges, and says DEGRADED only if it cannot.
  const judged = deps.converged?.wasTried(id) ?? true;
  if (report.kind === 'heal' && judged && READY_STATES.includes(inst.state)) inst = await sayHealth(deps, target, inst, spec);
  const done: InstanceState = product.doneState;
  let fresh = false;
  let address: string | undefined;
  try {
    if (!(await accessAlone(deps, target, inst, spec, rules, done, report, ctx))) {
      let served: string | undefined;
      deps.converged?.markTried(id);
      ({ fresh, address, servedCertificate: served } = await runtime.ensureInstance(spec, rules, target.engines.require(spec.engine), ctx));
      deps.converged?.remember(spec, version);
      if (served !== undefined) await markServed(deps, inst, served);
    }
  } catch (err) {
    deps.converged?.forget(id);
    // A cancelled pass says nothing about the instance: the next one carries on.
    if (signal.aborted) throw err;
    if (err instanceof PortTakenError && err.role.startsWith('engine.')) return moveEnginePort(deps, target, inst, err);
    return failedPass(deps, target, inst, err, report);
  }
  const purged = acls.filter((a) => a.deleting).map((a) => a.id);
  if (purged.length > 0) {
    await purgeDeletedAcls(db, id, purged);
    ctx.step('ensure:acls-purged');
  }
  await purgeDeletedRedisUsers(
    db,
    id,
    users.filter((u) => u.deleting).map((u) => u.id),
  );

  // A pass that restores (or finds the instance RESTORING) tells the restore's operation once the
  // instance serves again.
  let restoring = inst.state === 'RESTORING';
  if (deps.restores && RESTORE_STATES.includes(inst.state)) {
    const restored = await restore(deps, target, inst, spec, ctx, deps.restores);
    if (restored === 'again') return { requeueAfterMs: 0 };
    if (restored === 'failed') {
      report.outcome = 'failed';
      // soon looked at again: a restore that failed once its engines were stopped leaves them to restart
      return { requeueAfterMs: DEGRADED_RETRY_MS };
    }
    if (restored) {
      restoring = true;
      inst = restored;
      // a snapshot carries no users: hangar's store has them, applied again to the restored data
      fresh = true;
    }
  }

  if (product.features.databaseUsers && (await syncUsers(deps, target, inst, fresh, ctx)) && report.kind === 'access')
    report.kind = 'users';

  const moved = address !== undefined && address !== inst.address;
  // Converged: the next pass runs at the next deadline (an ACL's expiry, a rotation's end), if any.
  // a deadline that came during the pass (after what it carried out) runs it again at once
  const wait = untilNextDeadline(inst, timed, dueAt, deps.now());
  const next = wait === undefined ? undefined : { requeueAfterMs: wait };
  if (next) report.outcome = 'ok';
  if (inst.state === done && inst.stateReason === null && inst.observedVersion === version && converged(inst) && !moved) return next;
  const wrote = await updateInstance(
    db,
    id,
    {
      state: done,
      stateReason: null,
      plan: inst.desiredPlan,
      // the engines run what was asked: a switch of engines is over
      engine: inst.desiredEngine,
      version: inst.desiredVersion,
      observedVersion: version,
      updatedAt: deps.now(),
      ...(moved ? { address } : {}),
    },
    { specVersion: version },
  );
  if (!wrote) {
    delete report.outcome;
    deps.converged?.forget(id);
    return { requeueAfterMs: 0 };
  }
  if (inst.state !== done) deps.log.info({ instance: id, name: inst.name, from: inst.state, to: done }, 'instance state');
  if (restoring) await deps.restores?.settleRestores(id);
  return next;
}

/**
 * The pass of a change that concerns access alone: the instance serves (as its last pass left
 * it), and this process brought its units to this very spec at the version last carried out, so
 * only the edge's access is applied; the units are left as they are (the periodic passes and the
 * process supervision look after them). False when the pass must converge the instance whole:
 * another kind of pass, a spec that differs, or a runtime that cannot tell its edge serves the
 * instance.
 */
async function accessAlone(
  deps: ReconcileDeps,
  target: Target,
  inst: Instance,
  spec: InstanceSpec,
  rules: readonly AccessRule[],
  done: InstanceState,
  report: PassReport,
  ctx: StepContext,
): Promise<boolean> {
  if (report.kind !== 'access' || inst.state !== done || inst.stateReason !== null) return false;
  if (!target.runtime.ensureAccess || !deps.converged?.matches(spec, inst.observedVersion)) return false;
  const applied = await target.runtime.ensureAccess(spec, rules, ctx);
  if (!applied) return false;
  deps.converged.remember(spec, inst.specVersion);
  return true;
}

/**
 * Runs the restore asked for the instance, if any: the instance is RESTORING meanwhile. A new
 * instance whose restore fails is FAILED (it was made to hold that data); one restored in place
 * keeps its data and serves again: the restore's record says why it failed (the instance's
 * `state_reason` says it too, until the next pass finds the instance serving).
 * Returns the instance as it is then, `again` when a newer request came meanwhile, `failed`
 * when the instance failed, or undefined when there was nothing to restore.
 */
async function restore(
  deps: ReconcileDeps,
  target: Target,
  inst: Instance,
  spec: InstanceSpec,
  ctx: StepContext,
  restores: Restores,
): Promise<Instance | 'again' | 'failed' | undefined> {
  const where = { specVersion: inst.specVersion };
  const building = inst.state === 'REQUESTED' || inst.state === 'BUILDING';
  if (inst.state !== 'RESTORING') {
    // only once there is a restore to run: most passes of these states have none
    if (!(await findActiveRestore(deps.db, inst.id))) return undefined;
    if (!(await updateInstance(deps.db, inst.id, { state: 'RESTORING', stateReason: null, updatedAt: deps.now() }, where))) return 'again';
  }
  const result = await restores.runRestore(inst, target, ctx, spec);
  if (!result) return { ...inst, state: 'RESTORING' };
  if (result.ok) {
    deps.log.info({ instance: inst.id, name: inst.name, backup: result.restore.backupId }, 'instance restored');
    return { ...inst, state: 'RESTORING', stateReason: null };
  }
  const reason = `the restore of backup ${result.restore.backupId} failed: ${result.reason ?? 'no reason given'}`;
  if (building || result.restore.kind === 'new_instance') {
    deps.log.error({ instance: inst.id, name: inst.name, reason }, 'instance failed');
    await target.runtime
      .removeInstance(inst.id, { step: () => {} })
      .catch((e: unknown) => deps.log.warn({ instance: inst.id, err: e }, 'cleanup after failure'));
    target.engines.forget(inst.id);
    await updateInstance(
      deps.db,
      inst.id,
      { state: 'FAILED', stateReason: reason, observedVersion: inst.specVersion, updatedAt: deps.now() },
      where,
    );
    return 'failed';
  }
  const wrote = await updateInstance(
    deps.db,
    inst.id,
    { state: 'ACTIVE', stateReason: reason, observedVersion: inst.specVersion, updatedAt: deps.now() },
    where,
  );
  return wrote ? 'failed' : 'again';
}

/**
 * The instance's zone is not (or no longer) configured on this hangar: nothing can be built,
 * changed or removed there. It says so (DEGRADED, or FAILED for a build) and is looked at again.
 */
async function unplaced(deps: ReconcileDeps, inst: Instance): Promise<PassResult> {
  const reason = `zone "${inst.zone}" is not configured on this hangar (HANGAR_ZONES)`;
  const building = inst.state === 'REQUESTED' || inst.state === 'BUILDING';
  if (building) {
    await updateInstance(
      deps.db,
      inst.id,
      { state: 'FAILED', stateReason: reason, observedVersion: inst.specVersion, updatedAt: deps.now() },
      { specVersion: inst.specVersion },
    );
    return;
  }
  if (inst.state !== 'FAILED' && inst.stateReason !== reason) {
    await updateInstance(
      deps.db,
      inst.id,
      { state: 'DEGRADED', stateReason: reason, updatedAt: deps.now() },
      { specVersion: inst.specVersion },
    );
  }
  deps.log.warn({ instance: inst.id, name: inst.name, zone: inst.zone }, 'instance in a zone that is not configured');
  return { requeueAfterMs: UNPLACED_RETRY_MS };
}

async function teardown(deps: ReconcileDeps, target: Target, inst: Instance, ctx: StepContext): Promise<PassResult> {
  await deps.restores?.cancelRestores(inst.id, 'the instance was deleted', 'deleted');
  ctx.step('delete:start');
  deps.converged?.drop(inst.id);
  await target.runtime.removeInstance(inst.id, ctx);
  target.engines.forget(inst.id);
  deps.tls?.forget(inst.id);
  ctx.step('delete:removed');
  await deleteInstanceRow(deps.db, inst.id);
  deps.log.info({ instance: inst.id, name: inst.name }, 'instance deleted');
}

/**
 * Gives the instance ports for the roles its product has and it lacks (listeners added after it
 * was made: the TLS ones of a Redis instance), from its zone's pool, as a create picks them: a
 * port another instance took meanwhile is picked again. With no port left, the instance goes on
 * without those listeners (a warning says so) rather than failing its passes.
 */
async function ensurePorts(deps: ReconcileDeps, target: Target, inst: Instance): Promise<Instance> {
  const missing = productNamed(inst.engine)
    .portRoles(inst.type)
    .filter((role) => inst.ports[role] === undefined);
  if (missing.length === 0) return inst;
  for (let attempt = 0; ; attempt++) {
    try {
      const picked = await pickFreePorts(deps.db, target.ports, missing.length);
      const wanted = Object.fromEntries(missing.map((role, i) => [role, picked[i]!]));
      const ports = await addInstancePorts(deps.db, target.ports.scope, inst.id, wanted);
      deps.log.info({ instance: inst.id, name: inst.name, ports: wanted }, 'ports allocated for listeners the instance did not have');
      return { ...inst, ports };
    } catch (err) {
      if (err instanceof PortRaceError && attempt < 10) continue;
      if (err instanceof HangarError && err.code === 'CAPACITY_EXHAUSTED') {
        deps.log.warn(
          { instance: inst.id, name: inst.name, roles: missing, err: err.message },
          'no port for new listeners of the instance',
        );
        return inst;
      }
      throw err;
    }
  }
}

/** What the instance's TLS listeners serve, or undefined when it has none (or no certificate can be made now: logged). */
async function edgeTlsOf(deps: ReconcileDeps, inst: Instance): Promise<EdgeTls | undefined> {
  if (!deps.tls || !instanceRoutes(inst).some((r) => r.tls)) return undefined;
  try {
    return await deps.tls.edgeTls(inst);
  } catch (err) {
    if (!(err instanceof HangarError && err.code === 'TLS_UNAVAILABLE')) throw err;
    deps.log.warn({ instance: inst.id, name: inst.name, err: err.message }, 'no certificate for the TLS listeners of the instance');
    return undefined;
  }
}

/**
 * The spec with what its TLS listeners serve. Without a certificate they are left out, and the
 * instance serves on its plain listeners; when it has no open plain one (TLS is required), that
 * is the instance's fault to show (the pass fails, DEGRADED with the reason).
 */
function withTls(deps: ReconcileDeps, spec: InstanceSpec, tls: EdgeTls | undefined): InstanceSpec {
  if (tls) return { ...spec, tls };
  if (!spec.routes.some((r) => r.tls)) return spec;
  const plain = spec.routes.filter((r) => !r.tls);
  if (openRoutes(plain).length === 0) {
    throw new Error(`no certificate for the TLS listeners${deps.tls ? '' : ' (no certificate authority here)'}: the instance requires TLS`);
  }
  return { ...spec, routes: plain };
}

/** Records that the instance's edge serves its certificate `serial` (a failure is only logged: the next pass says it again). */
async function markServed(deps: ReconcileDeps, inst: Instance, serial: string): Promise<void> {
  try {
    await deps.tls?.markServed(inst.id, serial);
  } catch (err) {
    deps.log.warn({ instance: inst.id, err }, 'could not record the certificate the edge serves');
  }
}

/** Writes DEGRADED with the reason when the runtime finds the instance not serving; returns the instance as it is then. */
async function sayHealth(deps: ReconcileDeps, target: Target, inst: Instance, spec: InstanceSpec): Promise<Instance> {
  const health = await Promise.resolve()
    .then(() => target.runtime.checkInstance(spec, target.engines.require(spec.engine)))
    .catch((err: unknown) => ({ healthy: false, reason: err instanceof Error ? err.message : String(err) }));
  if (health.healthy) return inst;
  const reason = health.reason ?? 'the instance does not serve';
  const wrote = await updateInstance(
    deps.db,
    inst.id,
    { state: 'DEGRADED', stateReason: reason, updatedAt: deps.now() },
    { specVersion: inst.specVersion, states: READY_STATES },
  );
  if (!wrote) return inst;
  deps.log.warn({ instance: inst.id, name: inst.name, from: inst.state, to: 'DEGRADED', reason }, 'instance state');
  return { ...inst, state: 'DEGRADED', stateReason: reason };
}

/**
 * A process that is not the instance's holds one of its engine ports (it took it while the
 * engine was down): the engine moves to a free port, recorded in the store, and the next pass
 * starts it there (the edge then forwards to the new port; clients keep their address).
 */
async function moveEnginePort(deps: ReconcileDeps, target: Target, inst: Instance, err: PortTakenError): Promise<PassResult> {
  const { db } = deps;
  for (let attempt = 0; ; attempt++) {
    const [port] = await pickFreePorts(db, target.ports, 1);
    try {
      await replacePort(db, target.ports.scope, inst.id, err.role, port!);
    } catch (e) {
      if (e instanceof PortRaceError && attempt < 10) continue;
      throw e;
    }
    const reason = `port ${err.port} (${err.role}) is in use by another process; moving ${err.role} to port ${port}`;
    deps.log.warn(
      { instance: inst.id, name: inst.name, role: err.role, from: err.port, to: port, err: err.message },
      'engine port taken by another process: moving the engine',
    );
    if (READY_STATES.includes(inst.state) || inst.state === 'DEGRADED') {
      await updateInstance(
        db,
        inst.id,
        { state: 'DEGRADED', stateReason: reason, updatedAt: deps.now() },
        { specVersion: inst.specVersion },
      );
    }
    return { requeueAfterMs: 0 };
  }
}

/**
 * The engine could not be brought to the asked state. A build that hits a terminal cause or its
 * deadline fails (and what was half-made is removed); an instance that served before turns
 * DEGRADED with the reason and is retried; anything else is retried as it is.
 */
async function failedPass(deps: ReconcileDeps, target: Target, inst: Instance, err: unknown, report: PassReport): Promise<PassResult> {
  const message = err instanceof Error ? err.message : String(err);
  const terminal = err instanceof TerminalError;
  const building = inst.state === 'REQUESTED' || inst.state === 'BUILDING';
  const overdue = deps.now() - inst.transitionAt > deps.config.buildTimeoutSeconds * 1000;
  const where = { specVersion: inst.specVersion };
  if (building && (terminal || overdue)) {
    const reason = terminal ? message : `not ready after ${deps.config.buildTimeoutSeconds} s: ${message}`;
    deps.log.error({ instance: inst.id, name: inst.name, reason }, 'instance failed');
    await target.runtime
      .removeInstance(inst.id, { step: () => {} })
      .catch((e: unknown) => deps.log.warn({ instance: inst.id, err: e }, 'cleanup after failure'));
    target.engines.forget(inst.id);
    await updateInstance(
      deps.db,
      inst.id,
      { state: 'FAILED', stateReason: reason, observedVersion: inst.specVersion, updatedAt: deps.now() },
      where,
    );
    await deps.restores?.cancelRestores(inst.id, `the instance failed to build: ${reason}`, 'failed');
    report.outcome = 'failed';
    return;
  }
  const busy = (inst.state === 'RESIZING' || inst.state === 'RESTORING') && !overdue && !terminal;
  const state: InstanceState = building || busy ? inst.state : 'DEGRADED';
  if (state !== inst.state || message !== inst.stateReason) {
    await updateInstance(deps.db, inst.id, { state, stateReason: message, updatedAt: deps.now() }, where);
  }
  deps.log.warn({ instance: inst.id, name: inst.name, state, err: message }, 'instance not converged yet');
  return { requeueAfterMs: DEGRADED_RETRY_MS };
}

/** Brings the engine's users to what the store holds: creates, updates, drops. True when it changed any. */
async function syncUsers(deps: ReconcileDeps, target: Target, inst: Instance, fresh: boolean, ctx: StepContext): Promise<boolean> {
  const users = await listMongoUsers(deps.db, deps.keyring, inst.id);
  if (users.length === 0) return false;
  let changed = false;
  const spec = toSpec(inst);
  const engine = target.engines.require(spec.engine);
  if (!engine.mongodbUsers) throw new TerminalError(`the ${spec.engine} engine keeps no database users`);
  const admin = engine.mongodbUsers(spec, target.runtime.place(spec));
  const present = new Map<string, Set<string>>();
  const usersOf = async (database: string): Promise<Set<string>> => {
    let names = present.get(database);
    if (!names) {
      names = new Set((await admin.listUsers(database)).map((u) => u.name));
      present.set(database, names);
    }
    return names;
  };
  for (const user of users) {
    if (user.deleting) {
      await admin.dropUser(user.database, user.username);
      ctx.step('user-delete:dropped');
      await deleteMongoUserRow(deps.db, user.id);
      changed = true;
      continue;
    }
    if (!fresh && user.appliedVersion >= user.specVersion) continue;
    const exists = (await usersOf(user.database)).has(user.username);
    if (exists) {
      await admin.updateUser(user.database, user.username, { password: user.password, roles: user.roles });
      ctx.step('user-update:applied');
    } else {
      await admin.createUser(user.database, user.username, user.password, user.roles);
      ctx.step('user-create:applied');
    }
    await markMongoUserApplied(deps.db, user.id, user.specVersion);
    changed = true;
  }
  return changed;
}
