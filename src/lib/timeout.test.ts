import { describe, expect, it } from 'vitest';
import { withTimeout } from './timeout.js';

const answerIn = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));

describe('withTimeout', () => {
  it('answers what the work answers in time', async () => {
    expect(await withTimeout(answerIn(5, 'PONG'), 1000, 'PING')).toBe('PONG');
    await expect(withTimeout(Promise.reject(new Error('refused')), 1000, 'PING')).rejects.toThrow('refused');
  });

  it('rejects naming the work when it is late, or with the error given', async () => {
    await expect(withTimeout(answerIn(200, 'late'), 10, 'connecting to the engine on port 1')).rejects.toThrow(
      'connecting to the engine on port 1: no answer within 10 ms',
    );
    class KubeError extends Error {}
    await expect(
      withTimeout(answerIn(200, 'late'), 10, () => new KubeError('discovery: the API server did not answer')),
    ).rejects.toBeInstanceOf(KubeError);
  });
});
