import { describe, expect, it } from 'vitest';
import { redisRdbVersion, valkeyRefusesRedis } from './rdb-versions.js';

describe('RDB versions', () => {
  it.each([
    ['7.0.15', 10],
    ['7.0', 10],
    ['7.2.4', 11],
    ['7.4.2', 12],
    ['8.0.2', 12],
    ['6.2.14', 9],
    ['5.0.7', 9],
    ['4.0.14', 8],
    ['3.2.12', 7],
    ['2.8.24', 6],
  ])('Redis %s writes RDB version %i', (version, rdb) => {
    expect(redisRdbVersion(version)).toBe(rdb);
  });

  it('is unknown for a version before 2.6 or no version', () => {
    expect(redisRdbVersion('2.4.18')).toBeUndefined();
    expect(redisRdbVersion('latest')).toBeUndefined();
  });

  it('Valkey loads the data of Redis 7.2 and earlier, not of 7.4 and later, saying why', () => {
    for (const v of ['6.2', '7.0.15', '7.2.4', '7.2']) expect(valkeyRefusesRedis(v), v).toBeUndefined();
    expect(valkeyRefusesRedis('7.4.2')).toBe(
      "Redis 7.4.2 writes RDB version 12, which Valkey does not load (Valkey loads Redis's up to RDB version 11: Redis 7.2 and earlier)",
    );
    expect(valkeyRefusesRedis('8.0')).toMatch(/^Redis 8\.0 writes RDB version 12/);
  });
});
