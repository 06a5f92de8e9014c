import { type Agent, request } from 'node:http';

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

export interface SendOptions {
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Source address of the connection (any of 127.0.0.0/8 reaches a loopback server). */
  localAddress?: string;
  agent?: Agent;
}

/** Sends `method path` to the server of `baseUrl` with the path exactly as given. */
export function sendRequest(baseUrl: string, method: string, path: string, opts: SendOptions = {}): Promise<RawReply> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method,
        headers,
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
        ...(opts.agent ? { agent: opts.agent } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * One HTTP request with exactly the headers and body given (fetch would add a Content-Type to a
 * string body): to send what real clients send, byte for byte.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawReply> {
  const url = new URL(path, baseUrl);
  return sendRequest(baseUrl, method, url.pathname + url.search, opts);
}
