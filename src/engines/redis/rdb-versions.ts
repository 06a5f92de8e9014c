/**
 * RDB format versions: what a Redis writes in its snapshots and at the base of its append-only
 * files (`REDIS0011`), and so what a server that loads them must read. Each server loads the
 * versions up to its own.
 */

/** The RDB version Redis writes, by the first release that wrote it (newest first). */
const REDIS_RDB: readonly (readonly [major: number, minor: number, rdb: number])[] = [
  [7, 4, 12],
  [7, 2, 11],
  [7, 0, 10],
  [5, 0, 9],
  [4, 0, 8],
  [3, 2, 7],
  [2, 6, 6],
];

/**
 * The highest RDB version Valkey loads of Redis's: 11, that of Redis 7.2, which Valkey forked
 * (Valkey 7.2 and 8 write it too). Redis 7.4 and later write 12, which no Valkey loads.
 */
export const VALKEY_LOADS_REDIS_RDB = 11;

/** The RDB version Redis `version` (`X.Y` or `X.Y.Z`) writes; undefined for a version it cannot read. */
export function redisRdbVersion(version: string): number | undefined {
  const m = /^(\d+)\.(\d+)/.exec(version);
  if (!m) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return REDIS_RDB.find(([ma, mi]) => major > ma || (major === ma && minor >= mi))?.[2];
}

/**
 * Why Valkey does not load the data files of Redis `version`, or undefined when it does (Redis
 * 7.2 and earlier).
 */
export function valkeyRefusesRedis(version: string): string | undefined {
  const rdb = redisRdbVersion(version);
  if (rdb === undefined) return `the RDB version Redis ${version} writes is not known`;
  if (rdb <= VALKEY_LOADS_REDIS_RDB) return undefined;
  return `Redis ${version} writes RDB version ${rdb}, which Valkey does not load (Valkey loads Redis's up to RDB version ${VALKEY_LOADS_REDIS_RDB}: Redis 7.2 and earlier)`;
}
