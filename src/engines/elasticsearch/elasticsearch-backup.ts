import { request } from 'node:http';
import type { Readable } from 'node:stream';
import { findExecutable } from '../../lib/binaries.js';
import { programOutput, runWithInput } from '../../lib/child-streams.js';
import type { InstancePlace, InstanceSpec, StepContext, UnitDefinition } from '../../domain/units.js';
import type { BackupDriver, Snapshot } from '../engine.js';
import type { Credentials } from './elasticsearch-probe.js';

/** The node's snapshot repository, a directory of the unit (`path.repo`, given on the command line). */
export const SNAPSHOT_DIR = 'snapshots';
const REPOSITORY = 'hangar';
const SNAPSHOT = 'hangar-backup';
/** Where a restore unpacks the repository it was given, beside the node's own. */
const STAGED_TAR = 'restore.tar';

export interface ElasticsearchBackupOptions {
  readonly searchPath: string;
  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[];
  credentials(spec: InstanceSpec): Credentials | undefined;
}

/** One call of the node's HTTP API on loopback, as hangar's user; resolves with the parsed answer. */
function call(port: number, credentials: Credentials | undefined, method: string, path: string, body?: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        timeout: 3_600_000,
        headers: {
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...(credentials
            ? { authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if ((res.statusCode ?? 500) >= 300) return reject(new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 300)}`));
          try {
            resolve(text ? JSON.parse(text) : undefined);
          } catch {
            reject(new Error(`${method} ${path}: not JSON: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Backups of an elasticsearch instance with the node's snapshot API: an `fs` repository in the
 * node's directory (`path.repo`), one snapshot of every index taken there and packed with `tar`;
 * a restore unpacks it as the repository, deletes the indices and restores the snapshot.
 */
export class ElasticsearchBackupDriver implements BackupDriver {
  readonly format = 'elasticsearch-snapshot';
  private readonly tar: string | undefined;

  constructor(private readonly opts: ElasticsearchBackupOptions) {
    this.tar = findExecutable('tar', opts.searchPath);
  }

  unavailableReason(): string | undefined {
    return this.tar ? undefined : 'backups of elasticsearch need tar, which is not installed on this host';
  }

  private node(spec: InstanceSpec, place: InstancePlace): UnitDefinition {
    return (this.opts.units(spec, place.dir) as [UnitDefinition])[0];
  }

  private api(spec: InstanceSpec) {
    const port = spec.ports['engine.http'];
    if (port === undefined) throw new Error(`instance ${spec.id} has no port for engine.http`);
    return (method: string, path: string, body?: unknown) => call(port, this.opts.credentials(spec), method, path, body);
  }

  private async registerRepository(spec: InstanceSpec, node: UnitDefinition): Promise<void> {
    await this.api(spec)('PUT', `/_snapshot/${REPOSITORY}`, { type: 'fs', settings: { location: `${node.dir}/${SNAPSHOT_DIR}` } });
  }

  /**
   * Forgets the repository and empties its directory. The node keeps what it read of a
   * repository (its snapshots) while the repository is registered: files replaced under it
   * would be taken for the old ones ("snapshot with the same name already exists").
   */
  private async clearRepository(spec: InstanceSpec, node: UnitDefinition, place: InstancePlace): Promise<void> {
    await this.api(spec)('DELETE', `/_snapshot/${REPOSITORY}`).catch((err: unknown) => {
      if (!/HTTP 404/.test((err as Error).message)) throw err;
    });
    place.host.remove(node, SNAPSHOT_DIR);
  }

  async snapshot(spec: InstanceSpec, place: InstancePlace): Promise<Snapshot> {
    const node = this.node(spec, place);
    const api = this.api(spec);
    await this.clearRepository(spec, node, place);
    await this.registerRepository(spec, node);
    await api('PUT', `/_snapshot/${REPOSITORY}/${SNAPSHOT}?wait_for_completion=true`, { indices: '*', include_global_state: false });
    const info = (await api('GET', '/')) as { version?: { number?: string } };
    return {
      stream: programOutput(this.tar!, ['-C', node.dir, '-c', SNAPSHOT_DIR], { PATH: this.opts.searchPath }),
      usedBytes: null,
      engineVersion: info.version?.number ?? spec.version,
    };
  }

  async restore(spec: InstanceSpec, place: InstancePlace, source: Readable, ctx: StepContext): Promise<void> {
    const node = this.node(spec, place);
    const api = this.api(spec);
    await place.host.writeStream(node, STAGED_TAR, source);
    ctx.step('elasticsearch-restore:staged');
    try {
      await this.clearRepository(spec, node, place);
      await runWithInput(this.tar!, ['-C', node.dir, '-x'], { PATH: this.opts.searchPath }, place.host.readStream(node, STAGED_TAR));
      // tar ran as hangar's user: the node, which may run as the engine user, must read it
      place.host.handOver(node, SNAPSHOT_DIR);
    } finally {
      place.host.remove(node, STAGED_TAR);
    }
    await this.registerRepository(spec, node);
    await api('DELETE', '/*,-.*?expand_wildcards=open,closed');
    await api('POST', `/_snapshot/${REPOSITORY}/${SNAPSHOT}/_restore?wait_for_completion=true`, {
      // the node's own security index (6.x: .security-6), if one was taken, stays the node's
      indices: '*,-.security*',
      include_global_state: false,
    });
  }
}
