import { describe, expect, it } from 'vitest';
import { HangarApiError, type Instance } from '../../client/index.js';
import { describeError, filterInstances, hostPort, mongoshCommand, parseHumanBytes, redisCliCommand, sortInstances } from './format.js';

const inst = (name: string, extra: Partial<Instance> = {}): Instance =>
  ({ id: name, name, service: 'redis', type: 'redis_ha_instance', plan: 500, version: '7.0.15', zone: 'US-Dallas', created: '2026-11-21 09:00:00', api_key: 'k', caster: null, state: 'ACTIVE', ...extra }) as Instance;

describe('console formatting', () => {
  it("reads Redis's used_memory_human", () => {
    expect(parseHumanBytes('900B')).toBe(900);
    expect(parseHumanBytes('1.50K')).toBe(1536);
    expect(parseHumanBytes('1.04M')).toBeCloseTo(1.04 * 1024 ** 2);
    expect(parseHumanBytes('2G')).toBe(2 * 1024 ** 3);
    expect(parseHumanBytes('lots')).toBeUndefined();
  });

  it('filters on every word, in any column, and by service', () => {
    const list = [inst('cache'), inst('docs', { service: 'mongodb', zone: 'US-West' }), inst('queue', { state: 'BUILDING' })];
    expect(filterInstances(list, 'us-west', '').map((i) => i.name)).toEqual(['docs']);
    expect(filterInstances(list, 'redis building', '').map((i) => i.name)).toEqual(['queue']);
    expect(filterInstances(list, '', 'redis').map((i) => i.name)).toEqual(['cache', 'queue']);
  });

  it('sorts numbers as numbers and names naturally, both ways', () => {
    const list = [inst('a10', { plan: 1000 }), inst('a9', { plan: 500 }), inst('b', { plan: 10000 })];
    expect(sortInstances(list, 'plan', 'desc').map((i) => i.plan)).toEqual([10000, 1000, 500]);
    expect(sortInstances(list, 'name', 'asc').map((i) => i.name)).toEqual(['a9', 'a10', 'b']);
  });

  it('builds ready-to-paste commands; the redis password goes in the environment, quoted', () => {
    expect(hostPort('redis://127.0.0.1:20926')).toEqual({ host: '127.0.0.1', port: '20926' });
    expect(redisCliCommand('redis://127.0.0.1:20926', "it's")).toBe(`REDISCLI_AUTH='it'\\''s' redis-cli -h 127.0.0.1 -p 20926`);
    expect(mongoshCommand('127.0.0.1:1,127.0.0.1:2', 'app', 'shop')).toBe('mongosh "mongodb://app@127.0.0.1:1/shop?authSource=shop&directConnection=true"');
    expect(mongoshCommand('127.0.0.1:1', 'app', 'shop')).toBe('mongosh "mongodb://app@127.0.0.1:1/shop?authSource=shop"');
  });

  it('says what happened and what to do for each kind of failure', () => {
    expect(describeError(new HangarApiError(0, 'NETWORK_ERROR', 'x')).todo).toMatch(/hangar is running/);
    expect(describeError(new HangarApiError(400, 'INVALID_VALUE', 'bad plan', { field: 'plan', allowed: [500, 1000] }))).toMatchObject({ what: 'bad plan', field: 'plan', todo: 'Choose one of: 500, 1000.' });
    expect(describeError(new HangarApiError(409, 'OPERATION_IN_PROGRESS', 'busy')).todo).toMatch(/ACTIVE/);
    expect(describeError(new HangarApiError(429, 'RATE_LIMITED', 'slow down', { retryAfterSeconds: 7 })).todo).toBe('Wait 7 seconds and try again.');
    expect(describeError(new HangarApiError(500, 'INTERNAL', 'oops', { requestId: 'r-1' }))).toMatchObject({ requestId: 'r-1', todo: expect.stringContaining('r-1') });
    expect(describeError(new Error('boom')).todo).toMatch(/Reload/);
  });
});
