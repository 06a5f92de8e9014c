export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds from a high-resolution clock. */
export const now = (): number => performance.now();

/** Polls `check` every `everyMs` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 2,
): Promise<T> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    if (everyMs > 0) await sleep(everyMs);
  }
}
