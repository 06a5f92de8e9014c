import { describe, expect, it } from 'vitest';
import { classifyAddress, refusal } from './ssrf-guard.js';

describe('classifyAddress', () => {
  it.each([
    ['93.184.215.14', 'public'],
    ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.10', 'private'],
    ['100.64.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['203.0.113.5', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['not-an-ip', 'reserved'],
  ])('%s is %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });
});

describe('refusal', () => {
  const local = new Set(['127.0.0.1', '::1', '0.0.0.0', '::', '192.0.2.10']);
  const policy = (allowPrivate: boolean) => ({ allowPrivate, isOwnPort: (p: number) => p === 8080 || (p >= 20000 && p <= 29999) });

  it('allows a public address, refuses others unless private targets are allowed', () => {
    expect(refusal('93.184.215.14', 443, policy(false), local)).toBeUndefined();
    expect(refusal('10.0.0.7', 443, policy(false), local)).toMatch(/private address; .*HANGAR_WEBHOOK_ALLOW_PRIVATE=true/);
    expect(refusal('127.0.0.1', 9000, policy(false), local)).toMatch(/loopback/);
    expect(refusal('127.0.0.1', 9000, policy(true), local)).toBeUndefined();
    expect(refusal('10.0.0.7', 443, policy(true), local)).toBeUndefined();
  });

  it("always refuses cloud metadata and hangar's own listeners on this host's addresses", () => {
    expect(refusal('169.254.169.254', 80, policy(true), local)).toMatch(/metadata/);
    expect(refusal('127.0.0.1', 8080, policy(true), local)).toMatch(/hangar's own listeners/);
    expect(refusal('::ffff:127.0.0.1', 20001, policy(true), local)).toMatch(/hangar's own listeners/);
    expect(refusal('192.0.2.10', 8080, policy(true), local)).toMatch(/hangar's own listeners/);
    // the same port elsewhere is someone else's
    expect(refusal('10.0.0.7', 8080, policy(true), local)).toBeUndefined();
    expect(refusal('0.0.0.0', 9000, policy(true), local)).toMatch(/unspecified/);
  });
});
