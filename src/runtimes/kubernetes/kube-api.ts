import { readFileSync } from 'node:fs';
import { ApisApi, KubeConfig, KubernetesObjectApi, PatchStrategy, Watch, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject } from '../../domain/cluster.js';
import type { KubernetesTarget } from '../../domain/zones.js';
import { withTimeout } from '../../lib/timeout.js';

/** The field manager of every server-side apply hangar makes. */
export const FIELD_MANAGER = 'hangar';
/** How long one call to the API server may take before it counts as unreachable. */
const CALL_TIMEOUT_MS = 10_000;

/** An answer of the API server that is not a success, with its HTTP status (0: no answer). */
export class KubeError extends Error {
  override name = 'KubeError';
  constructor(
    readonly status: number,
    message: string,
    /** The verb and resource refused, for a 403 (`create statefulsets.apps`). */
    readonly forbidden?: string,
  ) {
    super(message);
  }
}

/** A watch event of an object the runtime owns. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObject & { readonly status?: unknown };
}

/** The fields of an object's spec that the runtime reads back (of Services, workloads and NetworkPolicies). */
export interface LiveSpec {
  /** Service. */
  readonly clusterIP?: string;
  /** StatefulSet, Deployment. */
  readonly replicas?: number;
  /** NetworkPolicy (its rules as the client library's models). */
  readonly ingress?: readonly unknown[];
  readonly [field: string]: unknown;
}

/** The fields of an object's status that the runtime reads (of Services, workloads and pods). */
export interface LiveStatus {
  /** Service of type LoadBalancer. */
  readonly loadBalancer?: { readonly ingress?: readonly { readonly ip?: string; readonly hostname?: string }[] };
  /** StatefulSet, Deployment. */
  readonly observedGeneration?: number;
  readonly currentRevision?: string;
  readonly updateRevision?: string;
  readonly updatedReplicas?: number;
  readonly readyReplicas?: number;
  /** Pod. */
  readonly phase?: string;
  readonly podIP?: string;
  readonly hostIP?: string;
  readonly conditions?: readonly { readonly type: string; readonly status: string; readonly reason?: string; readonly message?: string }[];
  readonly containerStatuses?: readonly {
    readonly restartCount?: number;
    readonly state?: { readonly waiting?: { readonly reason?: string; readonly message?: string } };
  }[];
  readonly [field: string]: unknown;
}

/** An object as the API server answers it. */
export type LiveObject = KubeObject & { readonly spec?: LiveSpec; readonly status?: LiveStatus };

/** What the Kubernetes runtime asks of a cluster: one namespace, its own objects only. */
export interface KubeApi {
  readonly namespace: string;
  /** Server-side apply (field manager `hangar`, conflicts forced): the object as the server has it after. */
  apply(obj: KubeObject): Promise<LiveObject>;
  /** One object, or undefined when there is none. */
  get(apiVersion: string, kind: string, name: string): Promise<LiveObject | undefined>;
  /** The objects of a kind matching a label selector. */
  list(apiVersion: string, kind: string, labelSelector: string): Promise<LiveObject[]>;
  /**
   * Deletes an object (its dependents in the background); no error when it is gone already.
   * `gracePeriodSeconds` 0 removes a pod at once, without waiting for its kubelet to confirm.
   */
  delete(apiVersion: string, kind: string, name: string, opts?: { gracePeriodSeconds?: number }): Promise<void>;
  /**
   * Watches the objects of a kind matching a selector: every event goes to `onEvent`; `onEnd` is
   * called when the watch ends (the server closed it, or it failed), and the caller watches again.
   */
  watch(path: string, labelSelector: string, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<() => void>;
}

/** The KubeConfig of a zone: its kubeconfig file and context, or the pod's ServiceAccount. */
export function loadKubeConfig(target: KubernetesTarget): KubeConfig {
  const kc = new KubeConfig();
  if (target.inCluster) {
    kc.loadFromCluster();
  } else {
    // Read here so that a missing or unreadable file is named, rather than a parse error of nothing.
    readFileSync(target.kubeconfig!, 'utf8');
    kc.loadFromFile(target.kubeconfig!);
    if (target.context) kc.setCurrentContext(target.context);
  }
  return kc;
}

/** What the API server answered, as a KubeError: the status, its message, and for a 403 the verb and resource refused. */
export function kubeError(err: unknown, what: string): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as { code?: unknown; body?: unknown; message?: string; cause?: { code?: string } };
  const status = typeof e.code === 'number' ? e.code : 0;
  let message = e.message ?? String(err);
  let body: { message?: string; details?: { kind?: string; group?: string } } | undefined;
  try {
    body = typeof e.body === 'string' ? JSON.parse(e.body) : (e.body as typeof body);
  } catch {
    /* not JSON */
  }
  if (body?.message) message = body.message;
  if (status === 0 && typeof e.cause?.code === 'string') message = `${e.cause.code}: ${message}`;
  // `... cannot create resource "statefulsets" in API group "apps" in the namespace ...`
  const denied = /cannot (\w+) resource "([^"]+)" in API group "([^"]*)"/.exec(message);
  const forbidden = status === 403 && denied ? `${denied[1]} ${denied[2]}${denied[3] ? `.${denied[3]}` : ''}` : undefined;
  return new KubeError(status, `${what}: ${status ? `HTTP ${status} ` : ''}${message}`, forbidden);
}

/** A call to the API server, bounded: a KubeError naming it when the server does not answer in time. */
const bounded = <T>(work: Promise<T>, what: string): Promise<T> =>
  withTimeout(work, CALL_TIMEOUT_MS, () => new KubeError(0, `${what}: the API server did not answer within ${CALL_TIMEOUT_MS} ms`));

/**
 * API versions that older clusters serve under an earlier name: objects are written in the
 * current one, and sent in the earlier one to a server that lacks it (PodDisruptionBudget is
 * policy/v1 from Kubernetes 1.21, policy/v1beta1 before; the fields hangar sets are the same).
 */
const EARLIER: Readonly<Record<string, string>> = { 'policy/v1': 'policy/v1beta1' };

/** The KubeApi of a zone, over @kubernetes/client-node. */
export function kubeApi(kc: KubeConfig, namespace: string): KubeApi {
  const objects = KubernetesObjectApi.makeApiClient(kc);
  let served: Promise<Set<string>> | undefined;
  /** The group versions the server serves, asked once (and again after a failure). */
  const groupVersions = () =>
    (served ??= bounded(kc.makeApiClient(ApisApi).getAPIVersions(), 'discovery').then(
      (list) => new Set(list.groups.flatMap((g) => g.versions.map((v) => v.groupVersion))),
      (err: unknown) => {
        served = undefined;
        throw kubeError(err, 'discovery');
      },
    ));
  const version = async (apiVersion: string): Promise<string> => {
    const earlier = EARLIER[apiVersion];
    if (!earlier) return apiVersion;
    const set = await groupVersions();
    return set.has(apiVersion) || !set.has(earlier) ? apiVersion : earlier;
  };
  const header = async (apiVersion: string, kind: string, name: string) => ({
    apiVersion: await version(apiVersion),
    kind,
    metadata: { name, namespace },
  });
  const call = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await bounded(work(), what);
    } catch (err) {
      throw kubeError(err, what);
    }
  };
  return {
    namespace,
    apply: (obj) =>
      call(`apply ${obj.kind} ${obj.metadata.name}`, async () => {
        const spec = clientModel({
          ...obj,
          apiVersion: await version(obj.apiVersion),
          metadata: { ...obj.metadata, namespace },
        }) as KubernetesObject;
        return (await objects.patch(
          spec,
          undefined,
          undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        )) as unknown as LiveObject;
      }),
    get: async (apiVersion, kind, name) => {
      try {
        return (await call(`get ${kind} ${name}`, async () => objects.read(await header(apiVersion, kind, name)))) as unknown as LiveObject;
      } catch (err) {
        if (err instanceof KubeError && err.status === 404) return undefined;
        throw err;
      }
    },
    list: (apiVersion, kind, labelSelector) =>
      call(`list ${kind}`, async () => {
        const res = await objects.list(
          await version(apiVersion),
          kind,
          namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          labelSelector,
        );
        return res.items.map((i) => ({ apiVersion, kind, ...i }) as unknown as LiveObject);
      }),
    delete: async (apiVersion, kind, name, opts) => {
      try {
        await call(`delete ${kind} ${name}`, async () =>
          objects.delete(await header(apiVersion, kind, name), undefined, undefined, opts?.gracePeriodSeconds, undefined, 'Background'),
        );
      } catch (err) {
        if (err instanceof KubeError && err.status === 404) return;
        throw err;
      }
    },
    watch: async (path, labelSelector, onEvent, onEnd) => {
      const controller = await new Watch(kc).watch(
        path,
        { labelSelector, allowWatchBookmarks: false },
        (type, obj) => {
          if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') onEvent({ type, object: obj as WatchEvent['object'] });
        },
        (err) => onEnd(err),
      );
      return () => controller.abort();
    },
  };
}

/**
 * An object as the client library serializes it: by its models, whose attribute names differ
 * from the JSON ones where JSON's is a word of JavaScript (a NetworkPolicy rule's `from` is
 * `_from`). A JSON-named field would be dropped silently, and a NetworkPolicy rule without
 * `from` admits every source.
 */
export function clientModel<T extends { kind?: string; spec?: unknown }>(obj: T): T {
  if (obj.kind !== 'NetworkPolicy') return obj;
  const spec = obj.spec as { ingress?: Record<string, unknown>[] } | undefined;
  if (!spec?.ingress) return obj;
  const ingress = spec.ingress.map(({ from, ...rule }) => (from === undefined ? rule : { ...rule, _from: from }));
  return { ...obj, spec: { ...spec, ingress } };
}
