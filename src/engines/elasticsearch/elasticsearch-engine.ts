import { join } from 'node:path';
import { sleep } from '../../lib/time.js';
import {
  PortTakenError,
  throwIfCancelled,
  type EnsureResult,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDefinition,
  type UnitHost,
} from '../../domain/units.js';
import { TerminalError } from '../../domain/errors.js';
import type { Engine } from '../engine.js';
import { ElasticsearchBackupDriver, SNAPSHOT_DIR } from './elasticsearch-backup.js';
import {
  ES_ADMIN_USER,
  confDirVariable,
  dashboardsConfigFile,
  heapMb,
  nodeConfigFile,
  renderDashboardsConfig,
  renderFileRealm,
  renderJvmOptions,
  renderLog4j2,
  renderNodeConfig,
  renderRoles,
} from './elasticsearch-config.js';
import { clusterHealth, healthProblem, type Credentials } from './elasticsearch-probe.js';
import {
  dashboardsUse,
  elasticsearchRefusal,
  pluginInstalled,
  productOf,
  type DashboardsUse,
  type EngineBinary,
  type SearchProduct,
} from './elasticsearch-versions.js';

/** A node starts in tens of seconds (a JVM, then the cluster state): how long a pass waits for it. */
const READY_TIMEOUT_MS = 90_000;
const POLL_MS = 250;
/** Runs the node's start script with its configuration directory in the environment (the runtime passes PATH only). */
const ENV = '/usr/bin/env';
/** Its absence in the node's directory means the node never ran. */
const DATA_DIR = 'data';

export interface ElasticsearchEngineOptions {
  /** The elasticsearch or opensearch binary. */
  readonly node: EngineBinary;
  /** Kibana or OpenSearch Dashboards, when found. */
  readonly dashboards?: EngineBinary;
  /** Whether engines run as root here (hangar as root with HANGAR_ENGINE_USER=root): both products refuse to. */
  readonly enginesRunAsRoot: boolean;
  /** PATH for the tools of backups (tar). */
  readonly searchPath?: string;
}

/**
 * An elasticsearch instance: one node (Elasticsearch or OpenSearch) on loopback HTTP and transport
 * ports, with Kibana (or OpenSearch Dashboards) next to it when its binary is found. The node's
 * directory is its configuration directory; data lives in `data/` below it.
 */
export class ElasticsearchEngine implements Engine {
  readonly service = 'elasticsearch' as const;
  private readonly product: SearchProduct;
  private readonly dashboards: DashboardsUse;
  private readonly securityPlugin: boolean;
  private readonly dashboardsSecurityPlugin: boolean;
  /** Snapshots through the node's snapshot API, to an fs repository in its directory. */
  readonly backups: ElasticsearchBackupDriver;

  constructor(private readonly opts: ElasticsearchEngineOptions) {
    this.backups = new ElasticsearchBackupDriver({
      searchPath: opts.searchPath ?? process.env.PATH ?? '/usr/bin:/bin',
      units: (s, d) => this.units(s, d),
      credentials: (s) => this.credentials(s),
    });
    this.product = productOf(opts.node);
    this.dashboards = dashboardsUse(opts.node, opts.dashboards);
    this.securityPlugin = this.product === 'opensearch' && pluginInstalled(opts.node.path, 'opensearch-security');
    this.dashboardsSecurityPlugin =
      this.dashboards.use && this.product === 'opensearch' && pluginInstalled(this.dashboards.binary.path, 'securityDashboards');
  }

  /** Whether the node binary can run instances here (its version; not as root). */
  support(): { readonly unavailableReason?: string } {
    const reason = elasticsearchRefusal(this.opts.node, this.opts.enginesRunAsRoot);
    return reason ? { unavailableReason: reason } : {};
  }

  /** Whether Kibana runs next to the nodes, and why not. */
  dashboardsUse(): DashboardsUse {
    return this.dashboards;
  }

  /** Elasticsearch has hangar's user; OpenSearch runs without authentication. */
  private credentials(spec: InstanceSpec): Credentials | undefined {
    return this.product === 'elasticsearch' ? { username: ES_ADMIN_USER, password: spec.adminSecret } : undefined;
  }

  private port(spec: InstanceSpec, role: string): number {
    const port = spec.ports[role];
    if (port === undefined) throw new TerminalError(`instance ${spec.id} has no port for ${role}`);
    return port;
  }

  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    const dir = join(instanceDir, 'node');
    const node: UnitDefinition = {
      instanceId: spec.id,
      role: 'node',
      dir,
      bin: ENV,
      // path.data names the unit directory on the command line, which is how the runtime recognises the process
      args: [
        `${confDirVariable(this.product)}=${dir}`,
        this.opts.node.path,
        `-Epath.data=${join(dir, DATA_DIR)}`,
        `-Epath.repo=${join(dir, SNAPSHOT_DIR)}`,
      ],
    };
    if (!this.dashboards.use) return [node];
    const kdir = join(instanceDir, 'kibana');
    return [
      node,
      {
        instanceId: spec.id,
        role: 'kibana',
        dir: kdir,
        bin: this.dashboards.binary.path,
        args: ['--config', join(kdir, dashboardsConfigFile(this.product))],
      },
    ];
  }

  private writeConfig(spec: InstanceSpec, units: readonly UnitDefinition[], host: UnitHost): void {
    const [node, kibana] = units as [UnitDefinition, UnitDefinition | undefined];
    const httpPort = this.port(spec, 'engine.http');
    host.writeFile(
      node,
      nodeConfigFile(this.product),
      renderNodeConfig({
        product: this.product,
        version: this.opts.node.version,
        instanceId: spec.id,
        dir: node.dir,
        httpPort,
        transportPort: this.port(spec, 'engine.transport'),
        securityPlugin: this.securityPlugin,
      }),
    );
    host.writeFile(node, 'jvm.options', renderJvmOptions(this.product, heapMb(spec.plan), node.dir));
    host.writeFile(node, 'log4j2.properties', renderLog4j2());
    if (this.product === 'elasticsearch') {
      const realm = renderFileRealm(spec.id, spec.adminSecret);
      host.writeFile(node, 'users', realm.users);
      host.writeFile(node, 'users_roles', realm.usersRoles);
      host.writeFile(node, 'roles.yml', renderRoles());
    }
    if (kibana) {
      host.writeFile(
        kibana,
        dashboardsConfigFile(this.product),
        renderDashboardsConfig({
          product: this.product,
          instanceId: spec.id,
          dir: kibana.dir,
          port: this.port(spec, 'engine.kibana'),
          httpPort,
          adminSecret: spec.adminSecret,
          securityPlugin: this.dashboardsSecurityPlugin,
        }),
      );
    }
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const { host } = place;
    const refusal = this.support().unavailableReason;
    if (refusal) throw new TerminalError(refusal);
    const units = this.units(spec, place.dir);
    const [node, kibana] = units as [UnitDefinition, UnitDefinition | undefined];
    const fresh = !host.exists(node, DATA_DIR);
    const step = (what: string) => ctx.step(`${fresh ? 'create' : 'ensure'}:${what}`);
    this.writeConfig(spec, units, host);
    const { started } = await host.ensureUnit(node);
    if (started) step('node-started');
    await this.waitServing(spec, node, host, ctx.signal);
    // Kibana takes as long again to start; it is not waited for (the instance serves without it).
    if (kibana && (await host.ensureUnit(kibana)).started) step('kibana-started');
    return { fresh };
  }

  /** Waits until the node answers its health on its port; fails early, with its log, when its process exits. */
  private async waitServing(spec: InstanceSpec, node: UnitDefinition, host: UnitHost, signal: AbortSignal | undefined): Promise<void> {
    const port = this.port(spec, 'engine.http');
    const until = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    for (;;) {
      throwIfCancelled(signal, `waiting for ${this.product}`);
      try {
        await clusterHealth({ host: '127.0.0.1', port }, this.credentials(spec));
        return;
      } catch (err) {
        last = (err as Error).message;
      }
      if (!host.isRunning(node)) throw this.exited(spec, host.logTail(node) || last);
      if (Date.now() > until) throw new Error(`${this.product} does not answer on port ${port}: ${last}`);
      await sleep(POLL_MS, signal);
    }
  }

  /**
   * Why the node exited, from the end of its log: a port held by another process (the
   * reconciler moves it; the log names the port, HTTP or transport), no space left (final), or
   * else the log's last lines.
   */
  private exited(spec: InstanceSpec, tail: string): Error {
    const message = `${this.product} exited: ${tail}`;
    if (/Address already in use/i.test(tail)) {
      const role = (['engine.transport', 'engine.http'] as const).find((r) => tail.includes(`:${spec.ports[r]}`)) ?? 'engine.http';
      return new PortTakenError(role, this.port(spec, role), message);
    }
    if (/No space left on device/i.test(tail)) return new TerminalError(message);
    return new Error(message);
  }

  async readiness(spec: InstanceSpec, _place: InstancePlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      for (const t of targets) {
        const problem = healthProblem(await clusterHealth(t, this.credentials(spec)));
        if (problem) return problem;
      }
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: InstancePlace): Promise<Health> {
    for (const unit of this.units(spec, place.dir)) {
      if (!place.host.isRunning(unit))
        return { healthy: false, reason: `${unit.role === 'node' ? this.product : 'kibana'} is not running` };
    }
    try {
      const problem = healthProblem(
        await clusterHealth({ host: '127.0.0.1', port: this.port(spec, 'engine.http') }, this.credentials(spec)),
      );
      return problem ? { healthy: false, reason: problem } : { healthy: true };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message };
    }
  }

  // HTTP requests open no lasting connection: nothing to forget or close.
  forget(): void {}

  closeIdle(): void {}

  async close(): Promise<void> {}
}
