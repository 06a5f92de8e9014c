import { Transform, type Readable, type TransformCallback } from 'node:stream';
import {
  throwIfCancelled,
  type InstancePlace,
  type InstanceSpec,
  type StepContext,
  type UnitDefinition,
  type UnitHost,
} from '../../domain/units.js';
import { chain } from '../../lib/streams.js';
import { sleep } from '../../lib/time.js';
import type { BackupDriver, Snapshot } from '../engine.js';
import { type RedisAdmin, type RedisEndpoint, serverVersion } from './redis-admin.js';
import type { RedisRole } from './redis-config.js';

/** The RDB file redis-server writes in its directory (hangar's configuration names no other). */
const RDB_FILE = 'dump.rdb';
/** Where a restore puts the snapshot while it is read and checked. */
const STAGED_FILE = 'restore.rdb';
/** The append-only directory (redis-config.ts) and the one a restore builds beside it. */
const AOF_DIR = 'appendonlydir';
const NEW_AOF_DIR = 'appendonlydir.restore';
/** Redis 7's multi-part AOF: a manifest naming a base file, which may be an RDB. */
const AOF_BASE = 'appendonly.aof.1.base.rdb';
const AOF_MANIFEST = `file ${AOF_BASE} seq 1 type b\n`;

/** How long the replica may take to catch up with the primary before its snapshot. */
const CATCH_UP_MS = 30_000;
/** How long a BGSAVE, the loading of a restored snapshot or a resync may take. */
const LONG_MS = 3_600_000;
const POLL_MS = 20;

export interface RedisBackupParts {
  /** The server program (redis-server, valkey-server), for messages. */
  readonly server: string;
  readonly admin: RedisAdmin;
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[];
  endpoint(spec: InstanceSpec, role: RedisRole): RedisEndpoint;
}

/** Fails unless what flows through starts as an RDB file does (`REDIS` and a version). */
function rdbHeaderCheck(): Transform {
  let head = Buffer.alloc(0);
  let checked = false;
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      if (!checked) {
        head = Buffer.concat([head, chunk]);
        if (head.length >= 9) {
          checked = true;
          if (head.subarray(0, 5).toString('latin1') !== 'REDIS') return done(new Error('the snapshot is not an RDB file'));
        }
      }
      done(null, chunk);
    },
    flush(done: TransformCallback) {
      done(checked ? null : new Error('the snapshot is not an RDB file (too short)'));
    },
  });
}

/**
 * Backups of a redis_ha_instance. The snapshot is the replica's: BGSAVE there (once it has caught
 * up with what the primary had when the backup began), so the primary never forks for a backup;
 * the RDB it writes is read from the replica's directory. A restore stops both engines and makes
 * the snapshot the base of a new append-only directory: with `appendonly yes`, Redis 7 loads the
 * AOF (never `dump.rdb`) at start, and a multi-part AOF's base may be an RDB. The primary starts on
 * it, the replica starts empty and resyncs, and a later restart loads the same AOF.
 */
export class RedisBackupDriver implements BackupDriver {
  readonly format = 'rdb';

  constructor(private readonly parts: RedisBackupParts) {}

  unavailableReason(): string | undefined {
    return undefined;
  }

  private local(place: InstancePlace): void {
    if (place.cluster) throw new Error('backups of redis instances on Kubernetes are not supported yet');
  }

  async snapshot(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<Snapshot> {
    this.local(place);
    const { admin } = this.parts;
    const [, replica] = this.parts.units(spec, place.dir) as [UnitDefinition, UnitDefinition];
    const primaryEp = this.parts.endpoint(spec, 'primary');
    const replicaEp = this.parts.endpoint(spec, 'replica');
    // Whatever the primary acknowledged before the backup began is in the snapshot.
    const target = Number((await admin.info(primaryEp, 'replication')).master_repl_offset ?? 0);
    await until(ctx.signal, CATCH_UP_MS, 'the replica to catch up with the primary', async () => {
      const r = await admin.info(replicaEp, 'replication');
      if (r.master_link_status !== 'up')
        return `the replica is not in sync with the primary (master_link_status:${r.master_link_status ?? 'unknown'})`;
      const at = Number(r.slave_repl_offset ?? -1);
      return at >= target ? undefined : `the replica is at replication offset ${at}, the primary at ${target}`;
    });
    const saves = Number((await admin.info(replicaEp, 'persistence')).rdb_saves ?? 0);
    let running = await this.bgsave(replicaEp, ctx.signal);
    await until(ctx.signal, LONG_MS, 'BGSAVE on the replica', async () => {
      const p = await admin.info(replicaEp, 'persistence');
      if (Number(p.rdb_saves ?? 0) > saves && p.rdb_bgsave_in_progress === '0') return undefined;
      if (p.rdb_bgsave_in_progress === '1') running = true;
      else if (running) throw new Error(`BGSAVE on the replica failed: ${place.host.logTail(replica).split('\n').slice(-3).join(' ')}`);
      return 'BGSAVE still running';
    });
    const usedBytes = Number((await admin.info(primaryEp, 'memory')).used_memory);
    const server = await admin.info(replicaEp, 'server');
    const engineVersion = serverVersion(server) ?? spec.version;
    // Opened now: a later BGSAVE replaces the file by a rename, which leaves this one readable.
    return { stream: place.host.readStream(replica, RDB_FILE), usedBytes: Number.isFinite(usedBytes) ? usedBytes : null, engineVersion };
  }

  /** Starts a BGSAVE (scheduled after an AOF rewrite that runs); true when it started at once. */
  private async bgsave(ep: RedisEndpoint, signal?: AbortSignal): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        const reply = String(await this.parts.admin.command(ep, ['BGSAVE']));
        return /started/i.test(reply);
      } catch (err) {
        const message = (err as Error).message;
        if (/append only file rewriting|aof/i.test(message)) {
          await this.parts.admin.command(ep, ['BGSAVE', 'SCHEDULE']);
          return false;
        }
        // another save runs (a resync): wait for it, then ask again
        if (!/already in progress/i.test(message) || attempt > 1000) throw err;
        throwIfCancelled(signal, 'waiting for a BGSAVE of the replica to end');
        await sleep(50, signal);
      }
    }
  }

  async restore(spec: InstanceSpec, place: InstancePlace, source: Readable, ctx: StepContext): Promise<void> {
    this.local(place);
    const { host } = place;
    const [primary, replica] = this.parts.units(spec, place.dir) as [UnitDefinition, UnitDefinition];
    // Read and checked to its end before anything of the instance is touched.
    await host.writeStream(primary, STAGED_FILE, chain(source, rdbHeaderCheck()));
    ctx.step('restore:staged');
    await host.stopUnit(replica);
    await host.stopUnit(primary);
    ctx.step('restore:engines-stopped');
    host.remove(primary, NEW_AOF_DIR);
    host.writeFile(primary, `${NEW_AOF_DIR}/${AOF_MANIFEST_NAME}`, AOF_MANIFEST);
    host.rename(primary, STAGED_FILE, `${NEW_AOF_DIR}/${AOF_BASE}`);
    host.rename(primary, NEW_AOF_DIR, AOF_DIR);
    // The replica's data is the old one: it starts empty and takes the primary's in a full sync.
    for (const unit of [primary, replica]) host.remove(unit, RDB_FILE);
    host.remove(replica, AOF_DIR);
    ctx.step('restore:data-swapped');
    await this.start(spec, place, primary, 'primary', ctx.signal);
    await this.start(spec, place, replica, 'replica', ctx.signal);
    const replicaEp = this.parts.endpoint(spec, 'replica');
    await until(ctx.signal, LONG_MS, 'the replica to resync', async () => {
      const link = (await this.parts.admin.info(replicaEp, 'replication')).master_link_status;
      return link === 'up' ? undefined : `the replica is not in sync yet (master_link_status:${link ?? 'unknown'})`;
    });
  }

  /** Starts a unit and waits until it answers PING (after loading its data). */
  private async start(
    spec: InstanceSpec,
    place: InstancePlace,
    unit: UnitDefinition,
    role: RedisRole,
    signal?: AbortSignal,
  ): Promise<void> {
    await place.host.ensureUnit(unit);
    const ep = this.parts.endpoint(spec, role);
    await until(signal, LONG_MS, `${this.parts.server} ${role} to load the restored data`, async () => {
      if (!place.host.isRunning(unit)) throw new Error(`${this.parts.server} ${role} exited: ${lastLines(place.host, unit)}`);
      try {
        await this.parts.admin.ping(ep);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    });
  }
}

const AOF_MANIFEST_NAME = 'appendonly.aof.manifest';

function lastLines(host: UnitHost, unit: UnitDefinition): string {
  return host.logTail(unit).split('\n').slice(-3).join(' ');
}

/** Polls `check` until it returns undefined; throws its last answer after `ms`. */
async function until(signal: AbortSignal | undefined, ms: number, what: string, check: () => Promise<string | undefined>): Promise<void> {
  const deadline = Date.now() + ms;
  let last = '';
  for (;;) {
    throwIfCancelled(signal, `waiting for ${what}`);
    try {
      const problem = await check();
      if (problem === undefined) return;
      last = problem;
    } catch (err) {
      // an answer that says it cannot succeed ends the wait; a connection error is waited out
      if (!isTransient(err)) throw err;
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}: ${last}`);
    await sleep(POLL_MS, signal);
  }
}

function isTransient(err: unknown): boolean {
  const text = `${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message ?? ''}`;
  return /ECONNREFUSED|ECONNRESET|EPIPE|LOADING|no answer within|closed|Socket/i.test(text);
}
