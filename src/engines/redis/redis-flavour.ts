/**
 * Redis and Valkey (the Linux Foundation's fork of Redis 7.2) run the same way: the same
 * configuration, replication, ACL rules, Sentinel and data files. A flavour names what differs:
 * the programs, and the product whose images a cluster runs.
 */
export interface RedisFlavour {
  /** The product's name (`redis`, `valkey`): also the key of its images in a zone. */
  readonly product: string;
  /** The server program (`redis-server`), also run with `--sentinel` as a sentinel. */
  readonly server: string;
  /** The command-line client (`redis-cli`). */
  readonly cli: string;
}

export const REDIS_FLAVOUR: RedisFlavour = { product: 'redis', server: 'redis-server', cli: 'redis-cli' };
export const VALKEY_FLAVOUR: RedisFlavour = { product: 'valkey', server: 'valkey-server', cli: 'valkey-cli' };

/**
 * The product whose server answered `INFO server`: Valkey names itself (`server_name:valkey` and
 * `valkey_version` since 8.0; `redis_version` is the Redis version it is compatible with), Redis
 * does not.
 */
export function serverProduct(server: Readonly<Record<string, string>>): string {
  return server.server_name === 'valkey' || server.valkey_version !== undefined ? VALKEY_FLAVOUR.product : REDIS_FLAVOUR.product;
}
