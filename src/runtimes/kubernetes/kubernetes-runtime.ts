import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import type { Logger } from 'pino';
import type { ClusterPlace, KubeObject, PodState } from '../../domain/cluster.js';
import { accessGroups, type AccessGroup, type EdgeRoute } from '../../domain/endpoints.js';
import { TerminalError } from '../../domain/errors.js';
import {
  throwIfCancelled,
  type AccessRule,
  type EnsureResult,
  type Health,
  type InstancePlace,
  type InstanceSpec,
  type ProbeTarget,
  type StepContext,
  type UnitDriver,
  type UnitHost,
} from '../../domain/units.js';
import { NODE_LOST_AFTER_SECONDS, type KubernetesTarget } from '../../domain/zones.js';
import { matcher, parseCidr } from '../../lib/cidr.js';
import { parseDeniedLine } from '../local/haproxy-config.js';
import { sleep } from '../../lib/time.js';
import {
  cliWord,
  haproxyCommand,
  parseCertSerial,
  parseShowAcl,
  parseShowEvents,
  parseShowSess,
  parseShowStat,
  replaceTlsFile,
} from '../local/haproxy-socket.js';
import type { AccessEnforcer, DeniedConnection, Runtime, RuntimeEvents, RuntimeHealth, RuntimeStats } from '../runtime.js';
import {
  DENIED_RING,
  EDGE_ADMIN_PORT,
  EDGE_TLS_FILES,
  HANGAR_SOURCES_FILE,
  aclFile,
  edgeAccessObjects,
  edgeNames,
  edgeObjects,
  frontendOf,
  normaliseSources,
} from './kube-edge.js';
import { KubeError, type KubeApi, type LiveObject } from './kube-api.js';

/** Every object hangar makes carries these: it finds, adopts and removes its own objects and nothing else. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'hangar' } as const;
export const INSTANCE_LABEL = 'hangar.io/instance';
const MANAGED_SELECTOR = 'app.kubernetes.io/managed-by=hangar';

/** How long a pass waits for the edge pods and for the instance to be usable through them. */
const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 500;
/** How long a removal waits for the instance's pods to be gone. */
const REMOVE_TIMEOUT_MS = 120_000;
/**
 * How long past the end of its grace period a pod being deleted may still be there before hangar
 * deletes it for good (grace period 0). A kubelet that runs confirms a deletion within seconds of
 * the grace period (it kills what is left then); one whose node is lost never does, and
 * Kubernetes 1.20 then keeps the pod Terminating until the node is deleted: the StatefulSet makes
 * no new member meanwhile.
 */
const UNCONFIRMED_DELETION_MS = 15_000;

/** The kinds of objects an instance may have, in the order they are removed (workloads first). */
const KINDS: readonly (readonly [apiVersion: string, kind: string, plural: string])[] = [
  ['apps/v1', 'Deployment', 'deployments'],
  ['apps/v1', 'StatefulSet', 'statefulsets'],
  ['policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets'],
  ['networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies'],
  ['v1', 'Service', 'services'],
  ['v1', 'Secret', 'secrets'],
];

/** The edge's own image, where the zone names none. */
const OFFICIAL_EDGE_IMAGE = 'haproxy:2.6';

/**
 * The image of `product` at `version` in a zone: `images["redis:7.0.15"]`, else `images.redis`,
 * else `official` (the product's official image, as its product module names it).
 */
export function imageOf(
  target: KubernetesTarget,
  product: string,
  version: string,
  official?: (version: string) => string | undefined,
): string {
  const image = target.images[`${product}:${version}`] ?? target.images[product] ?? official?.(version);
  if (!image) throw new TerminalError(`no image for ${product} ${version}: set images["${product}:${version}"] in the zone`);
  return image;
}

/** The address this process reaches `ip` from (the kernel's choice of source, without sending anything). */
function sourceAddressTowards(ip: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(ip.includes(':') ? 'udp6' : 'udp4');
    socket.on('error', (err) => {
      socket.close();
      reject(err);
    });
    socket.connect(9, ip, () => {
      const { address } = socket.address();
      socket.close();
      resolve(address);
    });
  });
}

type Pod = LiveObject;

/** When a pod being deleted is due to be gone (its deletionTimestamp: the end of its grace period), in ms; undefined when it is not being deleted. */
function deletionOf(p: Pod): number | undefined {
  const at = (p.metadata as { deletionTimestamp?: string | Date }).deletionTimestamp;
  if (at === undefined || at === null) return undefined;
  const ms = at instanceof Date ? at.getTime() : Date.parse(at);
  return Number.isNaN(ms) ? undefined : ms;
}

/** A pod as the engines and the edge need to know it. */
function podState(p: Pod): PodState & { ip?: string; hostIp?: string } {
  const conditions = p.status?.conditions ?? [];
  const ready = conditions.some((c) => c.type === 'Ready' && c.status === 'True');
  const unscheduled = conditions.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  const statuses = p.status?.containerStatuses ?? [];
  const waiting = statuses.map((s) => s.state?.waiting).find((w) => w?.reason && w.reason !== 'ContainerCreating');
  const reason = unscheduled
    ? `not scheduled (${unscheduled.reason ?? 'Unschedulable'}): ${unscheduled.message ?? ''}`.trim()
    : waiting
      ? `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
      : undefined;
  return {
    name: p.metadata.name,
    ready,
    phase: p.status?.phase ?? 'Unknown',
    restarts: statuses.reduce((n, s) => n + (s.restartCount ?? 0), 0),
    ...(reason ? { reason } : {}),
    ...(p.status?.podIP ? { ip: p.status.podIP as string } : {}),
    ...(p.status?.hostIP ? { hostIp: p.status.hostIP as string } : {}),
  };
}

/** The fields of `o` that are set, as they are (apply sends them back unchanged). */
function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

/** Units are the cluster's: an engine asked for a local unit on a Kubernetes zone is told so. */
const NO_UNITS: UnitHost = new Proxy({} as UnitHost, {
  get: () => () => {
    throw new TerminalError('this instance runs on Kubernetes: it has no local units');
  },
});

export interface KubernetesRuntimeOptions {
  readonly zone: string;
  readonly target: KubernetesTarget;
  readonly api: KubeApi;
  readonly log: Logger;
  /** The official image of a product's version, used where the zone names none (the product registry knows them). */
  readonly officialImage?: (product: string, version: string) => string | undefined;
}

/**
 * Instances on a Kubernetes cluster: the engine's objects applied with server-side apply (field
 * manager `hangar`), watched, and exposed through an HAProxy edge of their own (admitting only
 * the ACL sources, changed live through its runtime API), with NetworkPolicies as defence in
 * depth. Every object carries `app.kubernetes.io/managed-by: hangar` and the instance id, so the
 * runtime finds, adopts and removes its own objects, and nothing else.
 */
export class KubernetesRuntime implements Runtime {
  readonly kind = 'kubernetes' as const;
  private events: RuntimeEvents | undefined;
  private readonly stops: (() => void)[] = [];
  private watching = false;
  /** Why the API server is not usable, as last found; undefined while it answers. */
  private apiProblem: string | undefined;
  private readonly log: Logger;
  /** hangar's source address towards the pod network, once known. */
  private source: string | undefined;
  /** The CRL each edge pod was given (`<instance>/<pod>` -> its digest): given again when it changes, or to a new pod. */
  private readonly crlGiven = new Map<string, string>();

  constructor(private readonly opts: KubernetesRuntimeOptions) {
    this.log = opts.log.child({ component: 'kubernetes', zone: opts.zone });
  }

  private get api(): KubeApi {
    return this.opts.api;
  }

  private labels(id: string): Record<string, string> {
    return { ...MANAGED_BY, [INSTANCE_LABEL]: id };
  }

  private selector(labels: Readonly<Record<string, string>>): string {
    return Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
  }

  /** Watches the instances' pods and workloads: a change under an instance reconciles it soon; a deletion out of band is said. */
  async start(events: RuntimeEvents): Promise<void> {
    this.events = events;
    this.watching = true;
    const ns = this.api.namespace;
    for (const path of [
      `/api/v1/namespaces/${ns}/pods`,
      `/apis/apps/v1/namespaces/${ns}/statefulsets`,
      `/apis/apps/v1/namespaces/${ns}/deployments`,
      `/api/v1/namespaces/${ns}/services`,
    ]) {
      void this.watch(path);
    }
  }

  private async watch(path: string): Promise<void> {
    let delay = 500;
    while (this.watching) {
      const ended = new Promise<unknown>((resolve) => {
        this.api
          .watch(
            path,
            MANAGED_SELECTOR,
            (e) => {
              this.apiProblem = undefined;
              delay = 500;
              const id = e.object.metadata.labels?.[INSTANCE_LABEL];
              if (!id) return;
              if (e.type === 'DELETED' && e.object.kind !== 'Pod')
                this.log.warn(
                  { instance: id, object: `${e.object.kind ?? path.split('/').pop()}/${e.object.metadata.name}` },
                  'object deleted; the instance is reconciled',
                );
              this.events?.instanceChanged(id);
            },
            resolve,
          )
          .then((stop) => this.stops.push(stop), resolve);
      });
      const err = await ended;
      if (!this.watching) return;
      if (err) {
        this.apiProblem = `the Kubernetes API of zone ${this.opts.zone} does not answer: ${(err as Error).message ?? String(err)}`;
        this.log.warn({ err, path }, 'watch failed; watching again');
      }
      await sleep(delay);
      delay = Math.min(10_000, delay * 2);
    }
  }

  async close(): Promise<void> {
    this.watching = false;
    this.events = undefined;
    for (const stop of this.stops.splice(0)) stop();
  }

  /** NodePorts are handed out from the store; a port another Service holds makes the apply fail, and the pass says so. */
  async portIsFree(): Promise<boolean> {
    return true;
  }

  place(spec: Pick<InstanceSpec, 'id'>): InstancePlace {
    return { dir: '', host: NO_UNITS, cluster: this.clusterPlace(spec.id) };
  }

  private clusterPlace(id: string): ClusterPlace {
    const { target } = this.opts;
    const labels = this.labels(id);
    return {
      namespace: this.api.namespace,
      labels,
      nodeSelector: target.nodeSelector,
      ...(target.topologyZone ? { topologyZone: target.topologyZone } : {}),
      ...(target.storageClass ? { storageClass: target.storageClass } : {}),
      nodeLostAfterSeconds: target.nodeLostAfterSeconds ?? NODE_LOST_AFTER_SECONDS,
      image: (product, version) => imageOf(target, product, version, (v) => this.opts.officialImage?.(product, v)),
      apply: async (objects, ctx) => {
        for (const o of objects) {
          throwIfCancelled(ctx.signal, `applying ${o.kind} ${o.metadata.name}`);
          await this.apply(o, labels);
        }
      },
      serviceAddress: async (name) => {
        const svc = await this.call(() => this.api.get('v1', 'Service', name));
        const ip = svc?.spec?.clusterIP;
        if (typeof ip !== 'string' || ip === '' || ip === 'None') throw new Error(`Service ${name} has no ClusterIP yet`);
        return ip;
      },
      pods: async (selector) => (await this.pods({ ...labels, ...selector })).map(({ hostIp: _host, ...p }) => p),
      rollout: async (kind, name) => {
        const w = await this.call(() => this.api.get('apps/v1', kind, name));
        if (!w) return `${kind} ${name} does not exist`;
        const st = w.status ?? {};
        const want = w.spec?.replicas ?? 1;
        if ((st.observedGeneration ?? 0) < ((w.metadata as { generation?: number }).generation ?? 0))
          return `${kind} ${name} is not observed yet`;
        if (kind === 'StatefulSet' && st.updateRevision && st.currentRevision !== st.updateRevision)
          return `${kind} ${name} is rolling out (${st.updatedReplicas ?? 0} of ${want} updated)`;
        if (kind === 'Deployment' && (st.updatedReplicas ?? 0) < want)
          return `${kind} ${name} is rolling out (${st.updatedReplicas ?? 0} of ${want} updated)`;
        if ((st.readyReplicas ?? 0) < want) return `${kind} ${name}: ${st.readyReplicas ?? 0} of ${want} ready`;
        return undefined;
      },
    };
  }

  /** A call to the API server; a failure to reach it is remembered for /readyz. */
  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      const out = await work();
      this.apiProblem = undefined;
      return out;
    } catch (err) {
      if (err instanceof KubeError && err.status === 0)
        this.apiProblem = `the Kubernetes API of zone ${this.opts.zone} does not answer: ${err.message}`;
      if (err instanceof KubeError && err.status === 403) {
        throw new Error(
          `${err.message}; hangar's Role in namespace ${this.api.namespace} lacks the verb "${err.forbidden ?? 'unknown'}" (see deploy/)`,
        );
      }
      throw err;
    }
  }

  /**
   * Server-side apply with the instance's labels added; a conflict is tried again. A StatefulSet
   * keeps what Kubernetes does not let change (its volume claims, selector, service name): a
   * resize changes the plan, not the size of the volumes made at the start.
   */
  private async apply(o: KubeObject, labels: Readonly<Record<string, string>>): Promise<KubeObject> {
    let obj: KubeObject = { ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...labels } } };
    if (o.kind === 'StatefulSet') {
      const live = await this.call(() => this.api.get(o.apiVersion, o.kind, o.metadata.name));
      if (live?.spec) {
        const spec = (obj as unknown as { spec: Record<string, unknown> }).spec;
        obj = {
          ...obj,
          spec: { ...spec, ...pick(live.spec, ['volumeClaimTemplates', 'selector', 'serviceName', 'podManagementPolicy']) },
        } as KubeObject;
      }
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.call(() => this.api.apply(obj));
      } catch (err) {
        if (err instanceof KubeError && err.status === 409 && attempt < 5) {
          await sleep(100 * attempt);
          continue;
        }
        throw err;
      }
    }
  }

  /**
   * The pods matching `labels`; those being deleted too when `terminating` is set. A pod whose
   * deletion its kubelet has not confirmed UNCONFIRMED_DELETION_MS after its grace period is
   * deleted for good on the way (see lostPods).
   */
  private async pods(
    labels: Readonly<Record<string, string>>,
    terminating = false,
  ): Promise<(PodState & { ip?: string; hostIp?: string })[]> {
    const pods = (await this.call(() => this.api.list('v1', 'Pod', this.selector(labels)))) as Pod[];
    await this.forgetLostPods(pods);
    return pods
      .filter((p) => terminating || !deletionOf(p))
      .map(podState)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Deletes for good (grace period 0) the pods being deleted whose kubelet has not confirmed it
   * UNCONFIRMED_DELETION_MS after their grace period: their node is lost (Kubernetes evicted them
   * `node_lost_after` seconds after the node stopped answering). Their StatefulSet then makes
   * them again where a node answers. Should the node come back, its kubelet stops what it still
   * runs of them: the pods are no longer its.
   */
  private async forgetLostPods(pods: readonly Pod[]): Promise<void> {
    const now = Date.now();
    for (const p of pods) {
      const due = deletionOf(p);
      if (due === undefined || now < due + UNCONFIRMED_DELETION_MS) continue;
      const node = (p.spec as { nodeName?: string } | undefined)?.nodeName;
      this.log.warn(
        { pod: p.metadata.name, node, instance: p.metadata.labels?.[INSTANCE_LABEL], unconfirmedFor: Math.round((now - due) / 1000) },
        'pod deleted for good: its node does not confirm its eviction (a lost node)',
      );
      await this.call(() => this.api.delete('v1', 'Pod', p.metadata.name, { gracePeriodSeconds: 0 })).catch((err: unknown) =>
        this.log.warn({ err, pod: p.metadata.name }, 'a pod of a lost node could not be deleted'),
      );
    }
  }

  /**
   * What the instance's pods that do not serve are doing, in a few words each, for the
   * instance's state reason: `h-x-redis-0 on node n2: evicted, its node does not confirm`.
   */
  private async podsNotServing(id: string): Promise<string[]> {
    const pods = (await this.call(() => this.api.list('v1', 'Pod', this.selector(this.labels(id))))) as Pod[];
    const out: string[] = [];
    for (const p of pods.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
      const state = podState(p);
      const node = (p.spec as { nodeName?: string } | undefined)?.nodeName;
      const where = `${p.metadata.name}${node ? ` on node ${node}` : ''}`;
      const due = deletionOf(p);
      if (due !== undefined) out.push(`${where}: being deleted${Date.now() > due ? ', its node does not confirm' : ''}`);
      else if (!state.ready) out.push(`${where}: ${state.reason ?? `not ready (${state.phase})`}`);
    }
    return out;
  }

  private edgePods(id: string) {
    return this.pods({ ...this.labels(id), 'app.kubernetes.io/component': 'edge' });
  }

  /** hangar's own address towards the pods (admitted by every edge, as on the local runtime its probe source). */
  private async hangarSource(towards: string): Promise<string> {
    this.source ??= await sourceAddressTowards(towards);
    return this.source;
  }

  /**
   * Converges the instance; when it does not, the error names its pods that do not serve and
   * their nodes (the instance's state reason then says a node was lost, say).
   */
  async ensureInstance(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult> {
    try {
      return await this.converge(spec, rules, driver, ctx);
    } catch (err) {
      // a pod that will not come (PodStuck) is named by its error already
      if (!(err instanceof Error) || err.name === 'PodStuck' || ctx.signal?.aborted) throw err;
      const pods = await this.podsNotServing(spec.id).catch(() => []);
      if (pods.length > 0) err.message = `${err.message} (${pods.join('; ')})`;
      throw err;
    }
  }

  private async converge(spec: InstanceSpec, rules: readonly AccessRule[], driver: UnitDriver, ctx: StepContext): Promise<EnsureResult> {
    if (!driver.cluster) throw new TerminalError(`${spec.service} cannot run on Kubernetes in this version of hangar`);
    const place = this.clusterPlace(spec.id);
    const routes = driver.edgeRoutes?.(spec) ?? spec.routes;
    const access = accessGroups(routes, rules);
    // Access first, on the edge pods that run: revoking an ACL must not wait for the engines.
    const running = (await this.edgePods(spec.id)).filter((p) => p.ready && p.ip);
    // this process's own address first: a hangar that took the runtime over (another replica, a
    // hangar pod made again) has another one, which the edges must admit before it probes through them
    if (running.length > 0) await this.hangarSource(running[0]!.ip!);
    if (running.length > 0 && (await this.accessLive(routes, running, access, ctx.signal))) ctx.step('ensure:access-applied');
    const result = await driver.cluster.ensure(spec, place, ctx);
    const member = (await this.pods(this.labels(spec.id))).find((p) => p.ip);
    if (!member?.ip) throw new Error('no pod of the instance has an address yet');
    const source = await this.hangarSource(member.ip);
    const image = imageOf(this.opts.target, 'haproxy', '2.6', () => OFFICIAL_EDGE_IMAGE);
    for (const o of edgeObjects({
      id: spec.id,
      labels: this.labels(spec.id),
      target: this.opts.target,
      image,
      routes,
      backends: result.backends,
      access,
      hangarSources: [source],
      ...(spec.tls ? { tls: spec.tls } : {}),
    })) {
      throwIfCancelled(ctx.signal, 'applying the edge');
      await this.apply(o, this.labels(spec.id));
    }
    ctx.step(`${result.fresh ? 'create' : 'ensure'}:edge-applied`);
    const edges = await this.waitEdge(spec.id, ctx);
    if (await this.accessLive(routes, edges, access, ctx.signal)) ctx.step('ensure:access-applied');
    const served = await this.tlsLive(spec, edges, ctx.signal);
    const targets: ProbeTarget[] = edges.flatMap((p) =>
      routes.filter((r) => r.group === 'main' && !r.tls).map((r) => ({ host: p.ip!, port: r.port, localAddress: source })),
    );
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      throwIfCancelled(ctx.signal, 'waiting for the instance to be ready');
      const problem = await driver.cluster.readiness(spec, place, targets);
      if (problem === undefined) break;
      if (Date.now() > until) throw new Error(problem);
      await sleep(POLL_MS, ctx.signal);
    }
    const address = await this.address(spec.id, edges);
    return { fresh: result.fresh, ...(address !== undefined ? { address } : {}), ...(served ? { servedCertificate: served } : {}) };
  }

  /**
   * Gives every ready edge pod the instance's certificate (and CRL) through its runtime API, as
   * the local edge does: a pod that shows another serial (`show ssl cert`) gets the new one, in
   * memory, without a restart; connections open keep theirs. A pod started later reads the TLS
   * Secret. Resolves with the serial every pod presents, or undefined when the instance has no
   * TLS listener or a pod could not be given it (a pod of the configuration before, during a
   * rollout, has no such file: it goes, and the next pass looks again).
   */
  private async tlsLive(
    spec: InstanceSpec,
    pods: readonly { name: string; ip?: string }[],
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const tls = spec.tls;
    if (!tls || !spec.routes.some((r) => r.tls)) return undefined;
    const crl = tls.clientAuth ? createHash('sha256').update(tls.clientAuth.crlPem).digest('base64') : undefined;
    let everywhere = true;
    for (const pod of pods) {
      if (!pod.ip) continue;
      const socket = { host: pod.ip, port: EDGE_ADMIN_PORT };
      const say = (line: string) => haproxyCommand(socket, line, 3000, signal);
      const key = `${spec.id}/${pod.name}`;
      try {
        if (parseCertSerial(await say(`show ssl cert ${cliWord(EDGE_TLS_FILES.cert)}`)) !== tls.serial) {
          await replaceTlsFile(say, 'cert', EDGE_TLS_FILES.cert, tls.pem);
          this.log.info({ instance: spec.id, pod: pod.name, serial: tls.serial }, 'edge pod given the certificate');
        }
        if (tls.clientAuth && crl !== this.crlGiven.get(key)) {
          await replaceTlsFile(say, 'crl-file', EDGE_TLS_FILES.crl, tls.clientAuth.crlPem);
          this.crlGiven.set(key, crl!);
        }
      } catch (err) {
        if (signal?.aborted) throw err;
        everywhere = false;
        this.log.warn({ instance: spec.id, pod: pod.name, err }, 'edge pod not given its TLS files through the runtime API');
      }
    }
    return everywhere ? tls.serial : undefined;
  }

  /**
   * An ACL change alone: the edge pods that serve admit exactly `rules` through their runtime API
   * (and cut what is no longer admitted), then the allow lists, the Service and the edge's
   * NetworkPolicy are applied, which edge pods read when they start. Nothing else of the instance
   * is looked at or rolled. Undefined (the pass converges the instance whole) while no edge pod
   * serves, or before this process knows its own address towards the pods.
   */
  async ensureAccess(spec: InstanceSpec, rules: readonly AccessRule[], ctx: StepContext): Promise<{ changed: boolean } | undefined> {
    if (!this.source) return undefined;
    const edges = (await this.edgePods(spec.id)).filter((p) => p.ready && p.ip);
    if (edges.length === 0) return undefined;
    const access = accessGroups(spec.routes, rules);
    const changed = await this.accessLive(spec.routes, edges, access, ctx.signal);
    if (changed) ctx.step('ensure:access-applied');
    const labels = this.labels(spec.id);
    for (const o of edgeAccessObjects({
      id: spec.id,
      labels,
      target: this.opts.target,
      routes: spec.routes,
      access,
      hangarSources: [this.source],
    })) {
      throwIfCancelled(ctx.signal, 'applying the allow lists');
      await this.apply(o, labels);
    }
    return { changed };
  }

  /**
   * Waits until the edge's pods run its current configuration (no pod of an earlier one is left:
   * those forward to addresses the instance may no longer have) and one of them at least is
   * ready; names why not (the scheduler's reason) when they are not in time.
   */
  private async waitEdge(id: string, ctx: StepContext): Promise<(PodState & { ip?: string; hostIp?: string })[]> {
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      throwIfCancelled(ctx.signal, 'waiting for the edge pods');
      const rolling = await this.edgeRolling(id);
      const pods = await this.edgePods(id);
      const ready = pods.filter((p) => p.ready && p.ip);
      if (!rolling && ready.length > 0) return ready;
      if (Date.now() > until) {
        const why = pods.find((p) => p.reason);
        throw new Error(rolling ?? `no edge pod of the instance is ready${why ? `: ${why.name} ${why.reason}` : ''}`);
      }
      await sleep(POLL_MS, ctx.signal);
    }
  }

  /** Why the edge's pods do not all run its current configuration yet; undefined once they do. */
  private async edgeRolling(id: string): Promise<string | undefined> {
    const name = edgeNames(id).deployment;
    const d = await this.call(() => this.api.get('apps/v1', 'Deployment', name));
    if (!d) return `the edge Deployment ${name} does not exist`;
    const st = d.status ?? {};
    if ((st.observedGeneration ?? 0) < ((d.metadata as { generation?: number }).generation ?? 0))
      return `the edge Deployment ${name} is not observed yet`;
    const old = Number(st.replicas ?? 0) - Number(st.updatedReplicas ?? 0);
    return old > 0 ? `the edge is rolling out its new configuration (${old} pod(s) of the former one left)` : undefined;
  }

  /** Where clients reach the edge Service: a load balancer's address, a node's (NodePort), or the ClusterIP. */
  private async address(id: string, edges: readonly { hostIp?: string }[]): Promise<string | undefined> {
    const svc = await this.call(() => this.api.get('v1', 'Service', edgeNames(id).service));
    switch (this.opts.target.serviceType) {
      case 'LoadBalancer': {
        const ingress = svc?.status?.loadBalancer?.ingress?.[0];
        return ingress?.ip ?? ingress?.hostname ?? undefined;
      }
      case 'NodePort':
        // With externalTrafficPolicy: Local the NodePort answers on nodes that run an edge pod.
        return edges.find((p) => p.hostIp)?.hostIp;
      case 'ClusterIP':
        return svc?.spec?.clusterIP;
    }
  }

  /**
   * Admits exactly `access` on every edge pod through its runtime API (within a second of the
   * API's answer), and shuts down the sessions of sources no longer admitted. True when it changed anything.
   */
  private async accessLive(
    routes: readonly EdgeRoute[],
    pods: readonly { ip?: string }[],
    access: ReadonlyMap<AccessGroup, readonly string[]>,
    signal?: AbortSignal,
  ): Promise<boolean> {
    let changed = false;
    for (const pod of pods) {
      if (!pod.ip) continue;
      const socket = { host: pod.ip, port: EDGE_ADMIN_PORT };
      const say = (line: string) => haproxyCommand(socket, line, 3000, signal);
      if (this.source) await this.admitHangar(say, pod.ip);
      let removed = false;
      for (const [group, list] of access) {
        const file = cliWord(aclFile(group));
        const shown = await say(`show acl ${file}`);
        if (/^Unknown ACL/i.test(shown.trim())) continue;
        const want = new Set(normaliseSources(list));
        const seen = new Set<string>();
        const commands: string[] = [];
        for (const entry of parseShowAcl(shown)) {
          if (!want.has(entry.pattern) || seen.has(entry.pattern)) {
            commands.push(`del acl ${file} #${entry.ref}`);
            removed = true;
          }
          seen.add(entry.pattern);
        }
        for (const c of want) if (!seen.has(c)) commands.push(`add acl ${file} ${c}`);
        if (commands.length > 0) {
          const answer = await say(commands.join(';'));
          if (/unknown|error|not found|invalid/i.test(answer)) throw new Error(`the edge refused an ACL change: ${answer.trim()}`);
          changed = true;
        }
      }
      if (removed) {
        // Removing a source from a list does not close what it has open: its sessions are shut down.
        const admits = new Map([...access].map(([g, list]) => [g, matcher([...list, ...(this.source ? [this.source] : [])])]));
        const groupOf = new Map(routes.map((r) => [frontendOf(r.role), r.group]));
        const denied = parseShowSess(await say('show sess')).filter((s) => {
          const group = groupOf.get(s.frontend);
          return group !== undefined && !(admits.get(group)?.(s.source) ?? false);
        });
        if (denied.length > 0) await say(denied.map((s) => `shutdown session ${s.id}`).join(';'));
      }
    }
    return changed;
  }

  /**
   * The edge pod admits this process's address as hangar's, and no other: its list of hangar's
   * sources (read when the pod starts) names whichever hangar owned the runtime then, and a hangar
   * in the cluster that takes the runtime over has an address of its own.
   */
  private async admitHangar(say: (line: string) => Promise<string>, pod: string): Promise<void> {
    const file = cliWord(HANGAR_SOURCES_FILE);
    const want = normaliseSources([this.source!]);
    const entries = parseShowAcl(await say(`show acl ${file}`));
    const commands = [
      ...entries.filter((e) => !want.includes(e.pattern)).map((e) => `del acl ${file} #${e.ref}`),
      ...want.filter((w) => !entries.some((e) => e.pattern === w)).map((w) => `add acl ${file} ${w}`),
    ];
    if (commands.length === 0) return;
    const answer = await say(commands.join(';'));
    if (/unknown|error|not found|invalid/i.test(answer)) throw new Error(`the edge refused hangar's own address: ${answer.trim()}`);
    this.log.info({ pod, source: this.source }, "an edge pod admits this hangar's address");
  }

  async removeInstance(id: string, ctx: StepContext): Promise<void> {
    for (const key of [...this.crlGiven.keys()]) if (key.startsWith(`${id}/`)) this.crlGiven.delete(key);
    const selector = this.selector(this.labels(id));
    for (const [apiVersion, kind] of KINDS) {
      for (const o of await this.call(() => this.api.list(apiVersion, kind, selector)))
        await this.call(() => this.api.delete(apiVersion, kind, o.metadata.name));
    }
    ctx.step('delete:objects-deleted');
    const until = Date.now() + REMOVE_TIMEOUT_MS;
    while ((await this.pods(this.labels(id), true)).length > 0) {
      throwIfCancelled(ctx.signal, 'waiting for the pods to be gone');
      if (Date.now() > until) throw new Error('the pods of the instance are still terminating');
      await sleep(POLL_MS, ctx.signal);
    }
    if (this.opts.target.volumeRetention === 'delete') {
      for (const pvc of await this.call(() => this.api.list('v1', 'PersistentVolumeClaim', selector))) {
        await this.call(() => this.api.delete('v1', 'PersistentVolumeClaim', pvc.metadata.name));
      }
    }
    ctx.step('delete:data-removed');
  }

  async listInstanceIds(): Promise<string[]> {
    const ids = new Set<string>();
    for (const [apiVersion, kind] of [
      ['apps/v1', 'StatefulSet'],
      ['apps/v1', 'Deployment'],
      ['v1', 'Service'],
      ['v1', 'Secret'],
    ] as const) {
      for (const o of await this.call(() => this.api.list(apiVersion, kind, MANAGED_SELECTOR))) {
        const id = o.metadata.labels?.[INSTANCE_LABEL];
        if (id) ids.add(id);
      }
    }
    return [...ids];
  }

  /** Whether the instance serves; when it does not, the reason names its pods that do not serve and their nodes. */
  async checkInstance(spec: InstanceSpec, driver: UnitDriver): Promise<Health> {
    if (!driver.cluster) return { healthy: false, reason: `${spec.service} cannot run on Kubernetes in this version of hangar` };
    const edges = (await this.edgePods(spec.id)).filter((p) => p.ready);
    const health: Health =
      edges.length === 0
        ? { healthy: false, reason: 'no edge pod of the instance is ready' }
        : await driver.cluster.check(spec, this.clusterPlace(spec.id));
    if (health.healthy) return health;
    const pods = await this.podsNotServing(spec.id).catch(() => []);
    return pods.length === 0
      ? health
      : { healthy: false, reason: `${health.reason ?? 'the instance does not serve'} (${pods.join('; ')})` };
  }

  health(): RuntimeHealth {
    return { problems: this.apiProblem ? [this.apiProblem] : [], degraded: [] };
  }

  async stats(): Promise<RuntimeStats> {
    const pods = await this.pods(MANAGED_BY);
    const edge: { instanceId: string; admitted: number; refused: number }[] = [];
    const edges = (await this.call(() => this.api.list('v1', 'Pod', `${MANAGED_SELECTOR},app.kubernetes.io/component=edge`))) as Pod[];
    for (const p of edges) {
      const id = p.metadata.labels?.[INSTANCE_LABEL];
      if (!id || !p.status?.podIP) continue;
      try {
        const stats = parseShowStat(await haproxyCommand({ host: p.status.podIP, port: EDGE_ADMIN_PORT }, 'show stat'));
        const sum = stats.reduce((acc, s) => ({ admitted: acc.admitted + s.admitted, refused: acc.refused + s.refused }), {
          admitted: 0,
          refused: 0,
        });
        const known = edge.find((e) => e.instanceId === id);
        if (known) {
          known.admitted += sum.admitted;
          known.refused += sum.refused;
        } else edge.push({ instanceId: id, ...sum });
      } catch (err) {
        this.log.debug({ err, pod: p.metadata.name }, 'edge counters unavailable');
      }
    }
    return { processesUp: pods.filter((p) => p.ready).length, processesExpected: pods.length, edge };
  }

  /**
   * What enforces the instance's ACLs: each edge pod, read through its runtime API, and the
   * edge's NetworkPolicy, read from the API server (its ipBlocks per client port).
   */
  async effectiveAccess(spec: InstanceSpec): Promise<AccessEnforcer[]> {
    const routes = spec.routes;
    const groups = [...new Set(routes.map((r) => r.group))];
    const out: AccessEnforcer[] = [];
    for (const pod of await this.edgePods(spec.id)) {
      const name = `pod/${pod.name}`;
      if (!pod.ready || !pod.ip) {
        out.push({ name, groups: {}, problem: pod.reason ?? 'the edge pod is not ready' });
        continue;
      }
      try {
        const read: Partial<Record<AccessGroup, string[]>> = {};
        for (const group of groups) {
          const shown = await haproxyCommand({ host: pod.ip, port: EDGE_ADMIN_PORT }, `show acl ${cliWord(aclFile(group))}`);
          read[group] = normaliseSources(parseShowAcl(shown).map((e) => e.pattern));
        }
        out.push({ name, groups: read });
      } catch (err) {
        out.push({ name, groups: {}, problem: `its runtime API does not answer: ${(err as Error).message}` });
      }
    }
    const policyName = edgeNames(spec.id).policy;
    const policy = await this.call(() => this.api.get('networking.k8s.io/v1', 'NetworkPolicy', policyName));
    if (!policy) {
      out.push({ name: `networkpolicy/${policyName}`, groups: {}, problem: 'the NetworkPolicy does not exist' });
      return out;
    }
    const byGroup = new Map<AccessGroup, Set<string>>(groups.map((g) => [g, new Set()]));
    type Peer = { ipBlock?: { cidr?: string } };
    const everyone = ['0.0.0.0/0', '::/0'];
    // read back as the client library's models, where `from` is `_from`
    for (const rule of (policy.spec?.ingress ?? []) as { from?: Peer[]; _from?: Peer[]; ports?: { port?: number | string }[] }[]) {
      const peers = rule.from ?? rule._from ?? [];
      // a rule without sources admits every source (on its ports, or on all of them)
      const sources =
        peers.length === 0 ? everyone : peers.flatMap((p) => (p.ipBlock?.cidr ? [parseCidr(p.ipBlock.cidr)?.text ?? p.ipBlock.cidr] : []));
      const ports = rule.ports ?? [];
      // a rule with sources and no ports is hangar's own (its probes and administration)
      if (ports.length === 0 && peers.length > 0) continue;
      const targets =
        ports.length === 0
          ? groups
          : ports.map((port) => routes.find((r) => r.port === Number(port.port))?.group).filter((g): g is AccessGroup => g !== undefined);
      for (const group of targets) for (const s of sources) byGroup.get(group)?.add(s);
    }
    out.push({ name: `networkpolicy/${policyName}`, groups: Object.fromEntries([...byGroup].map(([g, set]) => [g, [...set].sort()])) });
    return out;
  }

  /** The last refused connections of the instance, from the ring of each of its edge pods. */
  async deniedConnections(spec: InstanceSpec, limit: number): Promise<DeniedConnection[]> {
    const routes = spec.routes;
    const out: DeniedConnection[] = [];
    for (const pod of await this.edgePods(spec.id)) {
      if (!pod.ip) continue;
      try {
        for (const line of parseShowEvents(await haproxyCommand({ host: pod.ip, port: EDGE_ADMIN_PORT }, `show events ${DENIED_RING}`))) {
          const d = parseDeniedLine(line);
          if (d)
            out.push({ source: d.source, at: d.at, listener: routes.find((r) => frontendOf(r.role) === d.frontend)?.role ?? d.frontend });
        }
      } catch (err) {
        this.log.debug({ err, pod: pod.name }, 'refused connections of an edge pod unavailable');
      }
    }
    return out.sort((a, b) => b.at - a.at).slice(0, limit);
  }
}
