import type { Config } from '../config.js';
import { SPEC_VERSIONS, type Service } from '../domain/catalog.js';
import type { Offering, Offerings } from '../domain/units.js';
import { offeringsOf, versionsOf, type EngineBinaries } from '../lib/binaries.js';
import { ClusterOnlyEngine } from './kubernetes/cluster-only-engine.js';
import { ElasticsearchClusterDriver } from './elasticsearch/elasticsearch-kubernetes.js';
import { MongodbClusterDriver } from './mongodb/mongodb-kubernetes.js';
import { ElasticsearchEngine } from './elasticsearch/elasticsearch-engine.js';
import { emulatedEngines } from './emulated/emulated-engines.js';
import type { Engine } from './engine.js';
import { registryOf, type EngineRegistry } from './registry.js';
import { MongodbEngine } from './mongodb/mongodb-engine.js';
import { RedisEngine } from './redis/redis-engine.js';

/**
 * What this machine can host: the binaries found, then what each engine can run with them (a
 * version it cannot drive, or running as root, makes its service unavailable with the reason;
 * the storage engines it can honour are offered).
 */
export function offeringsWith(binaries: EngineBinaries, engines: Partial<Record<Service, Engine>>): Offerings {
  const offered: Record<Service, Offering> = { ...offeringsOf(binaries, new Set(Object.keys(engines) as Service[])) };
  for (const service of Object.keys(engines) as Service[]) {
    const support = engines[service]?.support?.();
    if (!support || !offered[service].available) continue;
    if (support.unavailableReason !== undefined) {
      offered[service] = {
        ...offered[service],
        available: false,
        versions: [],
        unavailableReason: `${service} cannot run here: ${support.unavailableReason}`,
      };
    } else if (support.storageEngines !== undefined) {
      offered[service] = { ...offered[service], storageEngines: support.storageEngines };
    }
  }
  return offered;
}

/**
 * The engines that run as processes on this machine, with the binaries found. MongoDB and
 * Elasticsearch only where their binaries are: without them the offering names what is missing.
 */
export function localEngines(
  config: Pick<Config, 'redisServerBin' | 'redisMaxmemoryPolicy' | 'engineUser'>,
  binaries: EngineBinaries,
  searchPath?: string,
): EngineRegistry {
  const engines: Partial<Record<Service, Engine>> = {};
  const redisServer = 'found' in binaries.redisServer ? binaries.redisServer.found.path : config.redisServerBin;
  engines.redis = new RedisEngine({ bin: redisServer, maxmemoryPolicy: config.redisMaxmemoryPolicy });
  if ('found' in binaries.mongod && 'found' in binaries.mongos) {
    engines.mongodb = new MongodbEngine({
      mongod: binaries.mongod.found,
      mongos: binaries.mongos.found,
      ...(searchPath ? { searchPath } : {}),
    });
  }
  if ('found' in binaries.elasticsearch) {
    engines.elasticsearch = new ElasticsearchEngine({
      node: binaries.elasticsearch.found,
      ...('found' in binaries.kibana ? { dashboards: binaries.kibana.found } : {}),
      // as root, engines run as the engine user unless it is root itself
      enginesRunAsRoot: process.getuid?.() === 0 && config.engineUser === 'root',
      ...(searchPath ? { searchPath } : {}),
    });
  }
  return registryOf(engines, offeringsWith(binaries, engines));
}

/** Redis versions offered on Kubernetes with the official images, where the zone names none (hangar's configuration needs Redis 7). */
export const KUBERNETES_REDIS_VERSIONS = ['7.2.4', '7.2', '7.0.15', '7.0'] as const;

/**
 * The engines of a Kubernetes zone: each in its cluster form. The versions offered are those the
 * zone names images for (`images["redis:7.0.15"]`), or, where it names none for a product, the
 * versions of the official images.
 */
export function kubernetesEngines(config: Pick<Config, 'redisMaxmemoryPolicy'>, images: Readonly<Record<string, string>>): EngineRegistry {
  const versions = (product: Service, defaults: readonly string[]): readonly string[] => {
    const named = Object.keys(images)
      .filter((k) => k.startsWith(`${product}:`))
      .map((k) => k.slice(product.length + 1));
    return named.length > 0 ? [...new Set(named.flatMap(versionsOf))] : defaults;
  };
  const engines: Record<Service, Engine> = {
    redis: new RedisEngine({ bin: 'redis-server', maxmemoryPolicy: config.redisMaxmemoryPolicy }),
    mongodb: new ClusterOnlyEngine('mongodb', new MongodbClusterDriver()),
    elasticsearch: new ClusterOnlyEngine('elasticsearch', new ElasticsearchClusterDriver()),
  };
  return registryOf(engines, {
    redis: { available: true, versions: versions('redis', KUBERNETES_REDIS_VERSIONS) },
    mongodb: { available: true, versions: versions('mongodb', SPEC_VERSIONS.mongodb) },
    elasticsearch: { available: true, versions: versions('elasticsearch', SPEC_VERSIONS.elasticsearch) },
  });
}

export { emulatedEngines, registryOf, type EngineRegistry };
