import { describe, expect, it } from 'vitest';
import { bytesToHuman, parseInfo } from './redis-format.js';

describe('bytesToHuman', () => {
  it('formats like redis', () => {
    expect(bytesToHuman(1023)).toBe('1023B');
    expect(bytesToHuman(1024)).toBe('1.00K');
    expect(bytesToHuman(866_400)).toBe('846.09K');
    expect(bytesToHuman(500 * 1024 * 1024)).toBe('500.00M');
    expect(bytesToHuman(3 * 1024 ** 3)).toBe('3.00G');
  });
});

describe('parseInfo', () => {
  it('reads key/value lines and skips headers', () => {
    expect(parseInfo('# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=1\r\n')).toEqual({
      role: 'master',
      connected_slaves: '1',
      slave0: 'ip=127.0.0.1,port=1',
    });
  });
});
