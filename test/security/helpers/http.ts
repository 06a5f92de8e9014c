import { type Agent, request } from 'node:http';

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface HttpOptions {
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Source address of the connection (any of 127.0.0.0/8 reaches a loopback server). */
  localAddress?: string;
  agent?: Agent;
  /** HTTP Basic credentials. */
  basic?: [string, string];
}

/** One request through node's http client, with the source address and headers given. */
export function httpRequest(baseUrl: string, method: string, path: string, opts: HttpOptions = {}): Promise<HttpReply> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(opts.basic.join(':')).toString('base64')}`;
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname, port: url.port, path, method, headers,
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
