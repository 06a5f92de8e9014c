import { describe, expect, it } from 'vitest';
import { RENEW_BEFORE_DAYS, SERVER_VALID_DAYS, mustRenew, validUntil } from './tls.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-12-08T09:00:00Z');
const CA = 'AA:BB';
const cert = {
  names: ['192.0.2.10', 'db.example.test'],
  caFingerprint256: CA,
  notBefore: NOW - 60_000,
  notAfter: NOW + SERVER_VALID_DAYS * DAY,
};
const wanted = { names: ['192.0.2.10', 'db.example.test'], caFingerprint256: CA };

describe('mustRenew', () => {
  it('a certificate is made when there is none', () => {
    expect(mustRenew(undefined, wanted, NOW)).toBe(true);
  });

  it('a fresh certificate for the same names from the same CA is kept, whatever the order and case of its names', () => {
    expect(mustRenew(cert, wanted, NOW)).toBe(false);
    expect(mustRenew(cert, { ...wanted, names: ['DB.example.test', '192.0.2.10'] }, NOW)).toBe(false);
  });

  it(`is renewed within ${RENEW_BEFORE_DAYS} days of its end, not a day before`, () => {
    const end = cert.notAfter;
    expect(mustRenew(cert, wanted, end - (RENEW_BEFORE_DAYS + 1) * DAY)).toBe(false);
    expect(mustRenew(cert, wanted, end - RENEW_BEFORE_DAYS * DAY)).toBe(true);
    expect(mustRenew(cert, wanted, end - DAY)).toBe(true);
    expect(mustRenew(cert, wanted, end + DAY)).toBe(true);
  });

  it('is renewed when clients reach the instance by another name, or another CA signs now', () => {
    expect(mustRenew(cert, { ...wanted, names: ['192.0.2.11', 'db.example.test'] }, NOW)).toBe(true);
    expect(mustRenew(cert, { ...wanted, names: ['192.0.2.10'] }, NOW)).toBe(true);
    expect(mustRenew(cert, { ...wanted, caFingerprint256: 'CC:DD' }, NOW)).toBe(true);
  });

  it('is renewed when it is not valid yet (the clock moved back)', () => {
    expect(mustRenew({ ...cert, notBefore: NOW + DAY }, wanted, NOW)).toBe(true);
  });
});

describe('validUntil', () => {
  it('ends `days` from now, or with the CA when it ends first', () => {
    expect(validUntil(NOW, 397, NOW + 1000 * DAY)).toBe(NOW + 397 * DAY);
    expect(validUntil(NOW, 397, NOW + 100 * DAY)).toBe(NOW + 100 * DAY);
  });
});
