import type { ApiProblem, Instance } from './types.js';

/**
 * Every failure of the client: an error answer of the API (`status` is its HTTP status and
 * `code` its stable code, e.g. INSTANCE_NOT_FOUND), or, with `status` 0, a failure without an
 * answer: NETWORK_ERROR, TIMEOUT (a request), WAIT_TIMEOUT and INSTANCE_FAILED (a wait).
 */
export class HangarApiError extends Error {
  override name = 'HangarApiError';
  /** The field at fault (400). */
  readonly field: string | undefined;
  /** The values that field accepts (400). */
  readonly allowed: readonly (string | number)[] | undefined;
  /** Every problem of the request (400), the first being this error's own message, code and field: fix them all at once. */
  readonly errors: readonly ApiProblem[] | undefined;
  /** X-Request-Id of the answer: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds to wait before trying again (429). */
  readonly retryAfterSeconds: number | undefined;
  /** The instance as last seen, for wait failures. */
  readonly instance: Instance | undefined;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    extra: {
      field?: string;
      allowed?: readonly (string | number)[];
      errors?: readonly ApiProblem[];
      requestId?: string;
      retryAfterSeconds?: number;
      instance?: Instance;
      cause?: unknown;
    } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.field = extra.field;
    this.allowed = extra.allowed;
    this.errors = extra.errors;
    this.requestId = extra.requestId;
    this.retryAfterSeconds = extra.retryAfterSeconds;
    this.instance = extra.instance;
  }
}
