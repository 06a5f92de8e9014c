import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Controller, PassCancelled, type PassResult } from './controller.js';

const log = pino({ level: 'silent' });

/** A pass that ends when the test says so. */
interface Gate {
  readonly id: string;
  readonly signal: AbortSignal;
  end(result?: PassResult): void;
  fail(err: Error): void;
}

/**
 * A controller whose passes wait for the test: records every pass started, and how many passes
 * of one key ran at once.
 */
function harness(workers = 4) {
  const started: Gate[] = [];
  const running = new Map<string, number>();
  let maxPerKey = 0;
  const controller = new Controller(
    (id, signal) =>
      new Promise<PassResult>((resolve, reject) => {
        const n = (running.get(id) ?? 0) + 1;
        running.set(id, n);
        maxPerKey = Math.max(maxPerKey, n);
        const done = () => running.set(id, running.get(id)! - 1);
        started.push({
          id,
          signal,
          end: (r) => {
            done();
            resolve(r);
          },
          fail: (e) => {
            done();
            reject(e);
          },
        });
      }),
    { workers, log },
  );
  return {
    controller,
    started,
    passesOf: (id: string) => started.filter((g) => g.id === id),
    last: (id: string) => started.filter((g) => g.id === id).at(-1)!,
    maxPerKey: () => maxPerKey,
  };
}

/** Lets every pending promise callback and zero-delay timer run. */
const settleDown = () => vi.advanceTimersByTimeAsync(0);

describe('Controller', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('coalesces requests for a key that is queued: one pass', async () => {
    const h = harness(1);
    h.controller.start();
    h.controller.enqueue('busy');
    for (let i = 0; i < 5; i++) h.controller.enqueue('a');
    await settleDown();
    expect(h.started.map((g) => g.id)).toEqual(['busy']);
    expect(h.controller.depth).toBe(1);
    h.last('busy').end();
    await settleDown();
    expect(h.started.map((g) => g.id)).toEqual(['busy', 'a']);
    h.last('a').end();
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(1);
  });

  it('runs one pass per key at a time; requests during a pass make exactly one more pass after it', async () => {
    const h = harness(4);
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    for (let i = 0; i < 3; i++) h.controller.enqueue('a');
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(1);
    h.last('a').end();
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(2);
    h.last('a').end();
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(2);
    expect(h.maxPerKey()).toBe(1);
  });

  it('a pass found pending in the store while one runs makes no pass after it; one not running is queued once', async () => {
    const h = harness(4);
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    h.controller.enqueueUnlessRunning('a');
    h.last('a').end();
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(1);
    h.controller.enqueueUnlessRunning('a');
    h.controller.enqueueUnlessRunning('a');
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(2);
    h.last('a').end();
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(2);
  });

  it('passes background requests (periodic sweeps) only after every requested one, and moves one ahead when it is requested', async () => {
    const h = harness(1);
    h.controller.start();
    h.controller.enqueue('busy');
    for (const id of ['s1', 's2', 's3']) h.controller.enqueueBackground(id);
    h.controller.enqueue('create');
    h.controller.enqueue('s3');
    h.controller.enqueueBackground('create');
    await settleDown();
    expect(h.controller.depth).toBe(4);
    for (const id of ['busy', 'create', 's3', 's1', 's2']) {
      expect(h.started.at(-1)!.id).toBe(id);
      h.last(id).end();
      await settleDown();
    }
    expect(h.started.map((g) => g.id)).toEqual(['busy', 'create', 's3', 's1', 's2']);
    expect(h.controller.depth).toBe(0);
  });

  it('runs different keys at once, up to the number of workers', async () => {
    const h = harness(2);
    h.controller.start();
    for (const id of ['a', 'b', 'c']) h.controller.enqueue(id);
    await settleDown();
    expect(h.started.map((g) => g.id)).toEqual(['a', 'b']);
    h.last('b').end();
    await settleDown();
    expect(h.started.map((g) => g.id)).toEqual(['a', 'b', 'c']);
  });

  it('retries a failed pass with exponential backoff, and forgets the failures after a success', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    const expectRetryAfter = async (ms: number) => {
      const before = h.passesOf('a').length;
      await vi.advanceTimersByTimeAsync(ms - 1);
      expect(h.passesOf('a')).toHaveLength(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.passesOf('a')).toHaveLength(before + 1);
    };
    h.last('a').fail(new Error('engine down'));
    await expectRetryAfter(200);
    h.last('a').fail(new Error('engine down'));
    await expectRetryAfter(400);
    h.last('a').fail(new Error('engine down'));
    await expectRetryAfter(800);
    h.last('a').end();
    await settleDown();
    h.controller.enqueue('a');
    await settleDown();
    h.last('a').fail(new Error('engine down again'));
    await expectRetryAfter(200);
  });

  it('caps the backoff at 30 s', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    for (let i = 0; i < 12; i++) {
      h.last('a').fail(new Error('down'));
      await vi.advanceTimersByTimeAsync(30_000);
    }
    const before = h.passesOf('a').length;
    h.last('a').fail(new Error('down'));
    await vi.advanceTimersByTimeAsync(29_999);
    expect(h.passesOf('a')).toHaveLength(before);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.passesOf('a')).toHaveLength(before + 1);
  });

  it('runs a pass again after the delay it asks for, without counting a failure', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    h.last('a').end({ requeueAfterMs: 1000 });
    await vi.advanceTimersByTimeAsync(999);
    expect(h.passesOf('a')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.passesOf('a')).toHaveLength(2);
    h.last('a').fail(new Error('down'));
    await vi.advanceTimersByTimeAsync(200);
    expect(h.passesOf('a')).toHaveLength(3);
  });

  it('a request now does not wait for a scheduled retry', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    h.last('a').end({ requeueAfterMs: 10_000 });
    await settleDown();
    h.controller.enqueue('a');
    await settleDown();
    expect(h.passesOf('a')).toHaveLength(2);
    h.last('a').end();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.passesOf('a')).toHaveLength(2);
  });

  it('does not retry a cancelled pass', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    h.last('a').fail(new PassCancelled('cancelled'));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.passesOf('a')).toHaveLength(1);
  });

  describe('settle', () => {
    it('resolves when a pass that started after the call has ended, not before', async () => {
      const h = harness();
      h.controller.start();
      let settled = false;
      void h.controller.settle('a', 60_000).then(() => (settled = true));
      h.controller.enqueue('a');
      await settleDown();
      expect(settled).toBe(false);
      h.last('a').end();
      await settleDown();
      expect(settled).toBe(true);
    });

    it('is not settled by the pass that was already running, but by the one after it', async () => {
      const h = harness();
      h.controller.start();
      h.controller.enqueue('a');
      await settleDown();
      let settled = false;
      void h.controller.settle('a', 60_000).then(() => (settled = true));
      h.controller.enqueue('a');
      h.passesOf('a')[0]!.end();
      await settleDown();
      expect(settled).toBe(false);
      expect(h.passesOf('a')).toHaveLength(2);
      h.last('a').end();
      await settleDown();
      expect(settled).toBe(true);
    });

    it('gives up after its timeout', async () => {
      const h = harness();
      h.controller.start();
      let settled = false;
      void h.controller.settle('a', 2000).then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(1999);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(settled).toBe(true);
    });

    it('resolves at once when the controller is not running', async () => {
      const h = harness();
      let settled = false;
      void h.controller.settle('a', 60_000).then(() => (settled = true));
      await settleDown();
      expect(settled).toBe(true);
    });
  });

  it('stop cancels running passes, waits for them, resolves waiters, and takes no more work', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    let settled = false;
    void h.controller.settle('b', 60_000).then(() => (settled = true));
    const gate = h.last('a');
    gate.signal.addEventListener('abort', () => gate.fail(new PassCancelled('stopping')));
    let stopped = false;
    void h.controller.stop(8000).then(() => (stopped = true));
    await settleDown();
    expect(gate.signal.aborted).toBe(true);
    expect(stopped).toBe(true);
    expect(settled).toBe(true);
    expect(h.controller.isRunning).toBe(false);
    h.controller.enqueue('c');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.started.map((g) => g.id)).toEqual(['a']);
  });

  it('stop gives up waiting for a pass that ignores cancellation after its timeout', async () => {
    const h = harness();
    h.controller.start();
    h.controller.enqueue('a');
    await settleDown();
    let stopped = false;
    void h.controller.stop(8000).then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(7999);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(stopped).toBe(true);
  });
});
