import { describe, expect, it } from 'vitest';
import { serverProduct } from './redis-flavour.js';

describe('the product whose server answered INFO server', () => {
  it('Valkey 8, which names itself', () => {
    expect(
      serverProduct({ redis_version: '7.2.4', server_name: 'valkey', valkey_version: '8.0.1', executable: '/usr/bin/valkey-server' }),
    ).toBe('valkey');
  });

  it('Valkey 7.2.4, which may not: its program does', () => {
    expect(serverProduct({ redis_version: '7.2.4', executable: '/opt/valkey/bin/valkey-server' })).toBe('valkey');
  });

  it('Redis, which does neither', () => {
    expect(serverProduct({ redis_version: '7.0.15', executable: '/usr/bin/redis-server' })).toBe('redis');
    expect(serverProduct({ redis_version: '7.0.15' })).toBe('redis');
  });
});
