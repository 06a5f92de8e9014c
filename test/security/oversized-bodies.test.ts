import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { type SocketReply, parseReply } from './helpers/raw-socket.js';

const BIG = 8 * 1024 * 1024;

interface Outcome {
  /** The answer, parsed once complete (status 0: none came). */
  readonly reply: SocketReply;
  /** Bytes of the body written before the server closed its side, or all of them. */
  readonly written: number;
  /** A socket error seen by the client (a reset, a broken pipe), if any. */
  readonly error: string | undefined;
  /** Whether the server closed the connection (FIN) once it had answered. */
  readonly closedByServer: boolean;
}

/**
 * Sends `head`, then `total` bytes of body in 64 KiB writes, without waiting for anything, as a
 * client that does not look at the answer before it is done sending; reads all the while.
 */
function sendBig(url: string, head: string, body: (offset: number, size: number) => Buffer, total: number): Promise<Outcome> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    // half-open: a FIN from the server does not end what this client sends (node's default would)
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    let buf = Buffer.alloc(0);
    let written = 0;
    let error: string | undefined;
    let closedByServer = false;
    socket.on('data', (c: Buffer) => (buf = Buffer.concat([buf, c])));
    // the server's FIN ends its answer, not the request: the body is sent on to its end
    socket.on('end', () => (closedByServer = true));
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () =>
      resolve({
        reply: parseReply(buf)?.reply ?? { status: 0, headers: {}, text: buf.toString('latin1'), json: undefined },
        written,
        error,
        closedByServer,
      }),
    );
    socket.once('connect', () => {
      socket.write(head);
      const pump = () => {
        while (written < total && !socket.destroyed) {
          const size = Math.min(64 * 1024, total - written);
          const ok = socket.write(body(written, size));
          written += size;
          if (!ok) return void socket.once('drain', pump);
        }
        socket.end();
      };
      pump();
    });
  });
}

/**
 * A body over the limit gets hangar's JSON 413 even while the client is still sending it: the
 * answer is written, hangar stops sending (FIN) and reads on until the client is done or a
 * short while has passed, then closes. The client reads the answer, never a reset before it.
 */
describe('a body over the limit, still being sent', () => {
  let th: TestHangar;
  let alice: Account;
  let token: string;

  beforeAll(async () => {
    th = await startTestHangar({ listen: true });
    alice = await th.signup();
    token = alice.auth && 'token' in alice.auth ? alice.auth.token : '';
    await alice.ready(redisBody('r'));
  });
  afterAll(() => th.close());

  const expect413 = (o: Outcome) => {
    expect(o.reply.status, `answer: ${o.reply.text.slice(0, 300)}; client error: ${o.error}`).toBe(413);
    expect(o.reply.headers['content-type']).toMatch(/^application\/json/);
    expect(o.reply.json).toEqual({ message: 'the request body is larger than 64 KiB', code: 'BODY_TOO_LARGE' });
    expect(o.reply.headers.connection).toBe('close');
    expect(o.closedByServer, 'hangar closes the connection after the answer').toBe(true);
    expect(o.error, 'no reset or broken pipe').toBeUndefined();
  };

  it('8 MiB with a Content-Length, sent at once: the JSON 413, then a clean close', async () => {
    const head = `POST /v2/instances/r/acls/ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: ${BIG}\r\n\r\n`;
    const prefix = Buffer.from('{"cidr_mask":"192.0.2.1","description":"');
    const o = await sendBig(
      th.url,
      head,
      (offset, size) => {
        const b = Buffer.alloc(size, 'x');
        if (offset === 0) prefix.copy(b);
        return b;
      },
      BIG,
    );
    expect413(o);
    expect(o.written).toBe(BIG);
  });

  it('8 MiB chunked (no Content-Length): the JSON 413 once 64 KiB are past, then a clean close', async () => {
    const head = `POST /v2/instances/r/acls/ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = (size: number) => Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 'x'), Buffer.from('\r\n')]);
    const o = await sendBig(
      th.url,
      head,
      (offset, size) => (offset + size >= BIG ? Buffer.concat([chunk(size), Buffer.from('0\r\n\r\n')]) : chunk(size)),
      BIG,
    );
    expect413(o);
  });

  it('nothing is recorded, and hangar serves on', async () => {
    const acls = await alice.get('/v2/instances/r/acls/');
    expect(acls.status).toBe(200);
    expect(acls.body.data).toEqual([]);
  });
});
