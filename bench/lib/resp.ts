import { connect, type Socket } from 'node:net';

export type Reply = string | number | null | Error | Reply[];

/** One command in the RESP protocol. */
export function encode(args: readonly (string | number)[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`;
}

/** Parses one reply at `pos`; undefined when the buffer does not hold all of it yet. */
function parse(buf: Buffer, pos: number): { value: Reply; next: number } | undefined {
  const end = buf.indexOf('\r\n', pos);
  if (end < 0) return undefined;
  const type = String.fromCharCode(buf[pos]!);
  const line = buf.toString('utf8', pos + 1, end);
  switch (type) {
    case '+':
      return { value: line, next: end + 2 };
    case '-':
      return { value: new Error(line), next: end + 2 };
    case ':':
      return { value: Number(line), next: end + 2 };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, next: end + 2 };
      if (buf.length < end + 2 + n + 2) return undefined;
      return { value: buf.toString('utf8', end + 2, end + 2 + n), next: end + 2 + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next: end + 2 };
      const items: Reply[] = [];
      let at = end + 2;
      for (let i = 0; i < n; i++) {
        const item = parse(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.next;
      }
      return { value: items, next: at };
    }
    default:
      throw new Error(`unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/** A small Redis client: commands are sent as given and answered in order. */
export class RespClient {
  private buf = Buffer.alloc(0);
  private readonly waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  private closed: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk) => {
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
      let at = 0;
      for (;;) {
        const r = parse(this.buf, at);
        if (!r) break;
        at = r.next;
        this.waiting.shift()?.resolve(r.value);
      }
      this.buf = this.buf.subarray(at);
    });
    const fail = (err: Error) => {
      this.closed ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static connect(port: number, opts: { host?: string; localAddress?: string; timeoutMs?: number } = {}): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: opts.host ?? '127.0.0.1', port, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect to ${port}: timeout`));
      }, opts.timeoutMs ?? 2000);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new RespClient(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Connects and authenticates (as `default` when no user is given). */
  static async open(port: number, password: string, user?: string): Promise<RespClient> {
    const c = await RespClient.connect(port);
    await c.call(...(user ? ['AUTH', user, password] : ['AUTH', password]));
    return c;
  }

  /** Sends one command; rejects on an error reply. */
  async call(...args: (string | number)[]): Promise<Reply> {
    const r = await this.send(args);
    if (r instanceof Error) throw r;
    return r;
  }

  send(args: readonly (string | number)[]): Promise<Reply> {
    if (this.closed) return Promise.reject(this.closed);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.socket.write(encode(args));
    });
  }

  /** `INFO <section>` as key/value pairs. */
  async info(section: string): Promise<Record<string, string>> {
    const text = String(await this.call('INFO', section));
    const out: Record<string, string> = {};
    for (const line of text.split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
    }
    return out;
  }

  close(): void {
    this.socket.destroy();
  }
}
