import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first, as measured on a 2-core machine (seconds, in a
 * whole run: the order is what matters). Two files run at a time: started first, the long ones
 * run beside many short ones instead of
 * ending the run alone, whatever vitest's cache of earlier runs holds (a fresh clone has none).
 * Files not named here follow, in vitest's own order.
 */
export const SLOW_FILES: Readonly<Record<string, number>> = {
  // its suites (Redis and access: 619 s; Valkey's core: 85 s): one file, so that they never run beside each other
  'test/kubernetes/cluster.test.ts': 704,
  'test/e2e/kill-at-every-step.test.ts': 140,
  // five Elasticsearch and OpenSearch nodes one after another (a JVM each), and a failing one
  'test/e2e/elasticsearch-versions.test.ts': 130,
  'test/console/pages.test.ts': 126,
  // a real go build of FerretDB: 7-30 s with Go's build cache warm, 80 s or more cold
  'src/engines/ferretdb/ferretdb-install.test.ts': 90,
  'test/console/features.test.ts': 60,
  'test/cli/cli.test.ts': 49,
  // live FerretDB instances: create, users, restarts, backups and restores
  'test/e2e/ferretdb.test.ts': 30,
  'test/integration/webhooks.test.ts': 48,
  'test/integration/operations.test.ts': 43,
  'test/reliability/store-outage.test.ts': 42,
  'test/integration/event-stream.test.ts': 38,
  'test/integration/races.test.ts': 37,
  'test/console/backups.test.ts': 31,
  'test/console/instances.test.ts': 26,
  'test/integration/redis-sentinel-start.test.ts': 25,
  'test/security/fuzz-bodies.test.ts': 25,
  'test/console/operations.test.ts': 25,
  'test/e2e/replicas.test.ts': 24,
  'test/e2e/engine-user.test.ts': 24,
  // its engine cases run on Redis and on Valkey
  'test/e2e/access-day-two.test.ts': 40,
  'test/e2e/backups.test.ts': 36,
  'test/integration/backups.test.ts': 21,
  'test/integration/acl-day-two.test.ts': 21,
  'test/e2e/kill-at-user-steps.test.ts': 21,
  'test/e2e/operations.test.ts': 20,
  'test/integration/store.test.ts': 20,
};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const seconds = (f: TestSpecification) => SLOW_FILES[relative(f.project.config.root, f.moduleId)] ?? -1;
    // a stable sort: the files without a figure keep vitest's order, after the slow ones
    return [...rest].sort((a, b) => seconds(b) - seconds(a));
  }
}
