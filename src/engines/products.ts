import type { Service } from '../domain/catalog.js';
import { elasticsearchProduct } from './elasticsearch/elasticsearch-product.js';
import { ferretdbProduct } from './ferretdb/ferretdb-product.js';
import { mongodProduct } from './mongodb/mongodb-product.js';
import { opensearchProduct } from './opensearch/opensearch-product.js';
import type { Product } from './product.js';
import { redisProduct } from './redis/redis-product.js';
import { valkeyProduct } from './valkey/valkey-product.js';

/**
 * The products hangar runs, one line each. Their order is the order of preference: a create that
 * names no engine gets the first product of its service that its zone can run (Redis before
 * Valkey, mongod before FerretDB, Elasticsearch before OpenSearch), and lists show them in this order.
 */
export const PRODUCTS: readonly Product[] = [
  redisProduct,
  valkeyProduct,
  mongodProduct,
  ferretdbProduct,
  elasticsearchProduct,
  opensearchProduct,
];

const BY_NAME: ReadonlyMap<string, Product> = new Map(PRODUCTS.map((p) => [p.name, p]));

/** Every engine name a create body may give. */
export const ENGINE_NAMES: readonly string[] = PRODUCTS.map((p) => p.name);

/** The product of that name, or undefined. */
export function findProduct(name: string): Product | undefined {
  return BY_NAME.get(name);
}

/** The product an instance runs (its recorded engine). Throws on a name no product has: the store holds only names it was given. */
export function productNamed(name: string): Product {
  const p = BY_NAME.get(name);
  if (!p) throw new Error(`no product is named ${JSON.stringify(name)}`);
  return p;
}

/** The products of a service, in order of preference. */
export function productsOf(service: Service): readonly Product[] {
  return PRODUCTS.filter((p) => p.service === service);
}

/** The product of a service that instances created before engines could be chosen run (redis, mongod, elasticsearch). */
export function firstProductOf(service: Service): Product {
  return productsOf(service)[0]!;
}
