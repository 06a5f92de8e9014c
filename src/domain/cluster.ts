import type { EnsureResult, Health, InstanceSpec, ProbeTarget, StepContext } from './units.js';

/**
 * The vocabulary of instances on a cluster (Kubernetes): the engine describes its workload as
 * objects and says how to reach and check its members; the cluster runtime applies, observes,
 * addresses and exposes them. Neither names the other.
 */

/** A Kubernetes object as plain JSON. */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly [field: string]: unknown;
}

/** A pod of an instance as the cluster reports it. */
export interface PodState {
  readonly name: string;
  readonly ready: boolean;
  /** Pending, Running, Succeeded, Failed, Unknown. */
  readonly phase: string;
  /** Why it is not ready, in the cluster's words (the scheduler's message for an unschedulable pod). */
  readonly reason?: string;
  /** Times its containers restarted. */
  readonly restarts: number;
  /** The pod's own address, once it has one: for what must be asked of each pod (every Sentinel of an instance). */
  readonly ip?: string;
}

/** Where a cluster runtime places an instance, as its engine sees it. */
export interface ClusterPlace {
  readonly namespace: string;
  /** Labels every object of the instance carries, so that the runtime finds its own and nothing else. */
  readonly labels: Readonly<Record<string, string>>;
  /** Node labels the pods must match. */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** `topology.kubernetes.io/zone` the pods are pinned to. */
  readonly topologyZone?: string;
  /** StorageClass of data volumes; undefined: the cluster's default. */
  readonly storageClass?: string;
  /** Seconds the pods stay on a node that stops answering before Kubernetes evicts them (their tolerations). */
  readonly nodeLostAfterSeconds: number;
  /** The image of `product` at `version`; throws TerminalError naming the zone setting when none is configured. */
  image(product: string, version: string): string;
  /** Creates or updates the objects (server-side apply): labels, namespace and ownership are the runtime's to add. */
  apply(objects: readonly KubeObject[], ctx: StepContext): Promise<void>;
  /** The ClusterIP of one of the instance's Services, allocated when the Service was applied. */
  serviceAddress(name: string): Promise<string>;
  /** The instance's pods matching `selector` (besides the instance labels). */
  pods(selector: Readonly<Record<string, string>>): Promise<PodState[]>;
  /** Why a workload has not rolled out its current template to every replica yet; undefined once it has. */
  rollout(kind: 'StatefulSet' | 'Deployment', name: string): Promise<string | undefined>;
}

/** One server behind an edge route. */
export interface EdgeServer {
  readonly name: string;
  readonly address: string;
  readonly port: number;
}

/**
 * What the edge forwards one public port to: every member that may serve it, and how the edge
 * tells which one serves now (Redis: the one whose `INFO replication` says `role:master`).
 */
export interface EdgeBackend {
  /** The port role of the instance (`public`, `servicenet`, ...). */
  readonly role: string;
  readonly servers: readonly EdgeServer[];
  /** A TCP check in steps: send a line, expect a string in the answer. Absent: the server is up when it accepts. */
  readonly check?: readonly ({ readonly send: string } | { readonly expect: string })[];
}

/** What an ensure on a cluster leaves: whether the data is new, and the edge's backends. */
export interface ClusterResult extends EnsureResult {
  readonly backends: readonly EdgeBackend[];
}

/**
 * An engine's cluster form: its instance as Kubernetes objects, brought up and administered by
 * the engine through the place the runtime hands it.
 */
export interface ClusterDriver {
  /**
   * Every object of the instance (Services first), with member addresses when known (configuration
   * that names them), for validation and for the runtime's garbage collection.
   */
  objects(spec: InstanceSpec, place: ClusterPlace, addresses?: Readonly<Record<string, string>>): KubeObject[];
  /** Applies the objects, waits until the members answer, configures them (replication, failover, plan). */
  ensure(spec: InstanceSpec, place: ClusterPlace, ctx: StepContext): Promise<ClusterResult>;
  /** What keeps the instance from being usable through `targets` (the edge) right now; undefined when it is. */
  readiness(spec: InstanceSpec, place: ClusterPlace, targets: readonly ProbeTarget[]): Promise<string | undefined>;
  /** Whether the members serve right now (no waiting). */
  check(spec: InstanceSpec, place: ClusterPlace): Promise<Health>;
  /** The memory a member's container requests and is limited to, in MB. */
  memberMemoryMb(spec: InstanceSpec): number;
}

/**
 * How long a pod stays on a node that stops answering: Kubernetes taints such a node
 * (`not-ready`, `unreachable`, NoExecute) and evicts the pods that do not tolerate the taint
 * longer; without these tolerations it adds 300 s ones. A member evicted sooner is made again
 * sooner on a node that answers (hangar deletes it for good once its kubelet does not confirm).
 */
export function nodeLostTolerations(seconds: number): Record<string, unknown>[] {
  return ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
    key,
    operator: 'Exists',
    effect: 'NoExecute',
    tolerationSeconds: seconds,
  }));
}
