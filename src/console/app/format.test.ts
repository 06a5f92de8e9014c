import { describe, expect, it } from 'vitest';
import { type EngineProduct, HangarApiError, type Instance, type Operation } from '../../client/index.js';
import {
  describeError,
  fieldMessage,
  describePolicy,
  filterInstances,
  formatBytes,
  formatDuration,
  formatPlan,
  formatUtc,
  newerOperation,
  offersCancel,
  operationFilterOf,
  operationFilterQuery,
  operationMatches,
  operationSummary,
  parseHumanBytes,
  planRefusal,
  plansHolding,
  policyBody,
  shortSha,
  sortInstances,
  stepLabel,
  tickLabels,
  upsertOperation,
} from './format.js';

const inst = (name: string, extra: Partial<Instance> = {}): Instance =>
  ({
    id: name,
    name,
    service: 'redis',
    type: 'redis_ha_instance',
    plan: 500,
    version: '7.0.15',
    zone: 'US-Dallas',
    created: '2026-11-21 09:00:00',
    api_key: 'k',
    caster: null,
    state: 'ACTIVE',
    ...extra,
  }) as Instance;

describe('console formatting', () => {
  it("reads Redis's used_memory_human", () => {
    expect(parseHumanBytes('900B')).toBe(900);
    expect(parseHumanBytes('1.50K')).toBe(1536);
    expect(parseHumanBytes('1.04M')).toBeCloseTo(1.04 * 1024 ** 2);
    expect(parseHumanBytes('2G')).toBe(2 * 1024 ** 3);
    expect(parseHumanBytes('lots')).toBeUndefined();
  });

  it('filters on every word, in any column, and by service', () => {
    const list = [inst('cache'), inst('docs', { service: 'mongodb', zone: 'US-West' }), inst('queue', { state: 'BUILDING' })];
    expect(filterInstances(list, 'us-west', '').map((i) => i.name)).toEqual(['docs']);
    expect(filterInstances(list, 'redis building', '').map((i) => i.name)).toEqual(['queue']);
    expect(filterInstances(list, '', 'redis').map((i) => i.name)).toEqual(['cache', 'queue']);
  });

  it('sorts numbers as numbers and names naturally, both ways', () => {
    const list = [inst('a10', { plan: 1000 }), inst('a9', { plan: 500 }), inst('b', { plan: 10000 })];
    expect(sortInstances(list, 'plan', 'desc').map((i) => i.plan)).toEqual([10000, 1000, 500]);
    expect(sortInstances(list, 'name', 'asc').map((i) => i.name)).toEqual(['a9', 'a10', 'b']);
  });

  it('says plans in the unit their product gives, one number style', () => {
    expect(formatPlan('MB', 100000)).toBe('100,000 MB');
    expect(formatPlan('GB', 5)).toBe('5 GB');
    expect(formatPlan(undefined, 500)).toBe('500');
  });

  it("says a refused field in the form's words", () => {
    const labels = { cidr_mask: 'Address or range', name: 'Name' };
    expect(fieldMessage('"cidr_mask" must be an IP address (a.b.c.d); got "10.x"', labels)).toBe(
      'Address or range must be an IP address (a.b.c.d); got "10.x"',
    );
    expect(fieldMessage('"acls[0].cidr_mask" must be an IP address', labels)).toBe('Address or range must be an IP address');
    expect(fieldMessage('an instance named "cache" already exists', labels)).toBe('An instance named "cache" already exists');
  });

  it("refuses the plans a zone has no room for, by the memory each plan promises (the server's rule)", () => {
    const redis = {
      plans: [
        { type: 'redis_ha_instance', plan: 500, promised_mb: 1000, memory_rule: '' },
        { type: 'redis_ha_instance', plan: 1000, promised_mb: 2000, memory_rule: '' },
        { type: 'redis_ha_instance', plan: 2500, promised_mb: 5000, memory_rule: '' },
      ],
    } as unknown as EngineProduct;
    expect(planRefusal(redis, 'redis_ha_instance', 500, 1000)).toBeUndefined();
    expect(planRefusal(redis, 'redis_ha_instance', 1000, 1000)).toBe('needs 2,000 MB, the zone has 1,000 MB free');
    expect(planRefusal(redis, 'redis_ha_instance', 2500, null)).toBeUndefined();
    // a resize needs only what it adds
    expect(planRefusal(redis, 'redis_ha_instance', 1000, 1000, 500)).toBeUndefined();
    expect(planRefusal(redis, 'redis_ha_instance', 2500, 1000, 500)).toBe('needs 4,000 MB more, the zone has 1,000 MB free');
  });

  it("says a chart's times on a 24-hour clock, in UTC", () => {
    const t = Date.UTC(2026, 11, 7, 22, 5, 0) / 1000;
    expect(tickLabels([t, t + 60])).toEqual(['22:05', '22:06']);
    expect(tickLabels([t + 10, t + 40])).toEqual(['22:05:10', '22:05:40']);
  });

  it('says what happened and what to do for each kind of failure', () => {
    expect(describeError(new HangarApiError(0, 'NETWORK_ERROR', 'x')).remedy).toMatch(/hangar is running/);
    expect(describeError(new HangarApiError(400, 'INVALID_VALUE', 'bad plan', { field: 'plan', allowed: [500, 1000] }))).toMatchObject({
      what: 'bad plan',
      field: 'plan',
      remedy: 'Choose one of: 500, 1000.',
    });
    expect(describeError(new HangarApiError(409, 'OPERATION_IN_PROGRESS', 'busy')).remedy).toMatch(/ACTIVE/);
    expect(describeError(new HangarApiError(429, 'RATE_LIMITED', 'slow down', { retryAfterSeconds: 7 })).remedy).toBe(
      'Wait 7 seconds and try again.',
    );
    expect(describeError(new HangarApiError(500, 'INTERNAL', 'oops', { requestId: 'r-1' }))).toMatchObject({
      requestId: 'r-1',
      remedy: expect.stringContaining('r-1'),
    });
    expect(describeError(new Error('boom')).remedy).toMatch(/Reload/);
  });

  it('says an operation that cannot be cancelled carries on', () => {
    expect(describeError(new HangarApiError(409, 'OPERATION_NOT_CANCELLABLE', 'its build has started')).remedy).toMatch(/carries on/);
  });
});

const T0 = 1795251600000;
const op = (id: string, extra: Partial<Operation> = {}): Operation =>
  ({
    id,
    kind: 'create',
    state: 'RUNNING',
    instance_id: 'i1',
    instance_name: 'cache',
    account_id: 'a',
    steps: [{ name: 'recorded', at: { $date: T0 } }],
    progress: null,
    error: null,
    requested_by: null,
    request_id: null,
    detail: { service: 'redis', plan: 500, zone: 'US-Dallas' },
    cancellable: false,
    created: '2026-11-21 09:00:00',
    date_created: { $date: T0 },
    date_updated: { $date: T0 },
    date_started: null,
    date_finished: null,
    deadline: { $date: T0 + 300_000 },
    last_event_id: 1,
    ...extra,
  }) as Operation;

describe('console operations', () => {
  it('keeps the newer record of an operation, by its latest event then its update time', () => {
    const a = op('x', { last_event_id: 5, state: 'RUNNING' });
    const b = op('x', { last_event_id: 7, state: 'SUCCEEDED' });
    expect(newerOperation(a, b)).toBe(b);
    expect(newerOperation(b, a)).toBe(b);
    const c = op('x', { last_event_id: 7, date_updated: { $date: T0 + 5 } });
    expect(newerOperation(b, c)).toBe(c);
  });

  it('upserts into a newest-first list: replaces older records, inserts new ones only when asked, in order', () => {
    const list = [op('b', { date_created: { $date: T0 + 10 } }), op('a')];
    const updated = upsertOperation(list, op('a', { state: 'SUCCEEDED', last_event_id: 9 }), false);
    expect(updated.map((o) => [o.id, o.state])).toEqual([
      ['b', 'RUNNING'],
      ['a', 'SUCCEEDED'],
    ]);
    // a stale record changes nothing
    expect(upsertOperation(updated, op('a', { last_event_id: 2 }), true)).toBe(updated);
    expect(upsertOperation(list, op('c', { date_created: { $date: T0 + 20 } }), false)).toBe(list);
    expect(upsertOperation(list, op('c', { date_created: { $date: T0 + 20 } }), true).map((o) => o.id)).toEqual(['c', 'b', 'a']);
    expect(upsertOperation(list, op('0', { date_created: { $date: T0 + 10 } }), true).map((o) => o.id)).toEqual(['b', '0', 'a']);
  });

  it('reads filters from the URL and writes them back; matches operations against them', () => {
    const f = operationFilterOf(new URLSearchParams('instance=cache&state=PENDING,RUNNING&kind=create'));
    expect(f).toEqual({ instance: 'cache', state: 'PENDING,RUNNING', kind: 'create' });
    expect(operationFilterQuery(f)).toBe('?instance=cache&state=PENDING%2CRUNNING&kind=create');
    expect(operationFilterQuery({ instance: '', state: '', kind: '' })).toBe('');
    expect(operationMatches(op('a'), f)).toBe(true);
    expect(operationMatches(op('a', { instance_name: 'other', instance_id: 'i2' }), f)).toBe(false);
    expect(operationMatches(op('a', { instance_name: 'other' }), { ...f, instance: 'i1' })).toBe(true);
    expect(operationMatches(op('a', { state: 'SUCCEEDED' }), f)).toBe(false);
    expect(operationMatches(op('a', { kind: 'resize' }), f)).toBe(false);
  });

  it('offers Cancel for an open cancellable operation and an open create only', () => {
    expect(offersCancel(op('a'))).toBe(true);
    expect(offersCancel(op('a', { state: 'SUCCEEDED' }))).toBe(false);
    expect(offersCancel(op('a', { kind: 'resize' }))).toBe(false);
    expect(offersCancel(op('a', { kind: 'backup', cancellable: true, state: 'PENDING' }))).toBe(true);
  });

  it('says steps, times and what an operation changes as a person reads them', () => {
    expect(stepLabel('create:primary-started')).toBe('Primary started');
    expect(stepLabel('state:ACTIVE')).toBe('Instance ACTIVE');
    expect(stepLabel('recorded')).toBe('Recorded');
    expect(formatUtc(T0)).toBe('2026-11-21 09:00:00');
    expect(formatDuration(340)).toBe('340 ms');
    expect(formatDuration(4200)).toBe('4.2 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
    expect(operationSummary(op('a'), 'MB')).toBe('redis 500 MB in US-Dallas');
    expect(operationSummary(op('a', { kind: 'resize', detail: { from_plan: 500, to_plan: 1000 } }), 'MB')).toBe('500 MB → 1,000 MB');
    expect(operationSummary(op('a', { kind: 'rename', detail: { from: 'cache', to: 'sessions' } }))).toBe('cache → sessions');
    expect(operationSummary(op('a', { kind: 'user.update', detail: { username: 'app', database: 'shop' } }))).toBe('app on shop');
    expect(operationSummary(op('a', { kind: 'backup', detail: { backup_id: 'b1', scheduled: false } }))).toBe('on demand');
    expect(operationSummary(op('a', { kind: 'backup', detail: { backup_id: 'b1', scheduled: true } }))).toBe('scheduled');
    expect(operationSummary(op('a', { kind: 'restore', detail: { backup_id: 'b1', in_place: true } }))).toBe('backup b1 in place');
    expect(operationSummary(op('a', { kind: 'restore', detail: { backup_id: 'b1', in_place: false } }))).toBe(
      'backup b1 into a new instance',
    );
    expect(operationSummary(op('a', { kind: 'acl.add', detail: {} }))).toBe('');
  });

  it('says sizes, hashes and the plans a backup fits in', () => {
    expect(formatBytes(900)).toBe('900 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(104_857_600)).toBe('100 MB');
    expect(formatBytes(5 * 1024 ** 4)).toBe('5.0 TB');
    expect(shortSha('2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae')).toBe('2c26b46b68ff');
    expect(shortSha(null)).toBe('—');
    // 600 MB used: the 500 MB plan cannot hold it
    expect(plansHolding('MB', [500, 1000, 2500], 600 * 1024 ** 2)).toEqual([1000, 2500]);
    expect(plansHolding('MB', [500, 1000], null)).toEqual([500, 1000]);
    expect(plansHolding('GB', [5, 10], 6 * 1024 ** 3)).toEqual([10]);
  });

  it('describes a backup policy and builds its body from the form, what was typed left for the API to judge', () => {
    expect(describePolicy({ schedule: 'daily', daily_at: '03:00', every_hours: null, keep_last: 7, keep_days: 30 })).toBe(
      'Daily at 03:00 UTC; keeping the last 7 and those of the last 30 days',
    );
    expect(describePolicy({ schedule: 'every', daily_at: null, every_hours: 1, keep_last: null, keep_days: null })).toBe(
      'Every 1 hour; every backup kept',
    );
    expect(describePolicy({ schedule: 'off', daily_at: null, every_hours: null, keep_last: null, keep_days: 1 })).toBe(
      'No scheduled backups; keeping those of the last 1 day',
    );
    const form = { schedule: 'every', every_hours: ' 6 ', daily_at: '03:00', keep_last: '', keep_days: '2' };
    expect(policyBody(form)).toEqual({ schedule: 'every', every_hours: 6, keep_last: null, keep_days: 2 });
    expect(policyBody({ ...form, schedule: 'daily' })).toEqual({ schedule: 'daily', daily_at: '03:00', keep_last: null, keep_days: 2 });
    expect(policyBody({ ...form, schedule: 'off', keep_last: 'x' })).toEqual({ schedule: 'off', keep_last: 'x', keep_days: 2 });
    // an empty interval is left out: the API's 400 names it
    expect(policyBody({ ...form, every_hours: '' })).toEqual({ schedule: 'every', keep_last: null, keep_days: 2 });
    expect(policyBody({ ...form, every_hours: '1.5' }).every_hours).toBe(1.5);
  });
});
