import { AuthorizationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { KubernetesTarget } from '../../domain/zones.js';
import { kubeError, loadKubeConfig } from './kube-api.js';

/** What the runtime does in a zone's namespace: the rules of deploy/role.yaml, checked by `hangar doctor`. */
export const RBAC_NEEDS: readonly { readonly group: string; readonly resources: readonly string[]; readonly verbs: readonly string[] }[] = [
  { group: '', resources: ['pods'], verbs: ['get', 'list', 'watch', 'delete'] },
  { group: '', resources: ['services', 'secrets'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { group: '', resources: ['persistentvolumeclaims'], verbs: ['list', 'delete'] },
  { group: 'apps', resources: ['statefulsets', 'deployments'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { group: 'policy', resources: ['poddisruptionbudgets'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
  { group: 'networking.k8s.io', resources: ['networkpolicies'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
];

export interface ZoneCheck {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
}

/**
 * Checks a Kubernetes zone as hangar will use it: its kubeconfig loads, the API server answers,
 * the namespace exists (a dry-run create there), and every verb the runtime needs is granted
 * (SelfSubjectAccessReview), naming what is missing.
 */
export async function checkKubernetesZone(target: KubernetesTarget): Promise<ZoneCheck[]> {
  const out: ZoneCheck[] = [];
  let kc: KubeConfig;
  try {
    kc = loadKubeConfig(target);
    out.push({
      check: 'kubeconfig',
      ok: true,
      detail: target.inCluster
        ? 'in cluster (ServiceAccount)'
        : `${target.kubeconfig}${target.context ? ` (context ${target.context})` : ''}`,
    });
  } catch (err) {
    out.push({ check: 'kubeconfig', ok: false, detail: (err as Error).message });
    return out;
  }
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedSecret({
      namespace: target.namespace,
      dryRun: 'All',
      body: { metadata: { name: 'hangar-doctor-check' }, stringData: {} },
    });
    out.push({ check: 'api', ok: true, detail: kc.getCurrentCluster()?.server ?? 'reachable' });
    out.push({ check: 'namespace', ok: true, detail: target.namespace });
  } catch (err) {
    const e = kubeError(err, 'dry-run create of a Secret');
    if (e.status === 0) {
      out.push({ check: 'api', ok: false, detail: e.message });
      return out;
    }
    out.push({ check: 'api', ok: true, detail: kc.getCurrentCluster()?.server ?? 'reachable' });
    out.push({
      check: 'namespace',
      ok: e.status !== 404,
      detail: e.status === 404 ? `namespace ${target.namespace} does not exist: create it` : target.namespace,
    });
  }
  const authz = kc.makeApiClient(AuthorizationV1Api);
  // one review per verb, asked all at once (tens of them: in sequence they add up on a slow API server)
  const asks = RBAC_NEEDS.flatMap((rule) =>
    rule.resources.flatMap((resource) => rule.verbs.map((verb) => ({ group: rule.group, resource, verb }))),
  );
  const answers = await Promise.all(
    asks.map(async ({ group, resource, verb }) => {
      try {
        const review = await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { namespace: target.namespace, group, resource, verb } } },
        });
        return review.status?.allowed ? undefined : `${verb} ${resource}${group ? `.${group}` : ''}`;
      } catch (err) {
        return `${verb} ${resource} (${kubeError(err, 'access review').message})`;
      }
    }),
  );
  const missing = answers.filter((m): m is string => m !== undefined);
  out.push({
    check: 'rbac',
    ok: missing.length === 0,
    detail:
      missing.length === 0
        ? 'every verb of deploy/role.yaml is granted'
        : `missing: ${missing.join(', ')} (apply deploy/role.yaml and bind it)`,
  });
  return out;
}
