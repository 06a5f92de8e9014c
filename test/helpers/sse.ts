import { request } from 'node:http';

/** One message of an event stream, as read off the wire. */
export interface Message {
  id?: number;
  event?: string;
  data?: any;
}

/**
 * A raw reader of `GET /v2/events/stream` over node:http (independent of hangar's client): it
 * collects every message and lets a test wait for what it expects.
 */
export class SseReader {
  readonly messages: Message[] = [];
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  /** The raw text received, comments included. */
  text = '';
  private ended = false;
  private destroy: () => void = () => {};

  private constructor() {}

  /** Connects; resolves once the headers arrived (the stream is established then). */
  static open(url: string, headers: Record<string, string>): Promise<SseReader> {
    const r = new SseReader();
    return new Promise((resolve, reject) => {
      const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        r.status = res.statusCode ?? 0;
        r.headers = res.headers;
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          r.text += chunk;
          buffer += chunk;
          for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, i);
            buffer = buffer.slice(i + 2);
            const m: Message = {};
            const data: string[] = [];
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const k = line.indexOf(':');
              const field = k < 0 ? line : line.slice(0, k);
              const value = k < 0 ? '' : line.slice(k + 1).replace(/^ /, '');
              if (field === 'id') m.id = Number(value);
              if (field === 'event') m.event = value;
              if (field === 'data') data.push(value);
            }
            if (data.length > 0) m.data = JSON.parse(data.join('\n'));
            if (m.event !== undefined || m.data !== undefined) r.messages.push(m);
          }
        });
        res.on('end', () => (r.ended = true));
        res.on('error', () => (r.ended = true));
        resolve(r);
      });
      r.destroy = () => req.destroy();
      req.on('error', (err) => {
        if (r.status === 0) reject(err);
        else r.ended = true;
      });
      req.end();
    });
  }

  /** Events (messages with an id), in the order received. */
  get events(): Message[] {
    return this.messages.filter((m) => m.id !== undefined);
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Waits until `predicate` holds of the messages received (or fails after `ms`). */
  async until(what: string, predicate: (messages: Message[]) => boolean, ms = 15_000): Promise<void> {
    const end = Date.now() + ms;
    while (!predicate(this.messages)) {
      if (Date.now() > end)
        throw new Error(`no ${what} within ${ms} ms; received: ${JSON.stringify(this.messages.map((m) => [m.id, m.event]))}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.destroy();
  }
}
