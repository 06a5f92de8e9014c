import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first, as measured on a 2-core machine (seconds). Two
 * files run at a time: started first, the long ones run beside many short ones instead of
 * ending the run alone, whatever vitest's cache of earlier runs holds (a fresh clone has none).
 * Files not named here follow, in vitest's own order.
 */
export const SLOW_FILES: Readonly<Record<string, number>> = {};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const seconds = (f: TestSpecification) => SLOW_FILES[relative(f.project.config.root, f.moduleId)] ?? -1;
    // a stable sort: the files without a figure keep vitest's order, after the slow ones
    return [...rest].sort((a, b) => seconds(b) - seconds(a));
  }
}
