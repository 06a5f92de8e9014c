import { describe, expect, it } from 'vitest';
import { matcher, parseCidr } from './cidr.js';

describe('parseCidr', () => {
  it.each([
    ['10.0.0.5', '10.0.0.5'],
    ['10.0.0.5/32', '10.0.0.5'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['192.168.1.0/24', '192.168.1.0/24'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8::1/128', '2001:db8::1'],
    ['2001:db8:1:2::5/64', '2001:db8:1:2::/64'],
    ['::', '::'],
    ['::ffff:1.2.3.4', '::ffff:102:304'],
    ['fe80:0:0:1:0:0:0:1', 'fe80:0:0:1::1'],
  ])('normalises %s to %s', (input, text) => {
    expect(parseCidr(input)?.text).toBe(text);
  });

  it.each([
    '',
    'abc',
    '10.0.0',
    '10.0.0.256',
    '10.0.0.1/33',
    '10.0.0.1/',
    '10.0.0.1/-1',
    '01.2.3.4x',
    '2001:db8::1/129',
    'fe80::1%eth0',
    '1.2.3.4/8/8',
    ' 1.2.3.4',
  ])('rejects %j', (input) => {
    expect(parseCidr(input)).toBeUndefined();
  });
});

describe('matcher', () => {
  it('admits addresses inside any range and nothing else', () => {
    const admits = matcher(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32']);
    expect(admits('10.200.3.4')).toBe(true);
    expect(admits('192.168.1.7')).toBe(true);
    expect(admits('::ffff:192.168.1.7')).toBe(true);
    expect(admits('192.168.1.8')).toBe(false);
    expect(admits('2001:db8:ffff::1')).toBe(true);
    expect(admits('2001:db9::1')).toBe(false);
    expect(matcher([])('127.0.0.1')).toBe(false);
  });
});
