import { describe, expect, it } from 'vitest';
import { REDIS_SETTING_NAMES, checkRedisSetting, sameSetting } from './redis-settings.js';

describe('checkRedisSetting', () => {
  it('takes the values of the allow-list, as redis.conf writes them', () => {
    expect(checkRedisSetting('maxmemory-policy', 'allkeys-lru')).toEqual({ value: 'allkeys-lru' });
    expect(checkRedisSetting('maxclients', 5000)).toEqual({ value: '5000' });
    expect(checkRedisSetting('timeout', '300')).toEqual({ value: '300' });
    expect(checkRedisSetting('slowlog-log-slower-than', -1)).toEqual({ value: '-1' });
    expect(checkRedisSetting('notify-keyspace-events', 'KEx')).toEqual({ value: 'KEx' });
    expect(checkRedisSetting('notify-keyspace-events', '')).toEqual({ value: '' });
    expect(checkRedisSetting('lazyfree-lazy-user-del', 'yes')).toEqual({ value: 'yes' });
  });

  it('refuses the rest with the allowed values', () => {
    expect(checkRedisSetting('save', '')).toMatchObject({ allowed: REDIS_SETTING_NAMES });
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect(checkRedisSetting(name, 'x'), name).toHaveProperty('problem');
    expect(checkRedisSetting('maxmemory-policy', 'lru')).toMatchObject({ allowed: expect.arrayContaining(['noeviction', 'allkeys-lfu']) });
    expect(checkRedisSetting('maxclients', 0)).toMatchObject({ allowed: [1, 10000] });
    expect(checkRedisSetting('maxclients', 10001)).toMatchObject({ allowed: [1, 10000] });
    expect(checkRedisSetting('hz', '10.5')).toHaveProperty('problem');
    expect(checkRedisSetting('notify-keyspace-events', 'KEq')).toHaveProperty('problem');
    expect(checkRedisSetting('notify-keyspace-events', 1)).toHaveProperty('problem');
    expect(checkRedisSetting('lazyfree-lazy-expire', 'true')).toMatchObject({ allowed: ['yes', 'no'] });
  });
});

describe('sameSetting', () => {
  it('reads keyspace event classes as Redis rewrites them', () => {
    expect(sameSetting('notify-keyspace-events', 'xE', 'Ex')).toBe(true);
    expect(sameSetting('notify-keyspace-events', 'AKE', 'KEg$lshzxetd')).toBe(true);
    expect(sameSetting('notify-keyspace-events', 'xE', 'Ex$')).toBe(false);
    expect(sameSetting('timeout', '300', '300')).toBe(true);
  });
});
