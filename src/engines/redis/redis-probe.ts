import { connect } from 'node:net';
import type { ProbeTarget } from '../../domain/units.js';

/** One command in the RESP protocol. */
function resp(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/**
 * What a client sees: connects to `target` (the edge) from its source address, authenticates
 * with the instance password and sends PING. Resolves on PONG; rejects with what went wrong
 * (refused, closed by the edge, a wrong password, no answer).
 */
export function probeRedis(target: ProbeTarget, password: string, timeoutMs = 1000): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port, localAddress: target.localAddress });
    let received = '';
    const fail = (message: string) => {
      socket.destroy();
      reject(new Error(`probe of ${target.host}:${target.port} from ${target.localAddress}: ${message}`));
    };
    socket.setTimeout(timeoutMs, () => fail(`no answer within ${timeoutMs} ms`));
    socket.on('connect', () => socket.write(resp(['AUTH', password]) + resp(['PING'])));
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      const replies = received.split('\r\n').filter(Boolean);
      const error = replies.find((r) => r.startsWith('-'));
      if (error) return fail(error.slice(1));
      if (replies.length >= 2) {
        socket.destroy();
        if (replies[0] === '+OK' && replies[1] === '+PONG') resolve();
        else reject(new Error(`probe of ${target.host}:${target.port}: unexpected answer ${JSON.stringify(received)}`));
      }
    });
    socket.on('error', (err) => fail(err.message));
    socket.on('close', () => fail('connection closed before an answer (refused by the edge?)'));
  });
}
