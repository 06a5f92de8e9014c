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
