import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly event: any;
  readonly delivery: string;
  /** When it arrived (this process's clock). */
  readonly at: number;
}

/** How the receiver answers a request: a status, or `hang` (never answer). */
export type Answer = number | 'hang';

/**
 * A webhook receiver started by the test: an HTTP server on 127.0.0.1 that records every request
 * and answers as `answer` says (200 by default).
 */
export class Receiver {
  readonly received: Received[] = [];
  answer: (r: Received, attempt: number) => Answer = () => 200;
  private readonly attempts = new Map<string, number>();
  private readonly hanging = new Set<() => void>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<Receiver> {
    let self: Receiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let event: any;
        try {
          event = JSON.parse(body);
        } catch {
          event = undefined;
        }
        const r: Received = { headers: req.headers, body, event, delivery: String(req.headers['x-hangar-delivery']), at: Date.now() };
        self!.received.push(r);
        const n = (self!.attempts.get(r.delivery) ?? 0) + 1;
        self!.attempts.set(r.delivery, n);
        const a = self!.answer(r, n);
        if (a === 'hang') {
          const release = () => res.destroy();
          self!.hanging.add(release);
          res.on('close', () => self!.hanging.delete(release));
          return;
        }
        res.writeHead(a, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Receiver(server);
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Requests in flight that it does not answer. */
  get open(): number {
    return this.hanging.size;
  }

  /** The distinct deliveries received, by delivery id. */
  deliveries(): Map<string, Received[]> {
    const out = new Map<string, Received[]>();
    for (const r of this.received) out.set(r.delivery, [...(out.get(r.delivery) ?? []), r]);
    return out;
  }

  async until(what: string, predicate: (received: Received[]) => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!predicate(this.received)) {
      if (Date.now() > end)
        throw new Error(
          `receiver: no ${what} within ${ms} ms; got ${JSON.stringify(this.received.map((r) => [r.event?.id, r.event?.kind]))}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    for (const release of this.hanging) release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
