import { describe, expect, it } from 'vitest';
import { REDIS_ADMIN_USER, readMaxmemoryPolicy, renderRedisConfig, type RedisUnitConfig } from './redis-config.js';

const base: RedisUnitConfig = {
  instanceId: '65a1b2c3d4e5f60718293a4b',
  role: 'primary',
  port: 20001,
  dir: '/data/instances/65a1b2c3d4e5f60718293a4b/primary',
  password: 'pw0123456789abcdef',
  adminSecret: 'admin0123456789',
  maxmemoryMb: 500,
  maxmemoryPolicy: 'noeviction',
};

/** The values of a directive, as redis reads them (one line per occurrence). */
function directive(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `))
    .map((l) => l.slice(name.length + 1));
}

describe('renderRedisConfig', () => {
  it('binds the engine to loopback on its port, in the foreground, with AOF in the unit dir', () => {
    const text = renderRedisConfig(base);
    expect(directive(text, 'bind')).toEqual(['127.0.0.1']);
    expect(directive(text, 'port')).toEqual(['20001']);
    expect(directive(text, 'daemonize')).toEqual(['no']);
    expect(directive(text, 'dir')).toEqual([`"${base.dir}"`]);
    expect(directive(text, 'logfile')).toEqual(['""']);
    expect(directive(text, 'appendonly')).toEqual(['yes']);
    expect(directive(text, 'save')).toEqual(['""']);
  });

  it('sets maxmemory to the plan in MB and the chosen policy', () => {
    const text = renderRedisConfig({ ...base, maxmemoryMb: 2500, maxmemoryPolicy: 'allkeys-lru' });
    expect(directive(text, 'maxmemory')).toEqual(['2500mb']);
    expect(directive(text, 'maxmemory-policy')).toEqual(['allkeys-lru']);
    expect(readMaxmemoryPolicy(text)).toBe('allkeys-lru');
  });

  it('requires the instance password from clients and for replication; hangar has its own user', () => {
    const text = renderRedisConfig(base);
    expect(directive(text, 'requirepass')).toEqual([`"${base.password}"`]);
    expect(directive(text, 'masterauth')).toEqual([`"${base.password}"`]);
    const users = directive(text, 'user');
    expect(users).toHaveLength(2);
    expect(users[0]).toMatch(new RegExp(`^default on ">${base.password}" .*-@admin`));
    // the replica authenticates as `default`: the handshake must stay allowed
    expect(users[0]).toMatch(/\+replconf \+psync \+sync/);
    expect(users[1]).toBe(`${REDIS_ADMIN_USER} on ">${base.adminSecret}" ~* &* +@all`);
  });

  it('syncs replicas at once (no diskless delay)', () => {
    const text = renderRedisConfig(base);
    expect(directive(text, 'repl-diskless-sync')).toEqual(['yes']);
    expect(directive(text, 'repl-diskless-sync-delay')).toEqual(['0']);
  });

  it('makes only the replica follow the primary', () => {
    expect(directive(renderRedisConfig(base), 'replicaof')).toEqual([]);
    const replica = renderRedisConfig({ ...base, role: 'replica', port: 20002, primaryPort: 20001 });
    expect(directive(replica, 'replicaof')).toEqual(['127.0.0.1 20001']);
    expect(() => renderRedisConfig({ ...base, role: 'replica' })).toThrow(/port of its primary/);
  });

  it('quotes paths and secrets so that spaces and quotes survive', () => {
    const text = renderRedisConfig({ ...base, dir: '/data dir/"x"', password: 'a b\\c' });
    expect(directive(text, 'dir')).toEqual(['"/data dir/\\"x\\""']);
    expect(directive(text, 'requirepass')).toEqual(['"a b\\\\c"']);
  });

  it('is deterministic', () => {
    expect(renderRedisConfig(base)).toBe(renderRedisConfig({ ...base }));
  });
});

describe('renderRedisConfig: rotation, users and settings', () => {
  it('lets the default user in with the password a rotation replaced too; replication uses the new one', () => {
    const text = renderRedisConfig({ ...base, priorPasswords: ['old-password-0123'] });
    expect(directive(text, 'user').find((l) => l.startsWith('default '))).toMatch(
      /^default on ">pw0123456789abcdef" ">old-password-0123" /,
    );
    expect(directive(text, 'requirepass')).toEqual([`"${base.password}"`]);
    expect(directive(text, 'masterauth')).toEqual([`"${base.password}"`]);
  });

  it('writes application users with their passwords as SHA-256 only, and admin commands taken away last', () => {
    const text = renderRedisConfig({
      ...base,
      users: [{ name: 'app', passwords: ['app-secret-1'], keys: ['app:*'], channels: ['news.*'], commands: ['+@read'] }],
    });
    const line = directive(text, 'user').find((l) => l.startsWith('app '))!;
    expect(line).toMatch(/^app "reset" "on" "#[0-9a-f]{64}" "~app:\*" "&news\.\*" "\+@read" "-@admin"$/);
    expect(text).not.toContain('app-secret-1');
  });

  it("writes the tenant's settings; its policy replaces the default", () => {
    const text = renderRedisConfig({
      ...base,
      settings: { 'maxmemory-policy': 'allkeys-lfu', timeout: '300', 'notify-keyspace-events': '' },
    });
    expect(directive(text, 'maxmemory-policy')).toEqual(['allkeys-lfu']);
    expect(directive(text, 'timeout')).toEqual(['"300"']);
    expect(directive(text, 'notify-keyspace-events')).toEqual(['""']);
  });
});
