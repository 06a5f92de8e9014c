/**
 * `work`, or a rejection when it has not settled within `ms`: with `new Error("<what>: no answer
 * within <ms> ms")` when `onTimeout` is a text, or with the error `onTimeout()` makes. The timer
 * is cleared either way, so a finished call leaves nothing behind. The work itself is not
 * cancelled: a caller that gives up on it closes what it runs on (a client, a socket).
 */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: string | (() => Error)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(typeof onTimeout === 'string' ? new Error(`${onTimeout}: no answer within ${ms} ms`) : onTimeout()),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
