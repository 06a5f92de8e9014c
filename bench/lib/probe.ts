import { connect } from 'node:net';
import { encode } from './resp.js';

export type ProbeOutcome = 'admitted' | 'refused';

/**
 * What a client from `localAddress` gets at `port`: `admitted` when AUTH and PING are answered,
 * `refused` when the connection is refused, reset or closed before an answer (how the edge turns
 * a source away). Anything else (a wrong password, no answer) rejects.
 */
export function probe(port: number, password: string, localAddress: string, timeoutMs = 1000): Promise<ProbeOutcome> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let received = '';
    let settled = false;
    const done = (fn: () => void) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      fn();
    };
    socket.setNoDelay(true);
    socket.setTimeout(timeoutMs, () =>
      done(() => reject(new Error(`probe of ${port} from ${localAddress}: no answer within ${timeoutMs} ms`))),
    );
    socket.on('connect', () => socket.write(encode(['AUTH', password]) + encode(['PING'])));
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      if (received.startsWith('-')) return done(() => reject(new Error(`probe of ${port}: ${received.trim()}`)));
      if (received.includes('+PONG\r\n')) done(() => resolve('admitted'));
    });
    socket.on('error', () => done(() => resolve('refused')));
    socket.on('close', () => done(() => resolve('refused')));
  });
}

/** Whether anything accepts a TCP connection on 127.0.0.1:`port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
