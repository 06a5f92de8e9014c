/**
 * `fetch` as hangar's typed client sends: a GET whose connection failed before any answer (a
 * kept-alive connection the server closed, idle, just as it was reused) is sent again, up to 3
 * times; a change is never sent twice.
 */
export async function fetchRetryingReads(url: string, init: RequestInit & { readonly method: string }): Promise<Response> {
  for (let retries = init.method === 'GET' ? 3 : 0; ; retries--) {
    try {
      return await fetch(url, init);
    } catch (err) {
      if (retries === 0) throw err;
    }
  }
}
