import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first, as measured on a 2-core machine (seconds, a busy one: the order is what matters). Two
 * files run at a time: started first, the long ones run beside many short ones instead of
 * ending the run alone, whatever vitest's cache of earlier runs holds (a fresh clone has none).
 * Files not named here follow, in vitest's own order.
 */
export const SLOW_FILES: Readonly<Record<string, number>> = {
  'test/kubernetes/redis-on-kubernetes.test.ts': 298,
  'test/e2e/kill-at-every-step.test.ts': 284,
  'test/integration/races.test.ts': 108,
  'test/cli/cli.test.ts': 85,
  'test/integration/webhooks.test.ts': 77,
  'test/console/pages.test.ts': 73,
  'test/integration/crash-recovery.test.ts': 68,
  'test/cli/doctor.test.ts': 63,
  'test/console/backups.test.ts': 60,
  'test/integration/operations.test.ts': 56,
  'test/integration/event-stream.test.ts': 49,
  'test/e2e/kill-at-user-steps.test.ts': 46,
  'test/integration/http-conventions.test.ts': 46,
  'test/e2e/replicas.test.ts': 43,
  'test/e2e/sigterm.test.ts': 42,
  'test/integration/backups.test.ts': 42,
  'test/kubernetes/access-on-kubernetes.test.ts': 42,
  'test/integration/redis-day-two.test.ts': 41,
  'test/security/fuzz-http.test.ts': 41,
  'test/e2e/backups.test.ts': 39,
  'test/reliability/store-outage.test.ts': 38,
  'test/console/operations.test.ts': 36,
  'test/integration/isolation.test.ts': 35,
  'test/e2e/access-day-two.test.ts': 30,
};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const seconds = (f: TestSpecification) => SLOW_FILES[relative(f.project.config.root, f.moduleId)] ?? -1;
    // a stable sort: the files without a figure keep vitest's order, after the slow ones
    return [...rest].sort((a, b) => seconds(b) - seconds(a));
  }
}
