import autocannon from 'autocannon';

/** What a load run measured. */
export interface HttpLoad {
  readonly reqPerSec: number;
  /** Latency percentiles, in ms. */
  readonly p50: number;
  readonly p99: number;
  readonly total: number;
  readonly non2xx: number;
  readonly errors: number;
}

export interface HttpLoadOptions {
  readonly url: string;
  readonly connections: number;
  /** Seconds; ignored when `amount` is set. */
  readonly durationS?: number;
  /** Requests to send, then stop. */
  readonly amount?: number;
  readonly headers?: Record<string, string>;
  readonly method?: 'GET' | 'POST';
  /** Builds each request's body (for creates with unique names). */
  readonly body?: () => string;
}

/** Drives the URL with autocannon (in this process, apart from the server under test). */
export async function httpLoad(o: HttpLoadOptions): Promise<HttpLoad> {
  const makeBody = o.body;
  const options: autocannon.Options = {
    url: o.url,
    connections: o.connections,
    ...(o.amount !== undefined ? { amount: o.amount } : { duration: o.durationS ?? 5 }),
    headers: o.headers ?? {},
    ...(o.method ? { method: o.method } : {}),
    ...(makeBody
      ? { requests: [{ method: o.method ?? 'POST', setupRequest: (req: autocannon.Request) => ({ ...req, body: makeBody() }) }] }
      : {}),
  };
  // autocannon finishes a run of `amount` requests at its next one-second tick after the last
  // answer, and says the duration up to then: the rate is taken to the last answer instead.
  const started = performance.now();
  let lastAnswer = started;
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(options, (err: unknown, result) => (err ? reject(err) : resolve(result)));
    run.on('response', () => {
      lastAnswer = performance.now();
    });
  });
  if (r.errors > 0 && r.requests.total === 0) throw new Error(`${o.url}: every request failed (${r.errors} errors)`);
  const seconds = o.amount !== undefined ? (lastAnswer - started) / 1000 : r.duration;
  return {
    reqPerSec: r.requests.total / seconds,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}
