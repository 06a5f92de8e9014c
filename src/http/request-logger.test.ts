import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { RequestLogger } from './request-logger.js';

function sink(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

describe('RequestLogger', () => {
  it('makes its child only when the request logs, with the request id bound and the redaction kept', async () => {
    const { lines, stream } = sink();
    const parent = pino({ level: 'info', redact: { paths: ['password'], censor: '[redacted]' } }, stream);
    const child = vi.spyOn(parent, 'child');
    const log = new RequestLogger(parent, { request_id: 'req-1' }, {});
    expect(log.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
    log.warn({ password: 'hunter2', n: 1 }, 'something %s', 'odd');
    log.error('and again');
    expect(child).toHaveBeenCalledTimes(1);
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, request_id: 'req-1', password: '[redacted]', n: 1, msg: 'something odd' }),
      expect.objectContaining({ level: 50, request_id: 'req-1', msg: 'and again' }),
    ]);
    expect((log.child({ component: 'x' }) as pino.Logger).bindings()).toMatchObject({ request_id: 'req-1', component: 'x' });
  });

  it('a level given for the route applies', () => {
    const parent = pino({ level: 'info' }, sink().stream);
    const log = new RequestLogger(parent, { request_id: 'req-2' }, { level: 'debug' });
    expect(log.level).toBe('debug');
    log.info('made');
    expect(log.level).toBe('debug');
  });
});
