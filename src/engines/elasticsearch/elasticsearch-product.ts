import { SPEC_VERSIONS } from '../../domain/catalog.js';
import { type EdgeRoute, edgeRoute } from '../../domain/endpoints.js';
import type { PortMap } from '../../domain/model.js';
import type { ProgramSpec } from '../../lib/binaries.js';
import { ClusterOnlyEngine } from '../kubernetes/cluster-only-engine.js';
import type { Product } from '../product.js';
import { heapMb } from './elasticsearch-config.js';
import { ElasticsearchEngine } from './elasticsearch-engine.js';
import { ElasticsearchClusterDriver } from './elasticsearch-kubernetes.js';

export const ELASTICSEARCH_PROGRAM: ProgramSpec = {
  key: 'elasticsearch',
  names: ['elasticsearch', 'opensearch'],
  variable: 'HANGAR_ELASTICSEARCH_BIN',
  setting: 'elasticsearchBin',
  versionArgs: ['--version'],
  versionPattern: /Version: (\d+\.\d+\.\d+)/,
  about: {
    purpose: 'elasticsearch instances (Elasticsearch 7.1 or newer, or OpenSearch)',
    install: "package elasticsearch from Elastic's APT repository (artifacts.elastic.co), or opensearch from artifacts.opensearch.org",
    page: 'https://www.elastic.co/downloads/elasticsearch or https://opensearch.org/downloads.html',
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
    purpose: 'optional: Kibana listeners of elasticsearch instances',
    install:
      "package kibana from Elastic's APT repository, or opensearch-dashboards from artifacts.opensearch.org (same release as the node)",
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

/**
 * Elasticsearch (or OpenSearch): one node behind the edge's http, https and transport listeners,
 * Kibana (or OpenSearch Dashboards) beside it when found. ACLs flagged `transport` open the
 * transport port too, those flagged `kibana` the Kibana ports only.
 */
export const elasticsearchProduct: Product = {
  name: 'elasticsearch',
  label: 'Elasticsearch',
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
  emulatedVersions: SPEC_VERSIONS.elasticsearch,
  local: {
    programs: [ELASTICSEARCH_PROGRAM],
    optional: [KIBANA_PROGRAM],
    install: 'install Elasticsearch or OpenSearch, or set HANGAR_ELASTICSEARCH_BIN (and HANGAR_KIBANA_BIN for Kibana)',
    engine: (found, { config, searchPath }) =>
      new ElasticsearchEngine({
        node: found.elasticsearch!,
        ...(found.kibana ? { dashboards: found.kibana } : {}),
        // as root, engines run as the engine user unless it is root itself
        enginesRunAsRoot: process.getuid?.() === 0 && config.engineUser === 'root',
        ...(searchPath ? { searchPath } : {}),
      }),
  },
  cluster: {
    officialImage: (v) => `docker.elastic.co/elasticsearch/elasticsearch:${v}`,
    defaultVersions: SPEC_VERSIONS.elasticsearch,
    engine: () => new ClusterOnlyEngine('elasticsearch', new ElasticsearchClusterDriver()),
  },
};
