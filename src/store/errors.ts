/** True when a driver error is a unique-key violation (SQLite or PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when a driver error is a foreign-key violation: the row referred to is gone (SQLite or PostgreSQL). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300']);
const NET_UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

/**
 * Errors of node-postgres (the client and its pool) that carry no code: a connection ended while
 * in use, no connection within the pool's timeout, a connection opened whose server never
 * answered its startup within that timeout (`timeout expired`: a server stopped, not gone), a
 * query that timed out. Matched by their fixed message, the only thing they carry; every other
 * failure is told by its code.
 */
const PG_CLIENT_UNAVAILABLE =
  /^(Connection terminated|timeout exceeded when trying to connect|timeout expired$|Query read timeout|Client has encountered a connection error)/;

/** True when the store cannot be reached right now (the request may succeed later). */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === 'string') return PG_UNAVAILABLE.has(e.code) || NET_UNAVAILABLE.has(e.code);
  return typeof e.message === 'string' && PG_CLIENT_UNAVAILABLE.test(e.message);
}

/** The data dir or database holds no store of hangar (and the command may not make one). */
export class StoreMissingError extends Error {
  override name = 'StoreMissingError';
}
