import { request } from 'node:http';

/**
 * `fetch` for the tests' clients of hangar. A GET whose connection failed before any answer (a
 * kept-alive connection the server closed, idle, just as it was reused) is sent again, up to 3
 * times, as hangar's typed client does. A change is never sent twice: it goes over a connection
 * of its own instead, so that it never meets that race. (A test that blocks its event loop, with
 * spawnSync say, keeps the client from retiring an idle connection before the server closes it.)
 */
export async function fetchRetryingReads(
  url: string,
  init: { readonly method: string; readonly headers?: Record<string, string>; readonly body?: string },
): Promise<Response> {
  if (init.method !== 'GET' && init.method !== 'HEAD') return sendOnItsOwnConnection(url, init);
  for (let retries = 3; ; retries--) {
    try {
      return await fetch(url, init);
    } catch (err) {
      if (retries === 0) throw err;
    }
  }
}

/** One request over a new connection (`agent: false`), answered as a fetch Response. */
function sendOnItsOwnConnection(url: string, init: { readonly method: string; readonly headers?: Record<string, string>; readonly body?: string }): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method, headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
        }
        const body = Buffer.concat(chunks);
        resolve(new Response(body.length > 0 ? body : null, { status: res.statusCode ?? 0, statusText: res.statusMessage, headers }));
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}
