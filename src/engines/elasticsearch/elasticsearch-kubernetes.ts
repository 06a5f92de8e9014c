import type { ClusterDriver, ClusterPlace, ClusterResult, KubeObject } from '../../domain/cluster.js';
import type { Health, InstanceSpec, ProbeTarget, StepContext } from '../../domain/units.js';
import { addressesOf, disruptionBudget, memberServices, podsProblem, statefulSet, waitUntil } from '../kubernetes/workload.js';
import { heapMb } from './elasticsearch-config.js';
import { clusterHealth, healthProblem } from './elasticsearch-probe.js';

const HTTP_PORT = 9200;
const TRANSPORT_PORT = 9300;
const READY_TIMEOUT_MS = 300_000;

/**
 * The spec's Elasticsearch plans (GB of storage) on Kubernetes: plans up to 16 run one node,
 * larger ones three; each node's heap is the local runtime's for the plan divided among the
 * nodes (512 MB at least), its container twice its heap, its volume the plan divided among them.
 */
export function elasticsearchNodes(plan: number): { nodes: number; heapMb: number; memoryMb: number; volumeMb: number } {
  const nodes = plan <= 16 ? 1 : 3;
  const heap = Math.max(512, Math.round(heapMb(plan) / nodes));
  return { nodes, heapMb: heap, memoryMb: heap * 2, volumeMb: Math.ceil((plan * 1024) / nodes) };
}

const names = (id: string) => ({ secret: `h-${id}-elasticsearch`, node: `h-${id}-es` });

/**
 * Elasticsearch on Kubernetes, as objects: a StatefulSet of nodes (see elasticsearchNodes) with
 * security on (the `elastic` password is hangar's admin secret, from a Secret), members found by
 * their Services' addresses. Verified against a real API server (objects accepted, pods created);
 * the Elasticsearch image cannot run where hangar is tested.
 */
export class ElasticsearchClusterDriver implements ClusterDriver {
  memberMemoryMb(spec: InstanceSpec): number {
    return elasticsearchNodes(spec.plan).memoryMb;
  }

  objects(spec: InstanceSpec, place: ClusterPlace, addresses: Readonly<Record<string, string>> = {}): KubeObject[] {
    const n = names(spec.id);
    const plan = elasticsearchNodes(spec.plan);
    const ports = [
      { name: 'http', port: HTTP_PORT },
      { name: 'transport', port: TRANSPORT_PORT },
    ];
    const seeds = Array.from({ length: plan.nodes }, (_, i) => addresses[`${n.node}-${i}`]).filter((a): a is string => a !== undefined);
    const env = [
      { name: 'ELASTIC_PASSWORD', valueFrom: { secretKeyRef: { name: n.secret, key: 'admin-secret' } } },
      { name: 'ES_JAVA_OPTS', value: `-Xms${plan.heapMb}m -Xmx${plan.heapMb}m` },
      { name: 'cluster.name', value: `hangar-${spec.id}` },
      { name: 'node.name', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'xpack.security.enabled', value: 'true' },
      { name: 'path.data', value: '/data' },
      ...(plan.nodes === 1
        ? [{ name: 'discovery.type', value: 'single-node' }]
        : [
            { name: 'discovery.seed_hosts', value: seeds.map((a) => `${a}:${TRANSPORT_PORT}`).join(',') },
            { name: 'cluster.initial_master_nodes', value: Array.from({ length: plan.nodes }, (_, i) => `${n.node}-${i}`).join(',') },
          ]),
    ];
    return [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: n.secret, labels: { ...place.labels } },
        type: 'Opaque',
        stringData: { 'admin-secret': spec.adminSecret },
      },
      ...memberServices(place, n.node, 'elasticsearch', plan.nodes, ports),
      statefulSet(place, {
        name: n.node,
        component: 'elasticsearch',
        replicas: plan.nodes,
        image: place.image('elasticsearch', spec.version),
        command: ['/usr/local/bin/docker-entrypoint.sh', 'eswrapper'],
        env,
        ports,
        memoryMb: plan.memoryMb,
        volumeMb: plan.volumeMb,
        serviceName: n.node,
      }),
      ...(plan.nodes > 1 ? [disruptionBudget(place, n.node, 'elasticsearch', 2)] : []),
    ];
  }

  async ensure(spec: InstanceSpec, place: ClusterPlace, ctx: StepContext): Promise<ClusterResult> {
    const n = names(spec.id);
    const plan = elasticsearchNodes(spec.plan);
    const fresh = (await place.pods({})).length === 0;
    await place.apply(memberServicesOnly(this.objects(spec, place)), ctx);
    const a = await addressesOf(
      place,
      Array.from({ length: plan.nodes }, (_, i) => `${n.node}-${i}`),
    );
    await place.apply(this.objects(spec, place, a), ctx);
    ctx.step(`${fresh ? 'create' : 'ensure'}:objects-applied`);
    await waitUntil(() => this.problem(spec, place), READY_TIMEOUT_MS, ctx, 'waiting for the elasticsearch pods');
    const servers = Object.entries(a).map(([name, address], i) => ({ name: `es-${i}`, address, port: HTTP_PORT, svc: name }));
    const http = servers.map(({ name, address, port }) => ({ name, address, port }));
    const transport = servers.map(({ name, address }) => ({ name, address, port: TRANSPORT_PORT }));
    return {
      fresh,
      // the edge terminates TLS on the https listeners: behind them, the nodes' plain HTTP port
      backends: [
        { role: 'public.http', servers: http },
        { role: 'servicenet.http', servers: http },
        { role: 'public.https', servers: http },
        { role: 'servicenet.https', servers: http },
        { role: 'public.transport', servers: transport },
        { role: 'servicenet.transport', servers: transport },
      ],
    };
  }

  private async problem(spec: InstanceSpec, place: ClusterPlace): Promise<string | undefined> {
    return podsProblem(
      await place.pods({ 'app.kubernetes.io/component': 'elasticsearch' }),
      elasticsearchNodes(spec.plan).nodes,
      'elasticsearch',
    );
  }

  async readiness(spec: InstanceSpec, place: ClusterPlace, targets: readonly ProbeTarget[]): Promise<string | undefined> {
    try {
      const problem = await this.problem(spec, place);
      if (problem) return problem;
      for (const t of targets) {
        const health = healthProblem(await clusterHealth(t, { username: 'elastic', password: spec.adminSecret }));
        if (health) return health;
      }
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async check(spec: InstanceSpec, place: ClusterPlace): Promise<Health> {
    const problem = await this.problem(spec, place).catch((err: unknown) => (err as Error).message);
    return problem === undefined ? { healthy: true } : { healthy: false, reason: problem };
  }
}

/** The Services of a set of objects: applied first, their addresses named by the rest. */
function memberServicesOnly(objects: readonly KubeObject[]): KubeObject[] {
  return objects.filter((o) => o.kind === 'Service');
}
