import { connect, type Socket } from 'node:net';

export interface SocketReply {
  /** 0 when the server closed the connection without an answer. */
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The body as latin1 text (bytes as they came). */
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: any;
}

/** Parses one HTTP/1.1 answer from `buf`; undefined while it is incomplete. */
export function parseReply(buf: Buffer, bodyless = false): { reply: SocketReply; rest: Buffer } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = bodyless ? 0 : Number(headers['content-length'] ?? 0);
  if (buf.length < end + 4 + length) return undefined;
  const body = buf.subarray(end + 4, end + 4 + length);
  const text = body.toString('latin1');
  let json: unknown;
  try {
    json = length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
  } catch {
    json = undefined;
  }
  return { reply: { status, headers, text, json }, rest: buf.subarray(end + 4 + length) };
}

/**
 * Writes `request` (exact bytes) on a new connection and reads one answer: resolves once it is
 * complete, or when the server closes the connection (status 0 if nothing came).
 */
export function sendRaw(baseUrl: string, request: string | Buffer, opts: { bodyless?: boolean } = {}): Promise<SocketReply> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (reply: SocketReply) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(reply);
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const parsed = parseReply(buf, opts.bodyless);
      if (parsed) finish(parsed.reply);
    });
    socket.on('close', () =>
      finish(parseReply(buf, opts.bodyless)?.reply ?? { status: 0, headers: {}, text: buf.toString('latin1'), json: undefined }),
    );
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE')
        finish({ status: 0, headers: {}, text: buf.toString('latin1'), json: undefined });
      else if (!done) reject(err);
    });
    socket.write(typeof request === 'string' ? Buffer.from(request, 'latin1') : request);
  });
}

/** A connection kept open to send a request slowly; `closed` resolves with what the server said. */
export interface SlowConnection {
  readonly socket: Socket;
  /** Resolves when the server has closed the connection, with its answer if it sent one. */
  readonly closed: Promise<SocketReply>;
  /** Sends `bytes` one byte every `everyMs` until done or the connection is closed. */
  trickle(bytes: string, everyMs: number): void;
  isOpen(): boolean;
  destroy(): void;
}

export function openSlow(baseUrl: string, opts: { localAddress?: string } = {}): Promise<SlowConnection> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({
      port: Number(url.port),
      host: url.hostname,
      ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
    });
    let buf = Buffer.alloc(0);
    let open = true;
    const timers: NodeJS.Timeout[] = [];
    socket.on('data', (c: Buffer) => (buf = Buffer.concat([buf, c])));
    socket.on('error', () => {});
    const closed = new Promise<SocketReply>((res) =>
      socket.on('close', () => {
        open = false;
        for (const t of timers) clearInterval(t);
        res(parseReply(buf)?.reply ?? { status: 0, headers: {}, text: buf.toString('latin1'), json: undefined });
      }),
    );
    socket.once('connect', () =>
      resolve({
        socket,
        closed,
        isOpen: () => open,
        destroy: () => socket.destroy(),
        trickle(bytes, everyMs) {
          let i = 0;
          const timer = setInterval(() => {
            if (!open || i >= bytes.length) return clearInterval(timer);
            socket.write(bytes[i++]!);
          }, everyMs);
          timers.push(timer);
        },
      }),
    );
    socket.once('error', reject);
  });
}
