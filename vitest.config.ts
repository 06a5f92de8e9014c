import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests start real servers and engines on free ports; two cores are shared between files.
    maxWorkers: 2,
    // the longest files first (test/sequencer.ts), so that none of them ends the run alone
    sequence: { sequencer: SlowFirstSequencer },
  },
});
