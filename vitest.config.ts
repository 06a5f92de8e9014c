import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

/**
 * The tests of a testbed of three nodes (`scripts/k8s-testbed up --nodes 3`): run by
 * `npm run test:k8s-nodes`, which names them; not part of `npm test` (CI's testbed has one node).
 */
const MULTI_NODE = ['test/kubernetes/nodes.test.ts', 'test/kubernetes/hangar-in-cluster.test.ts'];

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: process.env.HANGAR_TEST_K8S_NODES ? configDefaults.exclude : [...configDefaults.exclude, ...MULTI_NODE],
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
