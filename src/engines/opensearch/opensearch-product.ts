import type { ProgramSpec } from '../../lib/binaries.js';
import { ELASTICSEARCH_PROGRAM, searchProduct } from '../elasticsearch/elasticsearch-product.js';
import { OPENSEARCH_INSTALL } from '../elasticsearch/elasticsearch-install.js';
import { ElasticsearchClusterDriver } from '../elasticsearch/elasticsearch-kubernetes.js';
import { ClusterOnlyEngine } from '../kubernetes/cluster-only-engine.js';
import type { Product } from '../product.js';

export const OPENSEARCH_PROGRAM: ProgramSpec = {
  ...ELASTICSEARCH_PROGRAM,
  key: 'opensearch',
  names: ['opensearch'],
  variable: 'HANGAR_OPENSEARCH_BIN',
  setting: 'opensearchBin',
  about: {
    purpose:
      'elasticsearch instances with engine opensearch, of a version the engine cache does not hold (hangar engines install opensearch@VERSION needs none)',
    install: 'hangar engines install opensearch@VERSION, or package opensearch from artifacts.opensearch.org',
    page: 'https://opensearch.org/downloads.html',
  },
};

const NOT_ON_KUBERNETES = 'OpenSearch does not run on Kubernetes zones in this version of hangar';

/**
 * OpenSearch, the Apache-2.0 fork of Elasticsearch 7.10, as an engine of the `elasticsearch`
 * service (a create names `"engine": "opensearch"`; the service's default stays Elasticsearch).
 * It runs as an Elasticsearch 7 node does, with its own names (opensearch.yml,
 * OPENSEARCH_PATH_CONF). Its security plugin is not provisioned by hangar: the edge refuses what
 * clients may not do.
 */
export const opensearchProduct: Product = searchProduct({
  name: 'opensearch',
  label: 'OpenSearch',
  program: OPENSEARCH_PROGRAM,
  cached: ['opensearch'],
  install: 'hangar engines install opensearch@VERSION, or set HANGAR_OPENSEARCH_BIN',
  known: [],
  recipes: [OPENSEARCH_INSTALL],
  emulatedVersions: OPENSEARCH_INSTALL.versions.flatMap((v) => [v, v.split('.').slice(0, 2).join('.')]),
  cluster: {
    officialImage: (v) => `opensearchproject/opensearch:${v}`,
    defaultVersions: [],
    unavailableReason: NOT_ON_KUBERNETES,
    // never asked to run anything: the zone offers the product as unavailable
    engine: () => new ClusterOnlyEngine('elasticsearch', new ElasticsearchClusterDriver()),
  },
});
