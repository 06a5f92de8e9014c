import type { InstanceType, Service } from '../domain/catalog.js';
import { heapMb } from './elasticsearch/elasticsearch-config.js';
import { mongoLayout, wiredTigerCacheGb } from './mongodb/mongodb-config.js';

/** Memory of a mongod or mongos beyond its WiredTiger cache (connections, indexes in build, the process itself). */
const MONGO_PROCESS_MB = 256;

/**
 * The memory an instance promises on its plan, in MB: what capacity is accounted in.
 * - redis: `maxmemory` (the plan) for the primary and again for the replica;
 * - mongodb: per mongod, its WiredTiger cache plus 256 MB, and 256 MB for a mongos;
 * - elasticsearch: twice the node's heap (the rest of the node's memory is the file cache Lucene needs).
 */
export function promisedMemoryMb(service: Service, type: InstanceType, plan: number): number {
  switch (service) {
    case 'redis':
      return 2 * plan;
    case 'mongodb':
      return mongoLayout('x', type).reduce(
        (sum, u) => sum + MONGO_PROCESS_MB + (u.process === 'mongod' ? Math.round(wiredTigerCacheGb(plan, u.clusterRole) * 1024) : 0),
        0,
      );
    case 'elasticsearch':
      return 2 * heapMb(plan);
  }
}

/** How the promise of a service is counted, in words (for refusals and the README). */
export function memoryRule(service: Service, type: InstanceType, plan: number): string {
  switch (service) {
    case 'redis':
      return `2 x ${plan} MB: maxmemory of the primary and of the replica`;
    case 'mongodb':
      return `the WiredTiger cache and 256 MB for each of the ${mongoLayout('x', type).length} processes of a ${type}`;
    case 'elasticsearch':
      return `twice the ${heapMb(plan)} MB heap of the node`;
  }
}
