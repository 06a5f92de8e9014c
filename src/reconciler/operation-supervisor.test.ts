import { describe, expect, it } from 'vitest';
import type { Operation } from '../domain/operations.js';
import type { InstanceStatus } from '../store/instance-repository.js';
import { verdict } from './operation-supervisor.js';

const T0 = 1_800_000_000_000;
const op = (over: Partial<Operation>): Operation => ({
  id: 'op',
  kind: 'acl.add',
  accountId: 'acc',
  instanceId: 'inst',
  instanceName: 'cache',
  state: 'PENDING',
  steps: [{ name: 'recorded', at: T0 }],
  progress: null,
  error: null,
  requestedBy: null,
  requestId: null,
  detail: {},
  targetVersion: 2,
  cancellable: false,
  createdAt: T0,
  updatedAt: T0,
  startedAt: null,
  finishedAt: null,
  deadlineAt: T0 + 60_000,
  lastEventId: null,
  rev: 1,
  ...over,
});
const inst = (over: Partial<InstanceStatus>): InstanceStatus => ({
  id: 'inst',
  name: 'cache',
  state: 'ACTIVE',
  stateReason: null,
  deleting: false,
  specVersion: 2,
  observedVersion: 2,
  plan: 500,
  desiredPlan: 500,
  ...over,
});

describe('the verdict on an instance operation, from its instance', () => {
  it('carried out: SUCCEEDED; one still PENDING (judged before its pass wrote its start) is given its start too', () => {
    const pending = op({});
    const done = verdict(pending, inst({}))!(pending, T0 + 10)!;
    expect(done).toMatchObject({ state: 'SUCCEEDED', startedAt: T0 + 10, finishedAt: T0 + 10, progress: 100 });
    expect(done.steps.map((s) => s.name)).toEqual(['recorded', 'started', 'succeeded']);

    const running = op({
      state: 'RUNNING',
      startedAt: T0 + 1,
      steps: [
        { name: 'recorded', at: T0 },
        { name: 'started', at: T0 + 1 },
      ],
    });
    const finished = verdict(running, inst({}))!(running, T0 + 10)!;
    expect(finished).toMatchObject({ state: 'SUCCEEDED', startedAt: T0 + 1 });
    expect(finished.steps.map((s) => s.name)).toEqual(['recorded', 'started', 'succeeded']);
  });

  it('not carried out yet: still PENDING, with the state of its instance; the instance deleted first: CANCELLED, with no start', () => {
    const pending = op({});
    const waiting = verdict(pending, inst({ observedVersion: 1 }))!(pending, T0 + 10)!;
    expect(waiting.state).toBe('PENDING');
    expect(waiting.steps.map((s) => s.name)).toEqual(['recorded', 'state:ACTIVE']);
    const cancelled = verdict(pending, inst({ deleting: true }))!(pending, T0 + 10)!;
    expect(cancelled.state).toBe('CANCELLED');
    expect(cancelled.steps.map((s) => s.name)).toEqual(['recorded', 'cancelled']);
  });
});
