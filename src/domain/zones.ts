import type { Service } from './catalog.js';
import type { RuntimeKind } from './units.js';

/** How a Kubernetes zone exposes its edge to clients. */
export const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

/** Where a Kubernetes zone's instances run, and how. */
export interface KubernetesTarget {
  /** kubeconfig file; undefined with `inCluster`. */
  readonly kubeconfig?: string;
  /** Use the pod's ServiceAccount (hangar running in the cluster). */
  readonly inCluster: boolean;
  /** kubeconfig context; undefined: the file's current context. */
  readonly context?: string;
  readonly namespace: string;
  /** Node labels the zone's pods must match. */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** `topology.kubernetes.io/zone` the pods are pinned to. */
  readonly topologyZone?: string;
  /** StorageClass of the data volumes; undefined: the cluster's default. */
  readonly storageClass?: string;
  readonly serviceType: ServiceType;
  /** How the edge learns the client's address: kept by `externalTrafficPolicy: Local`, or the PROXY protocol from a load balancer. */
  readonly sourceAddress: 'local' | 'proxy-protocol';
  /** Images by engine and version (`redis:7.0.15`), and for the edge (`haproxy`). */
  readonly images: Readonly<Record<string, string>>;
  /** What happens to data volumes when an instance is deleted. */
  readonly volumeRetention: 'delete' | 'retain';
  /** The cluster's NodePort range: instances' client ports are handed out from it. */
  readonly nodePortRange: { readonly first: number; readonly last: number };
  /**
   * Seconds the pods of an instance stay on a node that stops answering (NotReady or unreachable)
   * before Kubernetes evicts them; undefined: NODE_LOST_AFTER_SECONDS.
   */
  readonly nodeLostAfterSeconds?: number;
}

/** Default of a Kubernetes zone's `node_lost_after` (Kubernetes' own default is 300 s). */
export const NODE_LOST_AFTER_SECONDS = 60;

/** One zone: a placement target of instances, and the memory it may promise. */
export interface Zone {
  readonly name: string;
  readonly runtime: RuntimeKind;
  /** Services offered here; undefined: every service its engines can run. */
  readonly services?: readonly Service[];
  /** Memory the zone's instances may promise, in MB; undefined: the runtime's default. */
  readonly capacityMb?: number;
  readonly kubernetes?: KubernetesTarget;
}
