import type { ProgramSpec } from '../../lib/binaries.js';
import { valkeyRefusesRedis } from '../redis/rdb-versions.js';
import type { Product } from '../product.js';
import { VALKEY_FLAVOUR } from '../redis/redis-flavour.js';
import { redisFamilyProduct } from '../redis/redis-product.js';

/**
 * Valkey: the Linux Foundation's BSD-licensed fork of Redis 7.2, as an engine of the `redis`
 * service. It reads Redis 7's configuration, ACL rules and data files, so an instance runs as a
 * Redis one does (primary, replica, Sentinel on Kubernetes); its programs are valkey-server and
 * valkey-cli. Debian 12 has it in bookworm-backports (8.0).
 */
export const VALKEY_SERVER_PROGRAM: ProgramSpec = {
  key: 'valkeyServer',
  names: ['valkey-server'],
  variable: 'HANGAR_VALKEY_SERVER_BIN',
  setting: 'valkeyServerBin',
  versionArgs: ['--version'],
  versionPattern: /\bv=(\d+\.\d+\.\d+)/,
  minimum: { version: '7.2.0', because: 'Valkey began as a fork of Redis 7.2' },
  about: {
    purpose: 'redis instances with engine valkey',
    install:
      'Debian 12: package valkey-server from bookworm-backports (apt-get install -t bookworm-backports valkey-server); Debian 13, Ubuntu 24.04: valkey-server',
    page: 'https://valkey.io/download/',
  },
};

export const valkeyProduct: Product = redisFamilyProduct({
  name: 'valkey',
  label: 'Valkey',
  flavour: VALKEY_FLAVOUR,
  program: VALKEY_SERVER_PROGRAM,
  install:
    'apt-get install -t bookworm-backports valkey-server valkey-tools (Debian 12, with a bookworm-backports source; Debian 13 and Ubuntu 24.04 have it in their main archive), or set HANGAR_VALKEY_SERVER_BIN',
  officialImage: (v) => `valkey/valkey:${v}`,
  clusterVersions: ['8.0.1', '8.0'],
  emulatedVersions: ['8.0.1', '8.0', '7.2.4', '7.2'],
  // Valkey loads the append-only files and RDB snapshots of Redis 7.2 and earlier (RDB versions up
  // to 11), not those of Redis 7.4 and later (12). Redis 7.0 refuses the RDB version 11 that
  // Valkey 8 writes ("Can't handle RDB format version 11"): the way back is not promised.
  loadsDataOf: { redis: (theirs) => valkeyRefusesRedis(theirs) },
  // valkey-cli also reads REDISCLI_AUTH
  shell: { program: 'valkey-cli', install: 'Debian/Ubuntu: apt install valkey-tools', authVariables: ['VALKEYCLI_AUTH', 'REDISCLI_AUTH'] },
});
