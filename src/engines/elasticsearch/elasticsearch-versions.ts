import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { compareVersions, minorVersion } from '../../lib/versions.js';

/** An engine program found on this machine. */
export interface EngineBinary {
  readonly name: string;
  readonly path: string;
  /** `X.Y.Z` */
  readonly version: string;
}

export type SearchProduct = 'elasticsearch' | 'opensearch';

/**
 * Oldest Elasticsearch hangar runs: 7.1 is the first release whose free (basic) license includes
 * security, which hangar turns on, and hangar writes the settings of 7.x and later
 * (`transport.port`, `discovery.type: single-node`, ES_PATH_CONF).
 */
export const ELASTICSEARCH_MINIMUM = '7.1.0';
/** Oldest Kibana hangar runs: its anonymous access provider (what clients get, see kibanaConfig) appeared in 7.10. */
export const KIBANA_MINIMUM = '7.10.0';

/** Which product a node binary is: OpenSearch when its name says so (`opensearch`), else Elasticsearch. */
export function productOf(node: EngineBinary): SearchProduct {
  return /opensearch/i.test(basename(node.name)) || /opensearch/i.test(basename(node.path)) ? 'opensearch' : 'elasticsearch';
}

/** Whether a dashboards binary is OpenSearch Dashboards (else Kibana). */
const isOpensearchDashboards = (b: EngineBinary): boolean => /opensearch/i.test(basename(b.name)) || /opensearch/i.test(basename(b.path));

/**
 * Why the node binary cannot run instances here, or undefined. `enginesRunAsRoot`: engines run as
 * root here, which they do only when hangar runs as root and is told to keep them root
 * (HANGAR_ENGINE_USER=root); otherwise they run as the engine user, or as hangar's own user.
 */
export function elasticsearchRefusal(node: EngineBinary, enginesRunAsRoot: boolean): string | undefined {
  const product = productOf(node);
  if (enginesRunAsRoot) {
    // Both products check it at start and exit; no setting turns the check off.
    return `${product} refuses to run as root, and engines run as root here (HANGAR_ENGINE_USER=root): leave HANGAR_ENGINE_USER unset, or set it to another user, for engines to run as that user`;
  }
  if (product === 'elasticsearch' && compareVersions(node.version, ELASTICSEARCH_MINIMUM) < 0) {
    return `elasticsearch ${node.version} is older than ${ELASTICSEARCH_MINIMUM}, the first version with security in its free license (hangar turns authentication on); install Elasticsearch ${ELASTICSEARCH_MINIMUM} or newer, or OpenSearch`;
  }
  return undefined;
}

/** Whether Kibana (or OpenSearch Dashboards) runs next to the node, and why not. */
export type DashboardsUse = { readonly use: true; readonly binary: EngineBinary } | { readonly use: false; readonly reason: string };

/**
 * Kibana runs next to Elasticsearch, OpenSearch Dashboards next to OpenSearch, each only with a
 * node of its own release series (both refuse to talk to another one).
 */
export function dashboardsUse(node: EngineBinary, dashboards: EngineBinary | undefined): DashboardsUse {
  const product = productOf(node);
  const wanted = product === 'opensearch' ? 'opensearch-dashboards' : 'kibana';
  if (!dashboards) return { use: false, reason: `${wanted} was not found (set HANGAR_KIBANA_BIN to use it)` };
  if (isOpensearchDashboards(dashboards) !== (product === 'opensearch')) {
    return { use: false, reason: `${dashboards.name} ${dashboards.version} does not work with ${product}: install ${wanted}` };
  }
  if (minorVersion(dashboards.version) !== minorVersion(node.version)) {
    return {
      use: false,
      reason: `${dashboards.name} ${dashboards.version} does not work with ${product} ${node.version}: install ${wanted} ${minorVersion(node.version)}`,
    };
  }
  if (product === 'elasticsearch' && compareVersions(dashboards.version, KIBANA_MINIMUM) < 0) {
    return { use: false, reason: `kibana ${dashboards.version} is older than ${KIBANA_MINIMUM}, which hangar needs for anonymous access` };
  }
  return { use: true, binary: dashboards };
}

/** The home of a product installation (the parent of its `bin`), from the binary's real path. */
function homeOf(binPath: string): string | undefined {
  try {
    return dirname(dirname(realpathSync(binPath)));
  } catch {
    return undefined;
  }
}

/** Whether a plugin is installed next to a binary (`<home>/plugins/<name>`). */
export function pluginInstalled(binPath: string, plugin: string): boolean {
  const home = homeOf(binPath);
  return home !== undefined && existsSync(join(home, 'plugins', plugin));
}
