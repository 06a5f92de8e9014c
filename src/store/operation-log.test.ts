import { describe, expect, it } from 'vitest';
import type { Operation } from '../domain/operations.js';
import { finished, withStep } from './operation-log.js';

const op: Operation = {
  id: 'a'.repeat(24),
  kind: 'create',
  accountId: 'acc',
  instanceId: 'i',
  instanceName: 'n',
  state: 'RUNNING',
  steps: [
    { name: 'recorded', at: 100 },
    { name: 'started', at: 200 },
  ],
  progress: null,
  error: null,
  requestedBy: null,
  requestId: null,
  detail: {},
  targetVersion: null,
  cancellable: false,
  createdAt: 100,
  updatedAt: 200,
  startedAt: 200,
  finishedAt: null,
  deadlineAt: 10_000,
  lastEventId: null,
  rev: 2,
};

describe('the steps of an operation', () => {
  it('are appended with their time', () => {
    expect(withStep(op, { name: 'create:building' }, 300).steps.map((s) => [s.name, s.at])).toEqual([
      ['recorded', 100],
      ['started', 200],
      ['create:building', 300],
    ]);
  });

  it('stay in time order when a step taken earlier is written after a later one (a batch of a pass)', () => {
    const done = finished(op, 'SUCCEEDED', 400);
    const late = withStep(withStep(done, { name: 'create:primary-started' }, 250), { name: 'create:replica-started' }, 250);
    expect(late.steps.map((s) => [s.name, s.at])).toEqual([
      ['recorded', 100],
      ['started', 200],
      ['create:primary-started', 250],
      ['create:replica-started', 250],
      ['succeeded', 400],
    ]);
  });
});
