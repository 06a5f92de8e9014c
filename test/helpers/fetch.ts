import { request } from 'node:http';

/** What the tests' clients send. */
export interface TestRequest {
  readonly method: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/**
 * `fetch` for the tests' clients of hangar, clear of the kept-alive connection race (the server
 * closes an idle connection just as the client reuses it). A GET or HEAD whose connection failed
 * before any answer is sent again, up to 3 times, as hangar's typed client does. A change is never
 * sent twice: it goes over a connection of its own instead, so that it never meets the race. (A
 * test that blocks its event loop, with spawnSync say, keeps the client from retiring an idle
 * connection before the server closes it.)
 */
export async function fetchClearOfStaleConnections(url: string, init: TestRequest): Promise<Response> {
  if (init.method !== 'GET' && init.method !== 'HEAD') return sendOnItsOwnConnection(url, init);
  for (let retries = 3; ; retries--) {
    try {
      return await fetch(url, init);
    } catch (err) {
      if (retries === 0) throw err;
    }
  }
}

/** Node's header record (a value, a list of values, or none) as fetch Headers. */
export function toHeaders(record: Readonly<Record<string, string | number | readonly string[] | undefined>>): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(record)) {
    if (value !== undefined) for (const v of [value].flat()) out.append(name, String(v));
  }
  return out;
}

/** One request over a new connection (`agent: false`), answered as a fetch Response. */
function sendOnItsOwnConnection(url: string, init: TestRequest): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method, headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve(
          new Response(body.length > 0 ? body : null, {
            status: res.statusCode ?? 0,
            statusText: res.statusMessage,
            headers: toHeaders(res.headers),
          }),
        );
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}
