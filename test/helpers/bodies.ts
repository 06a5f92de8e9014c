/** Valid create bodies per service (spec 4.2), with overrides. */

export const redisBody = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  plan: 500,
  service: 'redis',
  type: 'redis_ha_instance',
  version: '7.0.15',
  zone: 'US-Dallas',
  ...extra,
});

export type MongoType = 'mongodb_sharded' | 'mongodb_replica_set' | 'mongodb_singledb' | 'mongodb_jumbo_replica_set';

export const mongoBody = (name: string, type: MongoType = 'mongodb_replica_set', extra: Record<string, unknown> = {}) => ({
  name,
  plan: 1,
  service: 'mongodb',
  type,
  version: '3.4.2',
  zone: 'US-West',
  ...extra,
});

export const esBody = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  plan: 4,
  service: 'elasticsearch',
  type: 'elasticsearch',
  version: '6.4.1',
  zone: 'US-Dallas',
  ...extra,
});

/** The body of each service, for tests that run over all three. */
export const BODY_OF = {
  redis: (name: string) => redisBody(name),
  mongodb: (name: string) => mongoBody(name),
  elasticsearch: (name: string) => esBody(name),
} as const;

/** Object keys, sorted: to compare a record's field set with the spec's. */
export const keysOf = (o: object): string[] => Object.keys(o).sort();
