import { sleep } from '../../lib/time.js';
import { type InstanceSpec, type StepContext, throwIfCancelled, type UnitDefinition, type UnitHost } from '../../domain/units.js';
import type { RedisAdmin, RedisEndpoint } from './redis-admin.js';
import type { RedisRole } from './redis-config.js';
import { serverProduct } from './redis-flavour.js';
import type { RedisPair } from './redis-pair.js';

/** Directory of the append-only files. */
const AOF_DIR = 'appendonlydir';
/** How long a replica may take to resync (a full sync of its primary's data) before the pass gives up and tries again. */
const SYNC_TIMEOUT_MS = 120_000;
/**
 * How long the primary holds writes while its replica takes the last of them: long enough for the
 * wait below, short enough should hangar stop meanwhile (the primary then takes writes again).
 */
const PAUSE_MS = 5000;
/** How long the replica may take to reach the primary's last write once writes are held. */
const CATCH_UP_MS = 3000;

export interface RedisSwitchParts {
  readonly admin: RedisAdmin;
  /** The product whose server this engine runs (`redis`, `valkey`). */
  readonly product: string;
  endpoint(spec: InstanceSpec, role: RedisRole): RedisEndpoint;
  /** Writes both engines' configuration files for the pair. */
  writeConfigs(pair: RedisPair): void;
  /**
   * Waits until the engine answers on its port (up to `ms`: it may load data first), failing early
   * when its process exits; restarts it when it runs but refuses the port (it listens elsewhere).
   */
  waitServing(
    ep: RedisEndpoint,
    unit: UnitDefinition,
    role: RedisRole,
    started: boolean,
    ms: number,
    signal?: AbortSignal,
  ): Promise<boolean>;
}

/**
 * Moves the engines of an instance onto this product's server when they run another's (a switch
 * of engines, Redis to Valkey), so that clients see no more than one failover:
 *
 * 1. the replica is restarted on this server, empty, and resyncs from the primary;
 * 2. the roles switch: the primary holds writes, the replica takes the last of them and becomes
 *    the primary, the old primary lets go of the primary's port and its clients, the new primary
 *    takes the port (clients reconnect through the same address and find it), and the old
 *    primary stops;
 * 3. the old primary starts on this server as the replica, empty, and resyncs.
 *
 * Nothing runs twice in a directory and no data is loaded while clients wait: their interruption
 * is the hand-over of the port, not the time an engine takes to load the data. Every step leaves
 * something the next pass resumes from, should hangar stop on the way: the configuration files
 * are written for the new roles before the port moves, and who answers on the primary's port
 * tells which files are right (see RedisEngine's pair).
 */
export class RedisSwitch {
  constructor(private readonly parts: RedisSwitchParts) {}

  async ensure(spec: InstanceSpec, pair: RedisPair, host: UnitHost, ctx: StepContext): Promise<RedisPair> {
    const { admin, product } = this.parts;
    const primaryEp = this.parts.endpoint(spec, 'primary');
    const replicaEp = this.parts.endpoint(spec, 'replica');
    if (serverProduct(await admin.info(replicaEp, 'server')) !== product) {
      await this.restartAsReplica(spec, pair.replica, host, ctx);
      ctx.step('engine:replica-switched');
    }
    if (serverProduct(await admin.info(primaryEp, 'server')) === product) return pair;
    const switched = await this.switchRoles(spec, pair, host, ctx);
    await this.restartAsReplica(spec, switched.replica, host, ctx);
    ctx.step('engine:primary-switched');
    return switched;
  }

  /**
   * Restarts the unit playing the replica on this server: stopped, its data removed (it takes
   * the primary's in a full sync, rather than loading its own first), started, and waited for
   * until it is in sync.
   */
  private async restartAsReplica(spec: InstanceSpec, unit: UnitDefinition, host: UnitHost, ctx: StepContext): Promise<void> {
    const ep = this.parts.endpoint(spec, 'replica');
    await host.stopUnit(unit);
    host.remove(unit, AOF_DIR);
    await host.ensureUnit(unit);
    await this.parts.waitServing(ep, unit, 'replica', true, SYNC_TIMEOUT_MS, ctx.signal);
    await this.waitInSync(ep, ctx.signal);
  }

  /**
   * Gives the primary's port to the replica, with every write the primary acknowledged; the old
   * primary is stopped. Resolves with the pair as it is then.
   */
  private async switchRoles(spec: InstanceSpec, pair: RedisPair, host: UnitHost, ctx: StepContext): Promise<RedisPair> {
    const { admin } = this.parts;
    const primaryEp = this.parts.endpoint(spec, 'primary');
    const replicaEp = this.parts.endpoint(spec, 'replica');
    await this.waitInSync(replicaEp, ctx.signal);
    // Writes wait (rather than fail) from here until their clients are let go below.
    await admin.command(primaryEp, ['CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE']);
    try {
      await this.waitCaughtUp(primaryEp, replicaEp, ctx.signal);
      await admin.command(replicaEp, ['REPLICAOF', 'NO', 'ONE']);
    } catch (err) {
      await admin.command(primaryEp, ['CLIENT', 'UNPAUSE']).catch(() => {});
      throw err;
    }
    const switched: RedisPair = { primary: pair.replica, replica: pair.primary };
    this.parts.writeConfigs(switched);
    // Should hangar stop here, the old primary still answers on the primary's port: the next
    // pass makes the new one its replica again (it took no write) and starts over.
    ctx.step('engine:replica-promoted');
    // From here the old primary acknowledges no write (it has no replica any more), should its
    // clients outlast the pause; it lets go of the port, the new primary takes it, then the old
    // one lets go of its clients (their held writes were never applied: they fail, and the
    // clients send them again through the same address, to the new primary).
    await admin.configSet(primaryEp, 'min-replicas-to-write', '1');
    await admin.configSet(primaryEp, 'port', '0');
    await admin.configSet(replicaEp, 'port', String(primaryEp.port));
    await admin.command(primaryEp, ['CLIENT', 'KILL', 'TYPE', 'normal']);
    await host.stopUnit(pair.primary);
    // the connections by role now reach the other engine
    admin.forget(spec.id);
    ctx.step('engine:roles-switched');
    return switched;
  }

  /** Waits until the replica has every write the primary has (writes are held meanwhile). */
  private async waitCaughtUp(primaryEp: RedisEndpoint, replicaEp: RedisEndpoint, signal?: AbortSignal): Promise<void> {
    const { admin } = this.parts;
    const until = Date.now() + CATCH_UP_MS;
    for (;;) {
      throwIfCancelled(signal, 'waiting for the replica to catch up');
      const target = Number((await admin.info(primaryEp, 'replication')).master_repl_offset ?? Number.NaN);
      const r = await admin.info(replicaEp, 'replication');
      const at = Number(r.slave_repl_offset ?? -1);
      if (r.master_link_status === 'up' && at >= target) return;
      if (Date.now() > until)
        throw new Error(`the replica did not catch up with the primary within ${CATCH_UP_MS / 1000} s: at offset ${at} of ${target}`);
      await sleep(2, signal);
    }
  }

  /** Waits until the replica is in sync with its primary (a full resync after a restart). */
  private async waitInSync(replicaEp: RedisEndpoint, signal?: AbortSignal): Promise<void> {
    const until = Date.now() + SYNC_TIMEOUT_MS;
    let last = '';
    for (;;) {
      throwIfCancelled(signal, 'waiting for the replica to sync');
      try {
        const link = (await this.parts.admin.info(replicaEp, 'replication')).master_link_status;
        if (link === 'up') return;
        last = `master_link_status:${link ?? 'unknown'}`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > until) throw new Error(`the replica is not in sync with the primary after ${SYNC_TIMEOUT_MS / 1000} s: ${last}`);
      await sleep(10, signal);
    }
  }
}
