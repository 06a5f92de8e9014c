import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';

/** A target refused by the guard (the message says why). */
export class TargetRefused extends Error {
  override name = 'TargetRefused';
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` for each secret (the current one first). */
export function signature(secrets: readonly string[], timestamp: number, body: string): string {
  const signed = `${timestamp}.${body}`;
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${createHmac('sha256', s).update(signed).digest('hex')}`)].join(',');
}

/** The port a URL connects to. */
export function portOf(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/**
 * Every address `url`'s host names (itself when it is an IP), each checked by `check`: the first
 * refusal is thrown as TargetRefused. Used when a webhook is registered.
 */
export async function checkTarget(url: URL, check: (ip: string, port: number) => string | undefined): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookupAll(host, { all: true, verbatim: true })).map((a) => a.address);
  for (const ip of addresses) {
    const why = check(ip, portOf(url));
    if (why) throw new TargetRefused(why);
  }
}

export interface PostOptions {
  /** The whole attempt, connection included, within this. */
  readonly timeoutMs: number;
  /** Why an address may not be connected to (undefined: it may). Checked on the addresses actually connected to. */
  readonly check: (ip: string, port: number) => string | undefined;
  readonly signal?: AbortSignal;
}

/**
 * POSTs `body` to `url` and resolves with the answer's status (the body is read and dropped).
 * The host is resolved once and every address is checked before connecting, so that a name
 * that resolves elsewhere at connection time (DNS rebinding) cannot reach a refused address.
 * Redirects are not followed (a 3xx is an answer like any other).
 */
export function postWebhook(url: URL, body: string, headers: Record<string, string>, opts: PostOptions): Promise<{ status: number }> {
  const port = portOf(url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const why = opts.check(host, port);
    if (why) return Promise.reject(new TargetRefused(why));
  }
  const lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      const cb = callback as (err: Error | null, address: string | LookupAddress[], family?: number) => void;
      if (err) return cb(err, '', 4);
      const list = (addresses as LookupAddress[]).filter((a) => !options.family || a.family === options.family);
      for (const a of list) {
        const why = opts.check(a.address, port);
        if (why) return cb(new TargetRefused(why), '', 4);
      }
      if (list.length === 0) return cb(new Error(`${hostname} has no address`), '', 4);
      if ((options as { all?: boolean }).all) return cb(null, list);
      cb(null, list[0]!.address, list[0]!.family);
    });
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup,
        agent: false,
        ...(opts.signal ? { signal: opts.signal } : {}),
      },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0 });
        });
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
