import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { UnavailableVersion } from '../../domain/units.js';
import { compareVersions, minorVersion } from '../../lib/versions.js';
import type { InstalledEngine } from '../install/engine-manifest.js';

/** An engine program found on this machine. */
export interface EngineBinary {
  readonly name: string;
  readonly path: string;
  /** `X.Y.Z` */
  readonly version: string;
}

export type SearchProduct = 'elasticsearch' | 'opensearch';

/**
 * How hangar drives a node, by release line (each line's start script and settings differ; the
 * details, as found on each version, are in elasticsearch-install.ts):
 * - `es2`: settings as `-Des.*` flags, `path.conf`, logging.yml, heap from ES_HEAP_SIZE, zen
 *   unicast discovery (no `discovery.type`), `transport.tcp.port`;
 * - `es5`: `-E` flags, `-Epath.conf`, jvm.options from ES_JVM_OPTIONS, `transport.tcp.port`,
 *   `discovery.type: single-node` (5.4 on);
 * - `es6`: ES_PATH_CONF, `transport.tcp.port` (up to 6.6; `transport.port` from 6.7);
 * - `es7`: 7.x and later;
 * - `opensearch`: OpenSearch, as Elasticsearch 7 with its own names.
 */
export type NodeFamily = 'es2' | 'es5' | 'es6' | 'es7' | 'opensearch';

/** Oldest Elasticsearch hangar drives; 5.0 to 5.3 have no single-node discovery, and none of them was verified. */
export const ELASTICSEARCH_MINIMUM = '2.0.0';
/** Oldest Kibana hangar runs: its anonymous access provider (what clients get, see kibanaConfig) appeared in 7.10. */
export const KIBANA_MINIMUM = '7.10.0';

/** The family of a node of `product` at `version`, or undefined when hangar cannot drive it. */
export function nodeFamily(product: SearchProduct, version: string): NodeFamily | undefined {
  if (product === 'opensearch') return 'opensearch';
  const major = Number(version.split('.')[0]);
  if (major === 2) return 'es2';
  if (major === 5) return compareVersions(version, '5.4.0') >= 0 ? 'es5' : undefined;
  if (major === 6) return 'es6';
  return major >= 7 ? 'es7' : undefined;
}

/**
 * A node program hangar can run: an install of the engine cache (`hangar engines install`), or
 * a binary found on PATH (or at HANGAR_ELASTICSEARCH_BIN).
 */
export interface NodeInstall {
  readonly product: SearchProduct;
  /** `X.Y.Z` */
  readonly version: string;
  readonly family: NodeFamily;
  /** The start script (`bin/elasticsearch`). */
  readonly program: string;
  /** Its home, the parent of `bin/`: the distribution's `config/jvm.options` and `modules/` are read there. */
  readonly home: string;
  /** Environment every start needs (the Java home...), from the install's manifest; none for a binary on PATH. */
  readonly env: Readonly<Record<string, string>>;
  /** Where it comes from, for people: `hangar engines install elasticsearch-oss@6.8.23`, or the binary's path. */
  readonly origin: string;
  /**
   * Whether the node has security hangar turns on: X-Pack's, in Elasticsearch's default
   * distribution from 6.8 (7.0 excepted), when security came into the free license. Without it,
   * the edge refuses what clients may not do (see elasticsearch-edge.ts).
   */
  readonly security: boolean;
  /** OpenSearch: its security plugin is installed (turned off: hangar does not provision it). */
  readonly securityPlugin: boolean;
}

/** The home of a product installation (the parent of its `bin`), from the binary's real path. */
function homeOf(binPath: string): string {
  try {
    return dirname(dirname(realpathSync(binPath)));
  } catch {
    return dirname(dirname(binPath));
  }
}

/** Whether a plugin is installed next to a binary (`<home>/plugins/<name>`). */
export function pluginInstalled(binPath: string, plugin: string): boolean {
  return existsSync(join(homeOf(binPath), 'plugins', plugin));
}

/** `default` or `oss`, as the start scripts of 6.3 and later say; undefined where they do not. */
function distributionFlavor(home: string): string | undefined {
  try {
    return /^ES_DISTRIBUTION_FLAVOR=(\w+)/m.exec(readFileSync(join(home, 'bin', 'elasticsearch-env'), 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Whether an Elasticsearch home has security in its free license: the X-Pack security module, in
 * a distribution that is not `oss` (the 7.x integration-test zips carry the module, flavoured
 * oss, and it stays off: "security features are not enabled"), of 6.8 or of 7.1 and later.
 */
function xpackSecurity(home: string, version: string): boolean {
  if (!existsSync(join(home, 'modules', 'x-pack-security')) || distributionFlavor(home) === 'oss') return false;
  const v = (x: string) => compareVersions(version, x);
  return (v('6.8.0') >= 0 && v('7.0.0') < 0) || v('7.1.0') >= 0;
}

function install(product: SearchProduct, version: string, program: string, env: Readonly<Record<string, string>>, origin: string) {
  const family = nodeFamily(product, version);
  if (!family) return undefined;
  const home = homeOf(program);
  return {
    product,
    version,
    family,
    program,
    home,
    env,
    origin,
    security: product === 'elasticsearch' && xpackSecurity(home, version),
    securityPlugin: product === 'opensearch' && existsSync(join(home, 'plugins', 'opensearch-security')),
  } satisfies NodeInstall;
}

/** Whether a binary is OpenSearch (by its name or path), else Elasticsearch. */
export function productOf(binary: EngineBinary): SearchProduct {
  return /opensearch/i.test(basename(binary.name)) || /opensearch/i.test(basename(binary.path)) ? 'opensearch' : 'elasticsearch';
}

/**
 * The nodes of `product` this machine can run, one per version: the engine cache's installs of
 * `distributions` (in their order of preference: the default distribution before the oss one),
 * then a binary found on PATH for a version the cache does not hold. Also what cannot be run,
 * and why (a version hangar does not drive).
 */
export function nodesOf(
  product: SearchProduct,
  installs: readonly InstalledEngine[],
  distributions: readonly string[],
  found: EngineBinary | undefined,
): { nodes: NodeInstall[]; problems: string[] } {
  const nodes = new Map<string, NodeInstall>();
  const problems: string[] = [];
  for (const distribution of distributions) {
    for (const i of installs.filter((x) => x.product === distribution)) {
      if (nodes.has(i.version)) continue;
      const node = install(product, i.version, i.program, i.env, `hangar engines install ${distribution}@${i.version}`);
      if (node) nodes.set(i.version, node);
      else problems.push(`${distribution} ${i.version} (${i.dir}) is not a version hangar drives`);
    }
  }
  if (found && !nodes.has(found.version)) {
    const node = install(product, found.version, found.path, {}, found.path);
    if (node) nodes.set(found.version, node);
    else
      problems.push(
        `${found.path} is ${product} ${found.version}, which hangar does not drive (Elasticsearch ${ELASTICSEARCH_MINIMUM} or later, 5.0 to 5.3 excepted)`,
      );
  }
  return { nodes: [...nodes.values()].sort((a, b) => compareVersions(a.version, b.version)), problems };
}

/** The versions a create may name: each node's `X.Y.Z`, and `X.Y` (the newest node of that line). */
export function servedVersions(nodes: readonly NodeInstall[]): string[] {
  const out: string[] = [];
  for (const n of nodes) {
    out.push(n.version);
    if (!out.includes(minorVersion(n.version))) out.push(minorVersion(n.version));
  }
  return out;
}

/**
 * The node that serves an instance of `version`: the one of that `X.Y.Z`, or for `X.Y` the
 * newest of that line. Never another version: undefined when none is here.
 */
export function nodeFor(nodes: readonly NodeInstall[], version: string): NodeInstall | undefined {
  const exact = nodes.find((n) => n.version === version);
  if (exact) return exact;
  const line = nodes.filter((n) => minorVersion(n.version) === version);
  return line[line.length - 1];
}

/**
 * Versions hangar knows of (the ObjectRocket API's list, what it installs) that are not served
 * here, each with why: refused by the installer (not published, fails to start), or not
 * installed yet (and the command that installs it).
 */
export function unavailableVersions(
  known: readonly string[],
  served: readonly string[],
  refused: Readonly<Record<string, string>>,
  installable: Readonly<Record<string, string>>,
): UnavailableVersion[] {
  const out: UnavailableVersion[] = [];
  for (const version of [...new Set(known)].sort(compareVersions)) {
    if (served.includes(version)) continue;
    const why = refused[version];
    const product = installable[version];
    if (why !== undefined) out.push({ version, reason: `hangar cannot run it: it ${why}` });
    else if (product !== undefined)
      out.push({ version, reason: `not installed here: run \`hangar engines install ${product}@${version}\`` });
    else out.push({ version, reason: 'hangar does not install it (not verified to run here)' });
  }
  return out;
}

/**
 * Why a node cannot run instances here, or undefined. `enginesRunAsRoot`: engines run as root
 * here, which they do only when hangar runs as root and is told to keep them root
 * (HANGAR_ENGINE_USER=root); otherwise they run as the engine user, or as hangar's own user.
 */
export function rootRefusal(product: SearchProduct, enginesRunAsRoot: boolean): string | undefined {
  // Both products check it at start and exit; no setting turns the check off.
  if (!enginesRunAsRoot) return undefined;
  return `${product} refuses to run as root, and engines run as root here (HANGAR_ENGINE_USER=root): leave HANGAR_ENGINE_USER unset, or set it to another user, for engines to run as that user`;
}

/** Whether Kibana (or OpenSearch Dashboards) runs next to the node, and why not. */
export type DashboardsUse = { readonly use: true; readonly binary: EngineBinary } | { readonly use: false; readonly reason: string };

/** Whether a dashboards binary is OpenSearch Dashboards (else Kibana). */
const isOpensearchDashboards = (b: EngineBinary): boolean => /opensearch/i.test(basename(b.name)) || /opensearch/i.test(basename(b.path));

/**
 * Kibana runs next to Elasticsearch, OpenSearch Dashboards next to OpenSearch, each only with a
 * node of its own release series (both refuse to talk to another one); Kibana only beside a node
 * of 7.10 or later with security (visitors come in as the node's anonymous user, through Kibana's
 * anonymous provider of 7.10). Neither is in a registry hangar installs from.
 */
export function dashboardsUse(node: NodeInstall, dashboards: EngineBinary | undefined): DashboardsUse {
  const { product } = node;
  if (product === 'elasticsearch' && (!node.security || compareVersions(node.version, KIBANA_MINIMUM) < 0)) {
    return {
      use: false,
      reason: `hangar runs Kibana only beside Elasticsearch ${KIBANA_MINIMUM} or later with security (visitors come in as the node's anonymous user)`,
    };
  }
  const wanted = product === 'opensearch' ? 'opensearch-dashboards' : 'kibana';
  const release = `${wanted} ${minorVersion(node.version)}`;
  if (!dashboards) {
    return {
      use: false,
      reason: `no ${release} was found (HANGAR_KIBANA_BIN); hangar cannot install it (it is in no registry hangar fetches from)`,
    };
  }
  if (
    isOpensearchDashboards(dashboards) !== (product === 'opensearch') ||
    minorVersion(dashboards.version) !== minorVersion(node.version)
  ) {
    return {
      use: false,
      reason: `${dashboards.name} ${dashboards.version} (${dashboards.path}) does not work with ${product} ${node.version}: install ${release}`,
    };
  }
  return { use: true, binary: dashboards };
}
