import { type RawReply, type SendOptions, sendRequest } from '../../helpers/raw-http.js';

export type HttpReply = RawReply;

export interface HttpOptions extends SendOptions {
  /** HTTP Basic credentials. */
  basic?: [string, string];
}

/** One request through node's http client, with the source address and headers given. */
export function httpRequest(baseUrl: string, method: string, path: string, opts: HttpOptions = {}): Promise<HttpReply> {
  const { basic, ...rest } = opts;
  const headers: Record<string, string> = { ...opts.headers };
  if (basic) headers.authorization = `Basic ${Buffer.from(basic.join(':')).toString('base64')}`;
  return sendRequest(baseUrl, method, path, { ...rest, headers });
}
