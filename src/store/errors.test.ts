import { describe, expect, it } from 'vitest';
import { isStoreUnavailable } from './errors.js';

describe('a store error that means the store cannot be reached now (503), and one that does not', () => {
  it("node-postgres's errors without a code, by their message", () => {
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      // the server accepted the connection but never answered its startup (a stopped server)
      'timeout expired',
      'Query read timeout',
      'Client has encountered a connection error and is not queryable',
    ]) {
      expect(isStoreUnavailable(new Error(message)), message).toBe(true);
    }
  });

  it('by code: PostgreSQL shutting down or refusing connections, the network, SQLite busy', () => {
    for (const code of ['57P01', '08006', '53300', 'ECONNREFUSED', 'ECONNRESET', 'SQLITE_BUSY']) {
      expect(isStoreUnavailable(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
  });

  it('anything else is not: a bug, a constraint, an error that only mentions a timeout', () => {
    expect(isStoreUnavailable(new Error('Cannot read properties of undefined'))).toBe(false);
    expect(isStoreUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(isStoreUnavailable(new Error('timeout expired while hashing'))).toBe(false);
    expect(isStoreUnavailable(null)).toBe(false);
  });
});
