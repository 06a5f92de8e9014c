import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    // a test's own waits (a pass, an engine start, a page's badge) go up to 30 s on a busy machine:
    // the test as a whole may take twice that before it counts as hung
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests start real servers and engines on free ports; two cores are shared between files.
    maxWorkers: 2,
    // Cases of a `concurrent` file (the kill-at-every-step ones start a hangar and engines each)
    // run three at a time: five at once beside the Kubernetes file on a busy 2-core machine left
    // a hangar's start waiting its turn for the CPU past the start bound.
    maxConcurrency: 3,
    // the longest files first (test/sequencer.ts), so that none of them ends the run alone
    sequence: { sequencer: SlowFirstSequencer },
  },
});
