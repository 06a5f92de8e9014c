import type { EdgeReply, EdgeRoute, HttpPolicy, RefusedRequests } from '../../domain/endpoints.js';

/**
 * What the edge does for an elasticsearch instance whose node cannot: where the node has no
 * security (2.x to 6.1, the oss and integration-test distributions, OpenSearch without its
 * plugin), its http and https listeners read HTTP and refuse what hangar's client role
 * (`hangar_client`, see elasticsearch-config.ts) may not do on a node with security; and where no
 * Kibana runs beside the node, the Kibana listeners answer why.
 */

/** An Elasticsearch-shaped error body, so that clients show its reason as they show the node's own. */
function errorJson(status: number, type: string, reason: string): string {
  return JSON.stringify({ error: { root_cause: [{ type, reason }], type, reason }, status });
}

const refusal = (reason: string): EdgeReply => ({ status: 403, json: errorJson(403, 'hangar_access_denied', reason) });
const WRITES = ['PUT', 'POST', 'DELETE', 'PATCH'];

/**
 * What hangar's client role may not do, by request, on every version: what `hangar_client`
 * (cluster `monitor`, `manage_index_templates`, `manage_pipeline`; every index) lacks on a node
 * with security. Paths are matched decoded, slashes repeated or not.
 */
export const CLIENT_REFUSALS: readonly RefusedRequests[] = [
  {
    // the edge matches paths as they come (HAProxy 2.6 normalises them only experimentally)
    path: '(?:^|/)\\.\\.?(?:/|$)',
    reply: {
      status: 400,
      json: errorJson(400, 'hangar_bad_path', 'paths with "." or ".." segments are refused at the edge of hangar'),
    },
  },
  {
    methods: WRITES,
    path: '^/+_cluster/+settings/*$',
    reply: refusal("changing cluster settings is not open to clients of hangar: the settings of the node are hangar's"),
  },
  {
    path: '^/+_(?:snapshot|slm)(?:/|$)',
    reply: refusal(
      "snapshots and repositories are not open to clients of hangar: take backups and restore them through hangar's API (POST /v2/instances/<name>/backups/)",
    ),
  },
  {
    path: '^/+(?:_shutdown|_cluster/+nodes/+.*_shutdown|_nodes/+(?:[^/]+/+)?(?:_shutdown|reload_secure_settings))(?:/|$)',
    reply: refusal('shutting nodes down or reloading their secure settings is not open to clients of hangar'),
  },
  {
    methods: WRITES,
    path: '^/+(?:_cluster/+(?:reroute|voting_config_exclusions|decommission)|_tasks/+(?:[^/]+/+)?_cancel|_dangling|_scripts|_license|_xpack/+license)(?:/|$)',
    reply: refusal(
      'administering the cluster and its nodes (reroute, voting exclusions, task cancels, stored scripts, licences) is not open to clients of hangar',
    ),
  },
  {
    path: '^/+(?:_security|_xpack/+security|_shield|_plugins/+_security|_opendistro/+_security)(?:/|$)',
    reply: refusal('security endpoints are not open to clients of hangar'),
  },
];

/** The policy of the http and https listeners of a node without security. */
export const CLIENT_POLICY: HttpPolicy = { refuse: CLIENT_REFUSALS };

/** The answer of the Kibana listeners where no Kibana runs: 503, saying why and what to install. */
export function kibanaUnavailable(why: string): EdgeReply {
  const reason = `no Kibana runs for this instance: ${why}. hangar runs Kibana (OpenSearch Dashboards for OpenSearch) beside the node once one of the node's release series is installed on its host`;
  const html = [
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Kibana unavailable</title></head>',
    '<body><h1>503: Kibana is not available here</h1>',
    `<p>${reason.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}.</p>`,
    '<p>The http and https addresses of the instance serve its node.</p></body></html>',
  ].join('');
  return { status: 503, json: errorJson(503, 'kibana_unavailable', reason), html };
}

/**
 * The routes of an instance as its node is served: the product's, with the client policy on
 * the listeners of the node's HTTP port where the node has no security, and the Kibana
 * listeners answered by the edge where no Kibana runs (`kibana`: why not).
 */
export function servedRoutes(routes: readonly EdgeRoute[], opts: { security: boolean; noKibana?: string }): EdgeRoute[] {
  return routes.map((r): EdgeRoute => {
    if (r.target === 'engine.http' && !opts.security) return { ...r, http: CLIENT_POLICY };
    if (r.target === 'engine.kibana' && opts.noKibana !== undefined)
      return { ...r, http: { refuse: [], answer: kibanaUnavailable(opts.noKibana) } };
    return r;
  });
}
