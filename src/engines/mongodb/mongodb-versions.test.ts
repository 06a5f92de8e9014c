import { describe, expect, it } from 'vitest';
import { compareVersions } from '../../lib/versions.js';
import { MONGODB_MINIMUM, mongodbSupport, storageEngineRefusal, storageEnginesFor } from './mongodb-versions.js';

const bin = (name: string, version: string) => ({ name, path: `/usr/bin/${name}`, version });

describe('mongodbSupport', () => {
  it('accepts MongoDB 4.2 and newer, with matching mongod and mongos', () => {
    expect(mongodbSupport(bin('mongod', '7.0.2'), bin('mongos', '7.0.14'))).toEqual({ storageEngines: ['wiredtiger'] });
    expect(mongodbSupport(bin('mongod', '4.2.0'), bin('mongos', '4.2.25')).unavailableReason).toBeUndefined();
  });

  it('refuses servers older than the driver can talk to, saying which and why', () => {
    const old = mongodbSupport(bin('mongod', '3.4.2'), bin('mongos', '3.4.2'));
    expect(old.unavailableReason).toMatch(/mongod 3\.4\.2 is older than 4\.2\.0.*driver/);
    expect(mongodbSupport(bin('mongod', '6.0.5'), bin('mongos', '4.0.28')).unavailableReason).toMatch(/mongos 4\.0\.28/);
    expect(MONGODB_MINIMUM).toBe('4.2.0');
  });

  it('refuses a mongos of another release series than mongod', () => {
    expect(mongodbSupport(bin('mongod', '7.0.2'), bin('mongos', '6.0.5')).unavailableReason).toMatch(/different release series/);
  });
});

describe('storage engines', () => {
  it('offers mmapv1 only up to MongoDB 4.0', () => {
    expect(storageEnginesFor('4.0.28')).toEqual(['mmapv1', 'wiredtiger']);
    expect(storageEnginesFor('4.2.0')).toEqual(['wiredtiger']);
    expect(storageEnginesFor('8.0.1')).toEqual(['wiredtiger']);
  });

  it('refuses mmapv1 on a newer mongod, clearly', () => {
    expect(storageEngineRefusal('mmapv1', '7.0.2')).toMatch(/mmapv1 exists only up to MongoDB 4\.0.*mongod 7\.0\.2.*wiredtiger/);
    expect(storageEngineRefusal('wiredtiger', '7.0.2')).toBeUndefined();
    expect(storageEngineRefusal(null, '7.0.2')).toBeUndefined();
    expect(storageEngineRefusal('mmapv1', '4.0.3')).toBeUndefined();
  });
});

describe('compareVersions', () => {
  it('orders by number', () => {
    expect(compareVersions('4.10.0', '4.2.0')).toBeGreaterThan(0);
    expect(compareVersions('4.0.28', '4.2.0')).toBeLessThan(0);
    expect(compareVersions('4.2', '4.2.0')).toBe(0);
  });
});
