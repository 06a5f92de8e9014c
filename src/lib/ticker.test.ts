import { describe, expect, it } from 'vitest';
import { Ticker } from './ticker.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Ticker', () => {
  it('runs the work every period, one run at a time, until stopped; stop waits for the run in progress', async () => {
    let runs = 0;
    let inFlight = 0;
    let most = 0;
    const t = new Ticker(
      async () => {
        runs++;
        most = Math.max(most, ++inFlight);
        await sleep(30);
        inFlight--;
      },
      5,
      () => {},
    );
    t.start();
    t.start(); // a second start is no second loop
    expect(t.started).toBe(true);
    await sleep(100);
    await t.stop();
    expect(t.started).toBe(false);
    expect(inFlight).toBe(0);
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(2);
    const after = runs;
    await sleep(30);
    expect(runs).toBe(after);
  });

  it('tick() runs now, or joins the run in progress; its errors go to its caller, those of timed runs to onError', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    let fail = false;
    const t = new Ticker(
      async () => {
        runs++;
        await sleep(20);
        if (fail) throw new Error('no store');
      },
      10,
      (err) => errors.push(err),
    );
    await Promise.all([t.tick(), t.tick()]);
    expect(runs).toBe(1);
    fail = true;
    await expect(t.tick()).rejects.toThrow('no store');
    t.start({ now: true });
    await sleep(15);
    await t.stop();
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect((errors[0] as Error).message).toBe('no store');
  });
});
