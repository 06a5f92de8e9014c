import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/lib/metrics.js';
import { TerminalError } from '../../src/domain/errors.js';
import { redisBody } from '../helpers/bodies.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';

/** The samples of a Prometheus text exposition: `name{labels}` -> value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** `name{a="1",b="2"}` with the labels in the order prom-client writes them. */
const series = (name: string, labels: Record<string, string> = {}) => {
  const l = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return l.length > 0 ? `${name}{${l.join(',')}}` : name;
};

describe('/metrics', () => {
  let th: TestHangar;
  let alice: Account;

  const scrape = async () => {
    const res = await fetch(`${th.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parse(await res.text());
  };
  const value = (m: Map<string, number>, name: string, labels: Record<string, string> = {}) => m.get(series(name, labels)) ?? 0;
  const instances = (m: Map<string, number>, state: string) => value(m, 'hangar_instances', { service: 'redis', state });
  const passes = (m: Map<string, number>, kind: string, outcome = 'ok') =>
    value(m, 'hangar_reconcile_duration_seconds_count', { kind, outcome });

  beforeAll(async () => {
    // One worker, so that passes queue up behind a held one.
    th = await startTestHangar({ listen: true, env: { HANGAR_WORKERS: '1' } });
    alice = await th.signup();
  });
  afterAll(() => th?.close());

  it('is served without credentials, outside /v2, with the process metrics', async () => {
    const m = await scrape();
    expect(value(m, 'hangar_runtime_owner')).toBe(1);
    expect(m.has('process_cpu_user_seconds_total')).toBe(true);
    expect((await fetch(`${th.url}/v2/metrics`)).status).toBe(404);
  });

  it('moves as instances are created, changed and deleted', async () => {
    const before = await scrape();
    expect(instances(before, 'ACTIVE')).toBe(0);

    // Held builds: the first pass runs (BUILDING), the next two wait in the queue.
    const release = th.hold();
    try {
      for (const name of ['a', 'b', 'c']) expect((await alice.post('/v2/instances/', redisBody(name))).status).toBe(200);
      await alice.waitFor('a', (r) => r?.state === 'BUILDING');
      const held = await scrape();
      expect(value(held, 'hangar_reconcile_queue_depth')).toBe(2);
      expect(instances(held, 'BUILDING')).toBe(1);
      expect(instances(held, 'REQUESTED')).toBe(2);
      expect(value(held, 'hangar_http_requests_total', { method: 'POST', route: '/v2/instances/', status: '200' })).toBe(3);
      expect(value(held, 'hangar_http_request_duration_seconds_count', { method: 'POST', route: '/v2/instances/', status: '200' })).toBe(3);
    } finally {
      release();
    }
    for (const name of ['a', 'b', 'c']) await alice.waitFor(name, (r) => r?.state === 'ACTIVE');

    const built = await scrape();
    expect(instances(built, 'ACTIVE')).toBe(3);
    expect(instances(built, 'BUILDING') + instances(built, 'REQUESTED')).toBe(0);
    expect(value(built, 'hangar_reconcile_queue_depth')).toBe(0);
    expect(passes(built, 'create')).toBeGreaterThanOrEqual(3);
    expect(value(built, 'hangar_engine_processes_up')).toBe(3);
    expect(value(built, 'hangar_engine_processes_expected')).toBe(3);

    expect((await alice.post('/v2/redis/a/resize/', { new_plan: 1000 })).status).toBe(200);
    await alice.waitFor('a', (r) => r?.state === 'ACTIVE' && r.plan === 1000);
    expect((await alice.post('/v2/instances/b/acls/', { cidr_mask: '198.51.100.1', description: 'x' })).status).toBe(200);
    const changed = await scrape();
    expect(passes(changed, 'resize')).toBeGreaterThan(passes(built, 'resize'));
    expect(passes(changed, 'access')).toBeGreaterThan(passes(built, 'access'));

    for (const name of ['a', 'b']) expect((await alice.delete(`/v2/instances/${name}/`)).status).toBe(200);
    for (const name of ['a', 'b']) await alice.waitGone(name);
    const deleted = await scrape();
    expect(instances(deleted, 'ACTIVE')).toBe(1);
    expect(instances(deleted, 'DELETING')).toBe(0);
    expect(passes(deleted, 'delete')).toBeGreaterThanOrEqual(2);
    expect(value(deleted, 'hangar_engine_processes_up')).toBe(1);
    expect(value(deleted, 'hangar_http_requests_total', { method: 'DELETE', route: '/v2/instances/:instance_name/', status: '200' })).toBe(
      2,
    );
  });

  it('counts failures: error statuses by route, unknown routes, and builds that fail', async () => {
    const notFound = (m: Map<string, number>) =>
      value(m, 'hangar_http_requests_total', { method: 'GET', route: '/v2/instances/:instance_name/', status: '404' });
    const unmatched = (m: Map<string, number>) =>
      value(m, 'hangar_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' });
    const before = await scrape();
    await alice.get('/v2/instances/nope/');
    await alice.get('/v2/no-such-thing');
    const restore = th.runtime.failWith(new TerminalError('disk full'));
    try {
      await alice.post('/v2/instances/', redisBody('doomed'));
      await alice.waitFor('doomed', (r) => r?.state === 'FAILED');
    } finally {
      restore();
    }
    const m = await scrape();
    expect(notFound(m) - notFound(before)).toBe(1);
    expect(unmatched(m) - unmatched(before)).toBe(1);
    expect(passes(m, 'create', 'failed')).toBe(1);
    expect(instances(m, 'FAILED')).toBe(1);
  });

  it('counts the statements sent to the store, requests and its own reads alike', async () => {
    const statements = async () => value(await scrape(), 'hangar_store_statements_total');
    const a = await statements();
    const b = await statements();
    // a scrape reads the store itself (instances by state, zones): the counter moves with it
    expect(b).toBeGreaterThan(a);
    for (let i = 0; i < 50; i++) expect((await alice.get('/v2/instances/')).status).toBe(200);
    const c = await statements();
    // each list reads the store at least once; the reconciler and the scrape only add to that
    // (how much varies with the moment: it is not subtracted)
    expect(c - b).toBeGreaterThanOrEqual(50);
  });

  it('has a registry per hangar: two hangars in one process count apart', async () => {
    const other = await startTestHangar({ listen: true });
    try {
      await fetch(`${other.url}/v2/instances/`);
      await fetch(`${other.url}/v2/instances/`);
      const mine = value(await scrape(), 'hangar_http_requests_total', { method: 'GET', route: '/v2/instances/', status: '401' });
      const theirs = parse(await (await fetch(`${other.url}/metrics`)).text());
      expect(value(theirs, 'hangar_http_requests_total', { method: 'GET', route: '/v2/instances/', status: '401' })).toBe(2);
      expect(mine).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('edge and engine series', () => {
  it('report what the runtime counts, per instance, read at scrape time (a fake runtime: the emulated one has no edge)', async () => {
    let edge = [{ instanceId: 'i1', admitted: 5, refused: 2 }];
    let owner = true;
    const m = new Metrics();
    m.watch({
      queueDepth: () => 0,
      isOwner: () => owner,
      instanceCounts: async () => [],
      zones: async () => [],
      states: ['ACTIVE'],
      runtimeStats: async () => ({ processesUp: 1, processesExpected: 2, edge }),
    });
    let s = parse((await m.render()).body);
    expect(s.get('hangar_edge_connections_total{instance_id="i1",outcome="admitted"}')).toBe(5);
    expect(s.get('hangar_edge_connections_total{instance_id="i1",outcome="refused"}')).toBe(2);
    expect(s.get('hangar_engine_processes_up')).toBe(1);
    expect(s.get('hangar_engine_processes_expected')).toBe(2);
    edge = [{ instanceId: 'i1', admitted: 9, refused: 2 }];
    s = parse((await m.render()).body);
    expect(s.get('hangar_edge_connections_total{instance_id="i1",outcome="admitted"}')).toBe(9);
    // A replica that does not own the runtime counts nothing there (the owner does), so sums add up.
    owner = false;
    s = parse((await m.render()).body);
    expect([...s.keys()].some((k) => k.startsWith('hangar_edge_'))).toBe(false);
    expect(s.get('hangar_engine_processes_up')).toBe(0);
    expect(s.get('hangar_engine_processes_expected')).toBe(0);
  });
});
