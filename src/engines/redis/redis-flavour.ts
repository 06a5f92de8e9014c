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
 * The product whose server answered `INFO server`: Valkey names itself (`server_name:valkey`
 * since 7.2.5, `valkey_version` since 8.0; `redis_version` is the Redis version it is compatible
 * with, 7.2.4), and its program does (`executable`, the path it was started by: `valkey-server`
 * since its first release); Redis does neither.
 */
export function serverProduct(server: Readonly<Record<string, string>>): string {
  const program = (server.executable ?? '').split('/').at(-1);
  const valkey = server.server_name === 'valkey' || server.valkey_version !== undefined || program === VALKEY_FLAVOUR.server;
  return valkey ? VALKEY_FLAVOUR.product : REDIS_FLAVOUR.product;
}
