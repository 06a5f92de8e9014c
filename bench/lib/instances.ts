import { REDIS_VERSION, type Api } from './hangar.js';
import { now, sleep } from './time.js';

/** The fields of an instance record the benchmark reads. */
export interface RedisRecord {
  readonly id: string;
  readonly name: string;
  readonly state: string;
  readonly plan: number;
  readonly password: string;
  readonly connect_string: string;
  readonly servicenet_connect_string: string;
  /** rediss://host:port, where the instance serves TLS (its default, `preferred`). */
  readonly tls_connect_string?: string;
  readonly state_reason?: string;
}

export const createBody = (name: string, plan = 500) => ({
  name,
  plan,
  service: 'redis',
  type: 'redis_ha_instance',
  version: REDIS_VERSION,
  zone: 'US-Dallas',
});

/** The port of a `redis://host:port` connection string. */
export const portOf = (connectString: string): number => Number(new URL(connectString).port);

/** Records the create; returns the creation record. */
export async function requestRedis(api: Api, name: string, plan = 500): Promise<RedisRecord> {
  const r = await api.ok<{ data: RedisRecord }>('POST', '/v2/instances/', createBody(name, plan));
  return r.body.data;
}

/**
 * Polls the account's list every `everyMs` until each named instance is in `state`; resolves
 * with the time (performance.now) at which each was first seen so. A FAILED instance throws,
 * unless `tolerateFailed`: then it is returned among `failed`.
 */
export async function waitAll(
  api: Api,
  names: readonly string[],
  state: string,
  timeoutMs: number,
  everyMs = 10,
  opts: { tolerateFailed?: boolean } = {},
): Promise<Map<string, number> & { failed: string[] }> {
  const seen = Object.assign(new Map<string, number>(), { failed: [] as string[] });
  const done = () => seen.size + seen.failed.length >= names.length;
  const deadline = now() + timeoutMs;
  while (!done()) {
    const r = await api.ok<{ data: RedisRecord[] }>('GET', '/v2/instances/');
    const at = now();
    const byName = new Map(r.body.data.map((i) => [i.name, i]));
    for (const name of names) {
      const rec = byName.get(name);
      if (rec?.state === 'FAILED' && !seen.failed.includes(name)) {
        if (!opts.tolerateFailed) throw new Error(`instance ${name} FAILED: ${rec.state_reason ?? ''}`);
        seen.failed.push(name);
      }
      if (rec?.state === state && !seen.has(name)) seen.set(name, at);
    }
    if (done()) break;
    if (now() > deadline) throw new Error(`${names.length - seen.size} of ${names.length} instances not ${state} after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
  return seen;
}

/** Polls one instance every `everyMs` until it is in `state`; resolves with the time it was seen so. */
export async function waitOne(api: Api, name: string, state: string, timeoutMs: number, everyMs = 5): Promise<number> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const r = await api.get<{ data: RedisRecord }>(`/v2/instances/${name}/`);
    const at = now();
    if (r.status === 200 && r.body.data.state === state) return at;
    if (r.status === 200 && r.body.data.state === 'FAILED') throw new Error(`instance ${name} FAILED: ${r.body.data.state_reason ?? ''}`);
    if (now() > deadline) throw new Error(`instance ${name} not ${state} after ${timeoutMs} ms: ${JSON.stringify(r.body)}`);
    await sleep(everyMs);
  }
}

/** Creates instances, `concurrency` requests at a time, and waits until all are ACTIVE. */
export async function createActive(
  api: Api,
  names: readonly string[],
  opts: { concurrency?: number; timeoutMs?: number } = {},
): Promise<RedisRecord[]> {
  const queue = [...names];
  const records: RedisRecord[] = [];
  await Promise.all(
    Array.from({ length: Math.min(opts.concurrency ?? 10, names.length) }, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) records.push(await requestRedis(api, name));
    }),
  );
  await waitAll(api, names, 'ACTIVE', opts.timeoutMs ?? 120_000, 100);
  const list = (await api.ok<{ data: RedisRecord[] }>('GET', '/v2/instances/')).body.data;
  const wanted = new Set(names);
  return list.filter((i) => wanted.has(i.name));
}

/** Admits `cidr` at the instance's edge listeners. */
export async function addAcl(api: Api, name: string, cidr: string): Promise<string> {
  const r = await api.ok<{ data: string }>('POST', `/v2/instances/${name}/acls/`, { cidr_mask: cidr, description: 'bench' });
  return r.body.data;
}

/** Deletes the instances (those that exist) and waits until the API no longer lists them. */
export async function deleteAll(api: Api, names: readonly string[], timeoutMs = 60_000): Promise<void> {
  await Promise.all(names.map((n) => api.delete(`/v2/instances/${n}/`)));
  const deadline = now() + timeoutMs;
  const wanted = new Set(names);
  for (;;) {
    const list = (await api.ok<{ data: RedisRecord[] }>('GET', '/v2/instances/')).body.data;
    if (!list.some((i) => wanted.has(i.name))) return;
    if (now() > deadline) throw new Error(`instances not deleted after ${timeoutMs} ms`);
    await sleep(50);
  }
}
