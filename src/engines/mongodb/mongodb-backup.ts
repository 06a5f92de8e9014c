import type { Readable } from 'node:stream';
import { findExecutable } from '../../lib/binaries.js';
import { programOutput, runWithInput } from '../../lib/child-streams.js';
import type { InstancePlace, InstanceSpec, StepContext, UnitDefinition } from '../../domain/units.js';
import type { BackupDriver, Snapshot } from '../engine.js';

/** hangar's user on every MongoDB instance (mongodb-cluster.ts). */
const ADMIN_USER = 'hangar';
/** Where a restore keeps the archive while it is read and checked (in the first unit's directory). */
const STAGED_FILE = 'restore.archive.gz';
/** The tools' configuration (mode 0600): the URI with hangar's password, kept off their command line. */
const TOOLS_CONFIG = 'mongo-tools.yaml';

export interface MongodbBackupOptions {
  /** PATH to find mongodump and mongorestore (MongoDB Database Tools) on. */
  readonly searchPath: string;
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[];
}

/**
 * Backups of MongoDB instances with the MongoDB Database Tools: `mongodump --archive --gzip`
 * (with `--oplog` on replica sets, for a snapshot consistent at one point in time, read from a
 * secondary), and `mongorestore --archive --gzip --drop` (with `--oplogReplay`). Sharded
 * instances are dumped through their mongos, without an oplog. Where the tools are missing,
 * backups of MongoDB are refused, naming them.
 */
export class MongodbBackupDriver implements BackupDriver {
  readonly format = 'mongodb-archive';
  private readonly mongodump: string | undefined;
  private readonly mongorestore: string | undefined;

  constructor(private readonly opts: MongodbBackupOptions) {
    this.mongodump = findExecutable('mongodump', opts.searchPath);
    this.mongorestore = findExecutable('mongorestore', opts.searchPath);
  }

  unavailableReason(): string | undefined {
    const missing = [this.mongodump ? undefined : 'mongodump', this.mongorestore ? undefined : 'mongorestore'].filter(Boolean);
    if (missing.length === 0) return undefined;
    return `backups of mongodb need ${missing.join(' and ')} (the MongoDB Database Tools), which are not installed on this host`;
  }

  /** The connection to dump from or restore into, hangar's user authenticating (its password in the URI, never on a command line others see). */
  private uri(spec: InstanceSpec, forReading: boolean): string {
    const auth = `${ADMIN_USER}:${encodeURIComponent(spec.adminSecret)}@`;
    const port = (role: string) => spec.ports[role];
    switch (spec.type) {
      case 'mongodb_singledb':
        return `mongodb://${auth}127.0.0.1:${port('engine.0')}/?authSource=admin`;
      case 'mongodb_sharded':
        return `mongodb://${auth}127.0.0.1:${port('engine.mongos')}/?authSource=admin`;
      default: {
        const hosts = [0, 1, 2].map((i) => `127.0.0.1:${port(`engine.${i}`)}`).join(',');
        return `mongodb://${auth}${hosts}/?authSource=admin&replicaSet=rs-${spec.id}${forReading ? '&readPreference=secondaryPreferred' : ''}`;
      }
    }
  }

  private replicaSet(spec: InstanceSpec): boolean {
    return spec.type === 'mongodb_replica_set' || spec.type === 'mongodb_jumbo_replica_set';
  }

  private env(): NodeJS.ProcessEnv {
    return { PATH: this.opts.searchPath };
  }

  /** Writes the tools' configuration (the URI, with the password) and returns its path. */
  private config(spec: InstanceSpec, place: InstancePlace, forReading: boolean): string {
    const [first] = this.opts.units(spec, place.dir) as [UnitDefinition];
    place.host.writeFile(first, TOOLS_CONFIG, `uri: ${JSON.stringify(this.uri(spec, forReading))}\n`);
    return `${first.dir}/${TOOLS_CONFIG}`;
  }

  async snapshot(spec: InstanceSpec, place: InstancePlace): Promise<Snapshot> {
    if (!this.mongodump) throw new Error(this.unavailableReason());
    const args = [
      `--config=${this.config(spec, place, true)}`,
      '--archive',
      '--gzip',
      ...(this.replicaSet(spec) ? ['--oplog'] : []),
      '--quiet',
    ];
    return { stream: programOutput(this.mongodump, args, this.env()), usedBytes: null, engineVersion: spec.version };
  }

  async restore(spec: InstanceSpec, place: InstancePlace, source: Readable, ctx: StepContext): Promise<void> {
    if (!this.mongorestore) throw new Error(this.unavailableReason());
    const [first] = this.opts.units(spec, place.dir) as [UnitDefinition];
    // Read and checked whole before mongorestore changes anything.
    await place.host.writeStream(first, STAGED_FILE, source);
    ctx.step('mongodb-restore:staged');
    try {
      // Users and roles are hangar's (its own admin user among them, with this instance's
      // password): they stay as they are, and the store's users are applied again afterwards.
      const args = [
        `--config=${this.config(spec, place, false)}`,
        '--archive',
        '--gzip',
        '--drop',
        ...(this.replicaSet(spec) ? ['--oplogReplay'] : []),
        '--nsExclude=admin.system.users',
        '--nsExclude=admin.system.roles',
        '--nsExclude=admin.system.version',
        '--quiet',
      ];
      await runWithInput(this.mongorestore, args, this.env(), place.host.readStream(first, STAGED_FILE));
    } finally {
      place.host.remove(first, STAGED_FILE);
    }
  }
}
