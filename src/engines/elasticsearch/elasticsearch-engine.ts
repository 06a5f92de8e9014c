import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EdgeRoute } from '../../domain/endpoints.js';
import { TerminalError } from '../../domain/errors.js';
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
import { sleep } from '../../lib/time.js';
import type { EngineSupport, Engine } from '../engine.js';
import { ElasticsearchBackupDriver, SNAPSHOT_DIR } from './elasticsearch-backup.js';
import {
  ES_ADMIN_USER,
  NODE_TMP_DIR,
  dashboardsConfigFile,
  heapMb,
  jvmEnvironment,
  loggingFile,
  nodeConfigFile,
  renderDashboardsConfig,
  renderFileRealm,
  renderJvmOptions,
  renderLogging,
  renderNodeConfig,
  renderRoles,
} from './elasticsearch-config.js';
import { servedRoutes } from './elasticsearch-edge.js';
import { clusterHealth, healthProblem, type Credentials } from './elasticsearch-probe.js';
import { startFailure } from './elasticsearch-start.js';
import {
  dashboardsUse,
  nodeFor,
  pluginInstalled,
  rootRefusal,
  servedVersions,
  type DashboardsUse,
  type EngineBinary,
  type NodeInstall,
  type SearchProduct,
} from './elasticsearch-versions.js';

/** A node starts in tens of seconds (a JVM, then the cluster state): how long a pass waits for it. */
const READY_TIMEOUT_MS = 90_000;
const POLL_MS = 250;
/** Runs the node's start script with the environment it needs (the runtime passes PATH only). */
const ENV = '/usr/bin/env';
/** Its absence in the node's directory means the node never ran. */
const DATA_DIR = 'data';
/** What the node was last started with (command line and files): when it changes, a running node is restarted. */
const LAUNCH_FILE = 'hangar-launch.json';

export interface ElasticsearchEngineOptions {
  readonly product: SearchProduct;
  /** The nodes it can run, one per version (see nodesOf). */
  readonly nodes: readonly NodeInstall[];
  /** Kibana or OpenSearch Dashboards, when found. */
  readonly dashboards?: EngineBinary;
  /** Whether engines run as root here (hangar as root with HANGAR_ENGINE_USER=root): both products refuse to. */
  readonly enginesRunAsRoot: boolean;
  /** PATH for the tools of backups (tar). */
  readonly searchPath?: string;
  /** What to do for a version that is not installed, in words for operators. */
  readonly installHint?: string;
}

/** The distribution's own jvm.options, from its home (read once per home). */
const jvmOptionsOfHome = new Map<string, string | undefined>();
function distributionJvmOptions(home: string): string | undefined {
  if (!jvmOptionsOfHome.has(home)) {
    let text: string | undefined;
    try {
      text = readFileSync(join(home, 'config', 'jvm.options'), 'utf8');
    } catch {
      text = undefined;
    }
    jvmOptionsOfHome.set(home, text);
  }
  return jvmOptionsOfHome.get(home);
}

/**
 * An elasticsearch instance: one node (Elasticsearch or OpenSearch) on loopback HTTP and transport
 * ports, with Kibana (or OpenSearch Dashboards) next to it when one of its release series is
 * found. Each instance runs the node of its own version, several versions side by side. The
 * node's directory is its configuration directory; data lives in `data/` below it.
 */
export class ElasticsearchEngine implements Engine {
  readonly service = 'elasticsearch' as const;
  /** Snapshots through the node's snapshot API, to an fs repository in its directory. */
  readonly backups: ElasticsearchBackupDriver;

  constructor(private readonly opts: ElasticsearchEngineOptions) {
    this.backups = new ElasticsearchBackupDriver({
      searchPath: opts.searchPath ?? process.env.PATH ?? '/usr/bin:/bin',
      units: (s, d) => this.units(s, d),
      credentials: (s) => this.credentials(s),
    });
  }

  /** The versions it serves here, or why it cannot run; notes on what clients get (Kibana, the edge's refusals). */
  support(): EngineSupport {
    const { product, nodes } = this.opts;
    const root = rootRefusal(product, this.opts.enginesRunAsRoot);
    if (root) return { unavailableReason: root };
    if (nodes.length === 0)
      return { unavailableReason: `no ${product} is installed${this.opts.installHint ? `: ${this.opts.installHint}` : ''}` };
    const notes: string[] = [];
    const bare = nodes.filter((n) => !n.security).map((n) => n.version);
    if (bare.length > 0) {
      notes.push(
        `${product} ${bare.join(', ')}: the node has no security of its own; its http and https listeners refuse what clients of hangar may not do (cluster settings, snapshots and repositories, shutdown, node administration, security endpoints) with 403`,
      );
    }
    // one note per reason, naming the versions it applies to
    const noKibana = new Map<string, string[]>();
    for (const n of nodes) {
      const d = this.dashboardsOf(n);
      if (!d.use) noKibana.set(d.reason, [...(noKibana.get(d.reason) ?? []), n.version]);
    }
    for (const [reason, versions] of noKibana) {
      notes.push(
        `${product} ${versions.join(', ')}: no Kibana runs beside the node (${reason}); kibana_http and kibana_https answer 503 saying so`,
      );
    }
    return { versions: servedVersions(nodes), notes };
  }

  /** Whether Kibana runs next to the nodes of an instance's version, and why not. */
  dashboardsUse(spec: Pick<InstanceSpec, 'version'>): DashboardsUse {
    const node = nodeFor(this.opts.nodes, spec.version);
    return node ? this.dashboardsOf(node) : { use: false, reason: `no ${this.opts.product} ${spec.version} is installed` };
  }

  private dashboardsOf(node: NodeInstall): DashboardsUse {
    return dashboardsUse(node, this.opts.dashboards);
  }

  /** The node of the instance's version; never another version (a TerminalError saying what is installed). */
  private node(spec: Pick<InstanceSpec, 'version'>): NodeInstall {
    const node = nodeFor(this.opts.nodes, spec.version);
    if (node) return node;
    const installed = this.opts.nodes.map((n) => n.version).join(', ') || 'none';
    throw new TerminalError(
      `${this.opts.product} ${spec.version} is not installed here (installed: ${installed})${this.opts.installHint ? `: ${this.opts.installHint}` : ''}`,
    );
  }

  /** hangar's user where the node has security; none where it has not (the edge admits by ACL, the node everyone). */
  private credentials(spec: InstanceSpec): Credentials | undefined {
    return this.node(spec).security ? { username: ES_ADMIN_USER, password: spec.adminSecret } : undefined;
  }

  private port(spec: InstanceSpec, role: string): number {
    const port = spec.ports[role];
    if (port === undefined) throw new TerminalError(`instance ${spec.id} has no port for role ${role}`);
    return port;
  }

  /** The listeners as this node is served: the edge refuses admin requests where it has no security, answers Kibana's where none runs. */
  edgeRoutes(spec: InstanceSpec): readonly EdgeRoute[] {
    const node = nodeFor(this.opts.nodes, spec.version);
    const dashboards = node ? this.dashboardsOf(node) : undefined;
    return servedRoutes(spec.routes, {
      security: node?.security ?? false,
      ...(dashboards?.use ? {} : { noKibana: dashboards?.reason ?? `no ${this.opts.product} ${spec.version} is installed` }),
    });
  }

  /** The environment and arguments of the node's start script, as its release line reads them. */
  private launch(node: NodeInstall, dir: string, heap: number): { env: Record<string, string>; args: string[] } {
    const data = join(dir, DATA_DIR);
    const repo = join(dir, SNAPSHOT_DIR);
    const tmp = join(dir, NODE_TMP_DIR);
    switch (node.family) {
      case 'es2':
        return {
          env: jvmEnvironment(heap, dir),
          args: [`-Des.path.conf=${dir}`, `-Des.path.data=${data}`, `-Des.path.repo=${repo}`],
        };
      case 'es5':
        return {
          env: { ES_JVM_OPTIONS: join(dir, 'jvm.options') },
          args: [`-Epath.conf=${dir}`, `-Epath.data=${data}`, `-Epath.repo=${repo}`],
        };
      case 'opensearch':
        return { env: { OPENSEARCH_PATH_CONF: dir, OPENSEARCH_TMPDIR: tmp }, args: [`-Epath.data=${data}`, `-Epath.repo=${repo}`] };
      default:
        return { env: { ES_PATH_CONF: dir, ES_TMPDIR: tmp }, args: [`-Epath.data=${data}`, `-Epath.repo=${repo}`] };
    }
  }

  units(spec: InstanceSpec, instanceDir: string): UnitDefinition[] {
    const node = this.node(spec);
    const dir = join(instanceDir, 'node');
    const { env, args } = this.launch(node, dir, heapMb(spec.plan));
    const unit: UnitDefinition = {
      instanceId: spec.id,
      role: 'node',
      dir,
      bin: ENV,
      // path.data names the unit directory on the command line, which is how the runtime recognises the process
      args: [...Object.entries({ ...node.env, ...env }).map(([k, v]) => `${k}=${v}`), node.program, ...args],
    };
    const dashboards = this.dashboardsOf(node);
    if (!dashboards.use) return [unit];
    const kdir = join(instanceDir, 'kibana');
    return [
      unit,
      {
        instanceId: spec.id,
        role: 'kibana',
        dir: kdir,
        bin: dashboards.binary.path,
        args: ['--config', join(kdir, dashboardsConfigFile(node.product))],
      },
    ];
  }

  /** Writes the node's (and Kibana's) files; true when one of the node's changed, which a running node must be restarted for. */
  private writeConfig(spec: InstanceSpec, node: NodeInstall, units: readonly UnitDefinition[], host: UnitHost): boolean {
    const [unit, kibana] = units as [UnitDefinition, UnitDefinition | undefined];
    const httpPort = this.port(spec, 'engine.http');
    const heap = heapMb(spec.plan);
    const files: [string, string][] = [
      [
        nodeConfigFile(node.product),
        renderNodeConfig({
          product: node.product,
          family: node.family,
          version: node.version,
          instanceId: spec.id,
          dir: unit.dir,
          httpPort,
          transportPort: this.port(spec, 'engine.transport'),
          security: node.security,
          securityPlugin: node.securityPlugin,
        }),
      ],
      [loggingFile(node.family), renderLogging(node.family)],
      [join(NODE_TMP_DIR, 'README'), 'Temporary files of the node (java.io.tmpdir), in its own directory.\n'],
      [LAUNCH_FILE, `${JSON.stringify({ program: node.program, args: unit.args }, null, 2)}\n`],
    ];
    if (node.family !== 'es2')
      files.push(['jvm.options', renderJvmOptions(node.family, distributionJvmOptions(node.home), heap, unit.dir)]);
    if (node.security) {
      const realm = renderFileRealm(spec.id, spec.adminSecret);
      files.push(['users', realm.users], ['users_roles', realm.usersRoles], ['roles.yml', renderRoles()]);
    }
    let changed = false;
    for (const [name, content] of files) if (host.writeFile(unit, name, content)) changed = true;
    if (kibana) {
      host.writeFile(
        kibana,
        dashboardsConfigFile(node.product),
        renderDashboardsConfig({
          product: node.product,
          instanceId: spec.id,
          dir: kibana.dir,
          port: this.port(spec, 'engine.kibana'),
          httpPort,
          adminSecret: spec.adminSecret,
          securityPlugin: node.product === 'opensearch' && pluginInstalled(kibana.bin, 'securityDashboards'),
        }),
      );
    }
    return changed;
  }

  async ensureUnits(spec: InstanceSpec, place: InstancePlace, ctx: StepContext): Promise<EnsureResult> {
    const { host } = place;
    const refusal = rootRefusal(this.opts.product, this.opts.enginesRunAsRoot);
    if (refusal) throw new TerminalError(refusal);
    const node = this.node(spec);
    const units = this.units(spec, place.dir);
    const [unit, kibana] = units as [UnitDefinition, UnitDefinition | undefined];
    const fresh = !host.exists(unit, DATA_DIR);
    const step = (what: string) => ctx.step(`${fresh ? 'create' : 'ensure'}:${what}`);
    const changed = this.writeConfig(spec, node, units, host);
    // A new heap (a resize), another program or other settings: the node reads them at start only.
    if (changed && host.isRunning(unit)) {
      await host.stopUnit(unit);
      step('node-stopped');
    }
    const logStart = host.logEnd(unit);
    const { started } = await host.ensureUnit(unit);
    if (started) step('node-started');
    await this.waitServing(spec, node, unit, host, ctx.signal, started ? logStart : undefined);
    // Kibana takes as long again to start; it is not waited for (the instance serves without it).
    if (kibana && (await host.ensureUnit(kibana)).started) step('kibana-started');
    return { fresh };
  }

  /**
   * Waits until the node answers its health on its port; fails as soon as its process exits,
   * with the line of its output that says why (`logStart`: where the output of a start this pass
   * made begins).
   */
  private async waitServing(
    spec: InstanceSpec,
    node: NodeInstall,
    unit: UnitDefinition,
    host: UnitHost,
    signal: AbortSignal | undefined,
    logStart: number | undefined,
  ): Promise<void> {
    const port = this.port(spec, 'engine.http');
    const until = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    for (;;) {
      throwIfCancelled(signal, `waiting for ${node.product}`);
      try {
        await clusterHealth({ host: '127.0.0.1', port }, this.credentials(spec));
        return;
      } catch (err) {
        last = (err as Error).message;
      }
      if (!host.isRunning(unit)) {
        throw this.exited(spec, node, logStart !== undefined ? host.logFrom(unit, logStart) : host.logTail(unit), last);
      }
      if (Date.now() > until) throw new Error(`${node.product} ${node.version} does not answer on port ${port}: ${last}`);
      await sleep(POLL_MS, signal);
    }
  }

  /**
   * Why the node exited: a port held by another process (the reconciler moves it; its output
   * names the port, HTTP or transport), or else, for good, the line of its output that says
   * why: it would fail the same way again.
   */
  private exited(spec: InstanceSpec, node: NodeInstall, output: string, last: string): Error {
    const message = `${node.product} ${node.version} exited at start: ${startFailure(output) ?? last}`;
    if (/Address already in use/i.test(output)) {
      const role = (['engine.transport', 'engine.http'] as const).find((r) => output.includes(`:${spec.ports[r]}`)) ?? 'engine.http';
      return new PortTakenError(role, this.port(spec, role), message);
    }
    return new TerminalError(message);
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
    try {
      for (const unit of this.units(spec, place.dir)) {
        if (!place.host.isRunning(unit))
          return { healthy: false, reason: `${unit.role === 'node' ? this.opts.product : 'kibana'} is not running` };
      }
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
