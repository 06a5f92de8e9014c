import { nodeLostTolerations, type ClusterPlace, type KubeObject, type PodState } from '../../domain/cluster.js';
import { throwIfCancelled, type StepContext } from '../../domain/units.js';
import { sleep } from '../../lib/time.js';

/**
 * Building blocks of engines' Kubernetes objects: labels of a component, scheduling (members on
 * different nodes, the zone's node selector and topology zone), Services with stable ClusterIPs,
 * StatefulSets with a data volume, and waiting for pods with the cluster's reason when they do not come.
 */

export const componentLabels = (place: ClusterPlace, component: string): Record<string, string> => ({
  ...place.labels,
  'app.kubernetes.io/component': component,
});

/**
 * Pods of a component on different nodes where the cluster has several, where the zone pins
 * them, and away from a node that stops answering after the zone's `node_lost_after`.
 */
export function scheduling(place: ClusterPlace, component: string): Record<string, unknown> {
  const nodeSelector = { ...place.nodeSelector, ...(place.topologyZone ? { 'topology.kubernetes.io/zone': place.topologyZone } : {}) };
  return {
    ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector } : {}),
    tolerations: nodeLostTolerations(place.nodeLostAfterSeconds),
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: componentLabels(place, component) } },
          },
        ],
      },
    },
  };
}

export function service(
  place: ClusterPlace,
  name: string,
  selector: Record<string, string>,
  ports: readonly { name: string; port: number }[],
  extra: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels: { ...place.labels } },
    spec: {
      selector,
      ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.port, protocol: 'TCP' })),
      publishNotReadyAddresses: true,
      ...extra,
    },
  };
}

/** A headless Service governing the StatefulSets of `component`, and one ClusterIP Service per member (its stable address). */
export function memberServices(
  place: ClusterPlace,
  prefix: string,
  component: string,
  members: number,
  ports: readonly { name: string; port: number }[],
): KubeObject[] {
  const labels = componentLabels(place, component);
  return [
    service(place, prefix, labels, ports, { clusterIP: 'None' }),
    ...Array.from({ length: members }, (_, i) =>
      service(place, `${prefix}-${i}`, { ...labels, 'statefulset.kubernetes.io/pod-name': `${prefix}-${i}` }, ports),
    ),
  ];
}

export interface StatefulSetInput {
  readonly name: string;
  readonly component: string;
  readonly replicas: number;
  readonly image: string;
  readonly command: readonly string[];
  readonly env?: readonly Record<string, unknown>[];
  readonly ports: readonly { name: string; port: number }[];
  readonly memoryMb: number;
  /** Size of the data volume at /data; none: no volume. */
  readonly volumeMb?: number;
  /** A Secret mounted read-only at /etc/hangar. */
  readonly secret?: string;
  readonly serviceName: string;
}

export function statefulSet(place: ClusterPlace, s: StatefulSetInput): KubeObject {
  const labels = componentLabels(place, s.component);
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: s.name, labels },
    spec: {
      serviceName: s.serviceName,
      replicas: s.replicas,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          ...scheduling(place, s.component),
          containers: [
            {
              name: s.component,
              image: s.image,
              imagePullPolicy: 'IfNotPresent',
              command: [...s.command],
              ...(s.env ? { env: [...s.env] } : {}),
              ports: s.ports.map((p) => ({ name: p.name, containerPort: p.port })),
              readinessProbe: { tcpSocket: { port: s.ports[0]!.port }, periodSeconds: 2 },
              resources: { requests: { memory: `${s.memoryMb}Mi`, cpu: '100m' }, limits: { memory: `${s.memoryMb}Mi` } },
              volumeMounts: [
                ...(s.volumeMb !== undefined ? [{ name: 'data', mountPath: '/data' }] : []),
                ...(s.secret ? [{ name: 'config', mountPath: '/etc/hangar', readOnly: true }] : []),
              ],
            },
          ],
          ...(s.secret ? { volumes: [{ name: 'config', secret: { secretName: s.secret, defaultMode: 0o400 } }] } : {}),
        },
      },
      ...(s.volumeMb !== undefined
        ? {
            volumeClaimTemplates: [
              {
                metadata: { name: 'data', labels: { ...place.labels } },
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  resources: { requests: { storage: `${s.volumeMb}Mi` } },
                  ...(place.storageClass ? { storageClassName: place.storageClass } : {}),
                },
              },
            ],
          }
        : {}),
    },
  };
}

export function disruptionBudget(place: ClusterPlace, name: string, component: string, minAvailable: number): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, labels: { ...place.labels } },
    spec: { minAvailable, selector: { matchLabels: componentLabels(place, component) } },
  };
}

/** The ClusterIPs of Services, by name. */
export async function addressesOf(place: ClusterPlace, names: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) out[name] = await place.serviceAddress(name);
  return out;
}

/**
 * A pod that will not come up by waiting: the scheduler cannot place it, its image cannot be
 * pulled, its container keeps crashing. A pass stops waiting at once and says why (in the
 * instance's state reason), and looks again later.
 */
export class PodStuck extends Error {
  override name = 'PodStuck';
}

/** Throws PodStuck naming the first pod that will not come up by waiting. */
export function assertNoPodStuck(pods: readonly PodState[]): void {
  const stuck = pods.find((p) => !p.ready && p.reason);
  if (stuck) throw new PodStuck(`pod ${stuck.name} is ${stuck.phase}: ${stuck.reason}`);
}

/** Why the pods of `selector` are not all ready (`expected` of them), or undefined when they are; throws PodStuck for one that will not come. */
export function podsProblem(pods: readonly PodState[], expected: number, what: string): string | undefined {
  assertNoPodStuck(pods);
  if (pods.length < expected) return `${pods.length} of ${expected} ${what} pods exist`;
  const waiting = pods.filter((p) => !p.ready);
  if (waiting.length > 0) return `${waiting.length} of ${expected} ${what} pods are not ready (${waiting[0]!.name}: ${waiting[0]!.phase})`;
  return undefined;
}

/** Waits until `problem` answers nothing, or throws its last answer after `timeoutMs`. */
export async function waitUntil(
  problem: () => Promise<string | undefined>,
  timeoutMs: number,
  ctx: StepContext,
  what: string,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    throwIfCancelled(ctx.signal, what);
    const p = await problem();
    if (p === undefined) return;
    if (Date.now() > until) throw new Error(p);
    await sleep(500, ctx.signal);
  }
}
