import { SPEC_VERSIONS } from '../../domain/catalog.js';
import { type EdgeRoute, edgeRoute } from '../../domain/endpoints.js';
import type { PortMap } from '../../domain/model.js';
import type { ProgramSpec } from '../../lib/binaries.js';
import type { InstallRecipe } from '../install/install-recipe.js';
import { ClusterOnlyEngine } from '../kubernetes/cluster-only-engine.js';
import type { ClusterForm, Product } from '../product.js';
import { heapMb } from './elasticsearch-config.js';
import { ElasticsearchEngine } from './elasticsearch-engine.js';
import { ELASTICSEARCH_INSTALL, ELASTICSEARCH_OSS_INSTALL } from './elasticsearch-install.js';
import { ElasticsearchClusterDriver } from './elasticsearch-kubernetes.js';
import { nodesOf, unavailableVersions, type SearchProduct } from './elasticsearch-versions.js';

export const ELASTICSEARCH_PROGRAM: ProgramSpec = {
  key: 'elasticsearch',
  names: ['elasticsearch'],
  variable: 'HANGAR_ELASTICSEARCH_BIN',
  setting: 'elasticsearchBin',
  versionArgs: ['--version'],
  versionPattern: /Version: (\d+\.\d+\.\d+)/,
  about: {
    purpose:
      'elasticsearch instances of a version the engine cache does not hold (hangar engines install elasticsearch@VERSION needs none)',
    install: "hangar engines install elasticsearch@VERSION, or package elasticsearch from Elastic's APT repository (artifacts.elastic.co)",
    page: 'https://www.elastic.co/downloads/elasticsearch',
  },
};

export const KIBANA_PROGRAM: ProgramSpec = {
  key: 'kibana',
  names: ['kibana', 'opensearch-dashboards'],
  variable: 'HANGAR_KIBANA_BIN',
  setting: 'kibanaBin',
  versionArgs: ['--version'],
  versionPattern: /(\d+\.\d+\.\d+)/,
  about: {
    purpose: 'optional: Kibana listeners of elasticsearch instances (without it they answer 503 saying why)',
    install:
      "package kibana from Elastic's APT repository, or opensearch-dashboards from artifacts.opensearch.org (same release as the node); hangar cannot install either",
    page: 'https://www.elastic.co/downloads/kibana or https://opensearch.org/downloads.html',
  },
};

/** The spec's `connection_strings` of an elasticsearch instance. */
function connectionStrings(p: PortMap, host: string) {
  return {
    public: {
      http: `http://${host}:${p['public.http']}`,
      https: `https://${host}:${p['public.https']}`,
      kibana_http: `http://${host}:${p['public.kibana_http']}`,
      kibana_https: `https://${host}:${p['public.kibana_https']}`,
      transport: `${host}:${p['public.transport']}`,
    },
    servicenet: {
      http: `http://${host}:${p['servicenet.http']}`,
      https: `https://${host}:${p['servicenet.https']}`,
      transport: `${host}:${p['servicenet.transport']}`,
    },
  };
}

/** What differs between the products of the elasticsearch service (Elasticsearch, OpenSearch). */
export interface SearchProductOptions {
  readonly name: SearchProduct;
  readonly label: string;
  /** Its program on PATH (a version the cache does not hold). */
  readonly program: ProgramSpec;
  /** Products of the engine cache it runs, in order of preference. */
  readonly cached: readonly string[];
  readonly install: string;
  /** Versions it knows of besides those it installs (the ObjectRocket API's list). */
  readonly known: readonly string[];
  /** The install recipes of its `cached` products, for the versions they install and refuse. */
  readonly recipes: readonly InstallRecipe[];
  readonly emulatedVersions: readonly string[];
  readonly cluster: ClusterForm;
}

/**
 * A product of the elasticsearch service: one node behind the edge's http, https and transport
 * listeners, Kibana (or OpenSearch Dashboards) beside it when found. ACLs flagged `transport`
 * open the transport port too, those flagged `kibana` the Kibana ports only. Its local form runs
 * the installs of the engine cache, each instance on the node of its own version.
 */
export function searchProduct(o: SearchProductOptions): Product {
  const refused = Object.assign({}, ...o.recipes.map((r) => r.refused)) as Record<string, string>;
  // the first recipe that installs a version names it (the default distribution before the oss one)
  const installable: Record<string, string> = {};
  for (const r of [...o.recipes].reverse()) for (const v of r.versions) installable[v] = r.product;
  const known = [...o.known, ...o.recipes.flatMap((r) => [...r.versions, ...Object.keys(r.refused)])];
  return {
    name: o.name,
    label: o.label,
    service: 'elasticsearch',
    types: ['elasticsearch'],
    planUnit: 'GB',
    doneState: 'COMPLETED',
    features: { password: false, redisApi: false, databaseUsers: false, encryption: true, aclGroups: ['transport', 'kibana'] },
    portRoles: () => [
      'public.http',
      'public.https',
      'public.transport',
      'public.kibana_http',
      'public.kibana_https',
      'servicenet.http',
      'servicenet.https',
      'servicenet.transport',
      'engine.http',
      'engine.transport',
      'engine.kibana',
    ],
    edgeRoutes: (_type, ports): EdgeRoute[] => [
      edgeRoute(ports, 'public.http', 'engine.http'),
      edgeRoute(ports, 'public.https', 'engine.http', true),
      edgeRoute(ports, 'public.transport', 'engine.transport', false, 'transport'),
      edgeRoute(ports, 'public.kibana_http', 'engine.kibana', false, 'kibana'),
      edgeRoute(ports, 'public.kibana_https', 'engine.kibana', true, 'kibana'),
      edgeRoute(ports, 'servicenet.http', 'engine.http'),
      edgeRoute(ports, 'servicenet.https', 'engine.http', true),
      edgeRoute(ports, 'servicenet.transport', 'engine.transport', false, 'transport'),
    ],
    // the rest of the node's memory is the file cache Lucene needs
    promisedMemoryMb: (_type, plan) => 2 * heapMb(plan),
    memoryRule: (_type, plan) => `twice the ${heapMb(plan)} MB heap of the node`,
    recordFields: (inst, host) => ({ encrypted: inst.encrypted, settings: {}, connection_strings: connectionStrings(inst.ports, host) }),
    emulatedVersions: o.emulatedVersions,
    local: {
      programs: [o.program],
      optional: [KIBANA_PROGRAM],
      cached: o.cached,
      install: o.install,
      unavailableVersions: (served) => unavailableVersions(known, served, refused, installable),
      engine: (found, { config, searchPath, installs }) => {
        const program = found[o.program.key];
        const { nodes } = nodesOf(o.name, installs, o.cached, program);
        return new ElasticsearchEngine({
          product: o.name,
          nodes,
          ...(found.kibana ? { dashboards: found.kibana } : {}),
          // as root, engines run as the engine user unless it is root itself
          enginesRunAsRoot: process.getuid?.() === 0 && config.engineUser === 'root',
          installHint: o.install,
          ...(searchPath ? { searchPath } : {}),
        });
      },
    },
    cluster: o.cluster,
  };
}

/**
 * Elasticsearch: the spec's versions that run here (2.4.6, 5.4.3, 5.5.1, 5.6.9, 6.1.2) and
 * 6.8.23, 7.10.2 and 7.17.25, from the engine cache; 6.8.23's default distribution (X-Pack
 * security) before its oss one.
 */
export const elasticsearchProduct: Product = searchProduct({
  name: 'elasticsearch',
  label: 'Elasticsearch',
  program: ELASTICSEARCH_PROGRAM,
  cached: ['elasticsearch', 'elasticsearch-oss'],
  install:
    'hangar engines install elasticsearch@VERSION (or elasticsearch-oss@6.8.23), or set HANGAR_ELASTICSEARCH_BIN (and HANGAR_KIBANA_BIN for Kibana)',
  known: SPEC_VERSIONS.elasticsearch,
  recipes: [ELASTICSEARCH_INSTALL, ELASTICSEARCH_OSS_INSTALL],
  emulatedVersions: SPEC_VERSIONS.elasticsearch,
  cluster: {
    officialImage: (v) => `docker.elastic.co/elasticsearch/elasticsearch:${v}`,
    defaultVersions: SPEC_VERSIONS.elasticsearch,
    engine: () => new ClusterOnlyEngine('elasticsearch', new ElasticsearchClusterDriver()),
  },
});
