import { request } from 'node:http';

/** Where to ask: a host and port, optionally from a given source address (hangar's probe source, through the edge). */
export interface HealthTarget {
  readonly host: string;
  readonly port: number;
  readonly localAddress?: string;
}

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/**
 * `GET /_cluster/health` on a node: resolves with the cluster's status (`green`, `yellow`, `red`);
 * rejects with what went wrong (refused or closed by the edge, an HTTP error such as a refused
 * login, no answer).
 */
export function clusterHealth(target: HealthTarget, credentials: Credentials | undefined, timeoutMs = 2000): Promise<string> {
  const where = `${target.host}:${target.port}${target.localAddress ? ` from ${target.localAddress}` : ''}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        ...(target.localAddress ? { localAddress: target.localAddress } : {}),
        path: '/_cluster/health',
        method: 'GET',
        headers: {
          accept: 'application/json',
          ...(credentials
            ? { authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` }
            : {}),
        },
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`health of ${where}: HTTP ${res.statusCode} ${body.slice(0, 200)}`));
          try {
            const status = (JSON.parse(body) as { status?: unknown }).status;
            if (typeof status !== 'string') throw new Error('no status');
            resolve(status);
          } catch {
            reject(new Error(`health of ${where}: unexpected answer ${body.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => reject(new Error(`health of ${where}: ${err.message}`)));
    req.end();
  });
}

/** What a cluster status means for clients: undefined when it serves (green; yellow, as a single node's replicas never assign). */
export function healthProblem(status: string): string | undefined {
  return status === 'green' || status === 'yellow' ? undefined : `the cluster health is ${status}`;
}
