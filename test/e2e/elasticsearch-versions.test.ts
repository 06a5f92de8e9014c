import { copyFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable } from './helpers/hangar-process.js';
import { processesUnder } from './helpers/processes.js';

/**
 * Elasticsearch and OpenSearch on real nodes, each version the distribution Maven Central
 * publishes, installed by `hangar engines install` into the engine cache, run by hangar as root
 * (so the nodes run as the engine user) on the local runtime: 2.4.6, 5.6.9, 6.1.2, 6.8.23 (X-Pack
 * security on) and OpenSearch 2.19.1, one after another (a JVM each; the smallest plan's heap).
 * For each: create to COMPLETED; ACLs (plain, transport, kibana) and a source outside them; index
 * and search over http and https; an admin call refused (by the edge where the node has no
 * security, by the node where it has); kill -9 of the node and the data kept; a backup and an
 * in-place restore; delete leaves nothing. Then a node that stops at start fails its build in
 * seconds with its own line. Only root can run hangar as root; CI installs the versions
 * (.ci/run) and runs as root, so there a missing one fails the run; elsewhere it is left out,
 * saying what to install.
 */

interface Version {
  readonly engine: 'elasticsearch' | 'opensearch';
  readonly version: string;
  /** The node has security of its own (X-Pack): it refuses admin calls itself. */
  readonly security: boolean;
  /** The mapping type documents are indexed under (types are gone from 7.0 and OpenSearch). */
  readonly type: string;
}

const VERSIONS: readonly Version[] = [
  { engine: 'elasticsearch', version: '2.4.6', security: false, type: 'doc' },
  { engine: 'elasticsearch', version: '5.6.9', security: false, type: 'doc' },
  { engine: 'elasticsearch', version: '6.1.2', security: false, type: 'doc' },
  { engine: 'elasticsearch', version: '6.8.23', security: true, type: 'doc' },
  { engine: 'opensearch', version: '2.19.1', security: false, type: '_doc' },
];
/** A distribution the failing node is made of (it stops at an xpack setting: it has no X-Pack). */
const FAILING = { engine: 'elasticsearch', version: '7.10.2' } as const;

/** The engine cache `hangar engines install` fills when run as root (CI runs it there). */
const CACHE = process.env.HANGAR_ENGINE_CACHE ?? '/var/cache/hangar/engines';
const installed = (product: string, version: string) => existsSync(join(CACHE, product, version, 'hangar-engine.json'));

/** Whether these tests can run here: as root, with every version they use installed. */
function runnable(): boolean {
  if (!enginesAvailable()) return false;
  if (process.getuid?.() !== 0) {
    if (process.env.CI === 'true') throw new Error('the Elasticsearch tests run hangar as root: run them as root');
    console.warn('the Elasticsearch tests run hangar as root (its nodes as the engine user), and this test does not: leaving them out');
    return false;
  }
  const missing = [...VERSIONS, FAILING].filter((v) => !installed(v.engine, v.version)).map((v) => `${v.engine}@${v.version}`);
  if (missing.length === 0) return true;
  const message = `the Elasticsearch tests need ${missing.join(', ')} in the engine cache ${CACHE}: hangar engines install ${missing.join(' ')}`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`${message}; leaving them out`);
  return false;
}

/** Sources: admitted by a plain ACL, by a transport one, by a kibana one, and by none. */
const PLAIN = '127.0.0.1';
const TRANSPORT = '127.0.0.3';
const KIBANA = '127.0.0.4';
const OUTSIDE = '127.0.0.2';

interface Answer {
  readonly status: number;
  readonly body: any;
  readonly type: string;
}

/** One HTTP(S) request from `source`; rejects when the edge closes the connection unanswered. */
function call(
  url: string,
  opts: { method?: string; body?: unknown; source?: string; accept?: string; path?: string } = {},
): Promise<Answer> {
  const u = new URL(url);
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: u.hostname,
        port: u.port,
        // a path as sent, where one with dot segments must reach the edge unchanged (URL would resolve them)
        path: opts.path ?? `${u.pathname}${u.search}`,
        method: opts.method ?? 'GET',
        localAddress: opts.source ?? PLAIN,
        agent: false,
        timeout: 30_000,
        // the edge's certificate is self-signed: what is checked here is what it serves
        rejectUnauthorized: false,
        headers: {
          accept: opts.accept ?? 'application/json',
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* a page */
          }
          resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** What the transport port answers to HTTP from `source`: the node's own words, or '' when the edge closes it. */
function transportAnswer(hostPort: string, source: string): Promise<string> {
  const [host, port] = hostPort.split(':');
  return new Promise((resolve) => {
    const s = connect({ host, port: Number(port), localAddress: source });
    let got = '';
    s.setTimeout(10_000, () => s.destroy());
    s.on('connect', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.on('data', (c) => {
      got += c.toString();
      if (/HTTP port/.test(got)) s.destroy();
    });
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
  });
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`${what} after ${ms} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The titles a search over every document of `books` finds, sorted. */
async function titles(base: string, source = PLAIN): Promise<string[]> {
  const r = await call(`${base}/books/_search?q=*&size=100`, { source });
  if (r.status !== 200) throw new Error(`search: ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body.hits.hits as { _source: { title: string } }[]).map((h) => h._source.title).sort();
}

async function finished(h: HangarProcess, path: string, ms: number): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await h.get(path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    if (['COMPLETED', 'FAILED'].includes(res.body.data.state)) return res.body.data;
    if (Date.now() > until) throw new Error(`${path} still ${res.body.data.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Seconds, for the summary. */
const secs = (ms: number) => Math.round(ms / 100) / 10;

describe.runIf(runnable())('Elasticsearch and OpenSearch, each version on a real node', () => {
  let h: HangarProcess;
  let cache: string;
  const figures: Record<string, Record<string, number>> = {};
  const fileStart = Date.now();

  beforeAll(async () => {
    // The versions tested, from the machine's cache (the same installs, by their manifests), and
    // a node that stops at start: 7.10.2, whose home claims X-Pack it lacks (see FAILING).
    cache = mkdtempSync(join(tmpdir(), 'hangar-e2e-es-cache-'));
    for (const v of VERSIONS) {
      mkdirSync(join(cache, v.engine, v.version), { recursive: true });
      copyFileSync(join(CACHE, v.engine, v.version, 'hangar-engine.json'), join(cache, v.engine, v.version, 'hangar-engine.json'));
    }
    const real = JSON.parse(readFileSync(join(CACHE, FAILING.engine, FAILING.version, 'hangar-engine.json'), 'utf8'));
    const home = mkdtempSync(join(tmpdir(), 'hangar-e2e-es-claims-xpack-'));
    chmodSync(home, 0o755);
    for (const d of ['bin', 'config', 'modules/x-pack-security']) mkdirSync(join(home, d), { recursive: true, mode: 0o755 });
    copyFileSync(join(CACHE, FAILING.engine, FAILING.version, 'config', 'jvm.options'), join(home, 'config', 'jvm.options'));
    writeFileSync(join(home, 'bin', 'elasticsearch'), `#!/bin/sh\nexec "${real.program}" "$@"\n`, { mode: 0o755 });
    mkdirSync(join(cache, FAILING.engine, FAILING.version), { recursive: true });
    writeFileSync(
      join(cache, FAILING.engine, FAILING.version, 'hangar-engine.json'),
      JSON.stringify({ ...real, program: join(home, 'bin', 'elasticsearch') }),
    );
    h = await HangarProcess.start({ env: { HANGAR_ENGINE_CACHE: cache } });
  }, 60_000);

  afterAll(async () => {
    await h?.destroy();
    rmSync(cache, { recursive: true, force: true });
    const rows = Object.entries(figures).map(
      ([v, f]) =>
        `${v.padEnd(22)}${Object.entries(f)
          .map(([k, s]) => `${k} ${s} s`)
          .join(', ')}`,
    );
    console.log(`Elasticsearch versions, seconds (whole file ${secs(Date.now() - fileStart)} s):\n${rows.join('\n')}`);
  });

  it('offers exactly the versions of its cache, and refuses the spec versions it cannot serve with a 422 saying why', async () => {
    const zones = (await h.get('/v2/zones/')).body.data as any[];
    const es = zones[0].services.find((s: any) => s.service === 'elasticsearch');
    const engines = Object.fromEntries(es.engines.map((e: any) => [e.engine, e]));
    expect(engines.elasticsearch.versions).toEqual(['2.4.6', '2.4', '5.6.9', '5.6', '6.1.2', '6.1', '6.8.23', '6.8', '7.10.2', '7.10']);
    expect(engines.opensearch.versions).toEqual(['2.19.1', '2.19']);
    for (const version of ['5.2.2', '6.3.2', '6.4.1']) {
      expect(engines.elasticsearch.unavailable_versions).toContainEqual({ version, reason: expect.stringMatching(/hangar cannot run it/) });
      const res = await h.post('/v2/instances/', {
        name: 'x',
        plan: 4,
        service: 'elasticsearch',
        type: 'elasticsearch',
        version,
        zone: 'US-Dallas',
      });
      expect(res.status, version).toBe(422);
      expect(res.body.message).toMatch(
        new RegExp(`elasticsearch ${version.replace(/\./g, '\\.')} cannot be served here: .*versions served here: 2\\.4\\.6`),
      );
    }
  });

  for (const v of VERSIONS) {
    describe(`${v.engine} ${v.version}`, () => {
      const name = `es${v.version.replace(/\./g, '')}${v.engine === 'opensearch' ? 'os' : ''}`;
      const f: Record<string, number> = {};
      let rec: any;
      let http: string;
      let https: string;
      figures[`${v.engine} ${v.version}`] = f;

      it('is created to COMPLETED, the node running as the engine user', async () => {
        const t0 = Date.now();
        const res = await h.post('/v2/instances/', {
          name,
          plan: 4,
          service: 'elasticsearch',
          type: 'elasticsearch',
          version: v.version,
          zone: 'US-Dallas',
          ...(v.engine === 'opensearch' ? { engine: 'opensearch' } : {}),
          acls: [
            { cidr_mask: PLAIN, description: 'plain' },
            { cidr_mask: TRANSPORT, description: 'transport', transport: true },
            { cidr_mask: KIBANA, description: 'kibana', kibana: true },
          ],
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        rec = await h.waitFor(name, (r) => r?.state === 'COMPLETED' || r?.state === 'FAILED', 240_000);
        f.create = secs(Date.now() - t0);
        expect(rec.state, rec.state_reason).toBe('COMPLETED');
        http = rec.connection_strings.public.http;
        https = rec.connection_strings.public.https;
        const root = await call(http);
        expect(root.body.version.number).toBe(v.version);
        const pid = Number(readFileSync(join(h.dataDir, 'instances', rec.id, 'node', 'process.pid'), 'utf8'));
        expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+(\d+)/m);
        expect(Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1])).toBeGreaterThan(0);
      }, 300_000);

      it('indexes and searches over http and https', async () => {
        const put = await call(`${http}/books/${v.type}/1?refresh=true`, { method: 'PUT', body: { title: 'before the backup' } });
        expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
        const overTls = await call(`${https}/books/${v.type}/2?refresh=true`, { method: 'PUT', body: { title: 'over tls' } });
        expect(overTls.status, JSON.stringify(overTls.body)).toBeLessThan(300);
        expect(await titles(https)).toEqual(['before the backup', 'over tls']);
        expect(await titles(http)).toEqual(['before the backup', 'over tls']);
      });

      it('admits by ACL: plain and transport ACLs on http, transport ACLs on the transport port, kibana ACLs on Kibana only; none from outside', async () => {
        expect((await call(http, { source: TRANSPORT })).status).toBe(200);
        await expect(call(http, { source: KIBANA })).rejects.toThrow();
        await expect(call(http, { source: OUTSIDE })).rejects.toThrow();
        await expect(call(https, { source: OUTSIDE })).rejects.toThrow();
        const transport = rec.connection_strings.public.transport;
        expect(await transportAnswer(transport, TRANSPORT)).toMatch(/This is not an? HTTP port/);
        expect(await transportAnswer(transport, PLAIN)).toBe('');
        expect(await transportAnswer(transport, OUTSIDE)).toBe('');
        // no Kibana here: the edge says so, to a kibana ACL's source only
        for (const kibana of [rec.connection_strings.public.kibana_http, rec.connection_strings.public.kibana_https]) {
          const json = await call(kibana, { source: KIBANA });
          expect(json).toMatchObject({ status: 503, type: 'application/json', body: { error: { type: 'kibana_unavailable' } } });
          expect(json.body.error.reason).toMatch(/no Kibana runs for this instance/);
          const page = await call(kibana, { source: KIBANA, accept: 'text/html' });
          expect(page).toMatchObject({ status: 503, type: expect.stringContaining('text/html') });
          expect(page.body).toContain('503: Kibana is not available here');
          await expect(call(kibana, { source: PLAIN })).rejects.toThrow();
          await expect(call(kibana, { source: OUTSIDE })).rejects.toThrow();
        }
      });

      it(`refuses what clients of hangar may not do (${v.security ? 'the node itself, with X-Pack security' : 'the edge, for a node without security'}); index work goes on`, async () => {
        const settings = await call(`${http}/_cluster/settings`, {
          method: 'PUT',
          body: { transient: { 'cluster.routing.allocation.enable': 'none' } },
        });
        expect(settings.status).toBe(403);
        expect(settings.body.error.type).toBe(v.security ? 'security_exception' : 'hangar_access_denied');
        const repo = await call(`${https}/_snapshot/mine`, { method: 'PUT', body: { type: 'fs', settings: { location: '/tmp/x' } } });
        expect(repo.status).toBe(403);
        if (!v.security) {
          // spelt otherwise, the same path
          expect((await call(`${http}//%5Fcluster/settings`, { method: 'PUT', body: {} })).status).toBe(403);
          expect((await call(http, { method: 'PUT', body: {}, path: '/books/../_snapshot/mine' })).status).toBe(400);
        }
        expect((await call(`${http}/_cluster/settings`)).status).toBe(200);
        expect((await call(`${http}/_cluster/health`)).body.status).toMatch(/green|yellow/);
      });

      it('keeps its data when the node is killed (-9): hangar starts it again', async () => {
        const pidFile = join(h.dataDir, 'instances', rec.id, 'node', 'process.pid');
        const pid = Number(readFileSync(pidFile, 'utf8'));
        const t0 = Date.now();
        process.kill(pid, 'SIGKILL');
        await eventually(
          'the node serving again',
          async () => {
            const again = Number(readFileSync(pidFile, 'utf8'));
            if (again === pid) return undefined;
            return (await titles(http)).length === 2 ? true : undefined;
          },
          240_000,
        );
        f.killed = secs(Date.now() - t0);
        expect(await titles(http)).toEqual(['before the backup', 'over tls']);
        await h.waitFor(name, (r) => r?.state === 'COMPLETED', 60_000);
      }, 300_000);

      it('backs up by snapshot and restores in place', async () => {
        await call(`${http}/books/${v.type}/2?refresh=true`, { method: 'DELETE' });
        const t0 = Date.now();
        const taken = await h.post(`/v2/instances/${name}/backups/`);
        expect(taken.status, JSON.stringify(taken.body)).toBe(200);
        const backup = await finished(h, `/v2/instances/${name}/backups/${taken.body.data.id}/`, 120_000);
        f.backup = secs(Date.now() - t0);
        expect(backup).toMatchObject({ state: 'COMPLETED', format: 'elasticsearch-snapshot', engine_version: v.version });
        await call(`${http}/books/${v.type}/3?refresh=true`, { method: 'PUT', body: { title: 'after the backup' } });
        await call(`${http}/other/${v.type}/1?refresh=true`, { method: 'PUT', body: { title: 'another index' } });
        const t1 = Date.now();
        const restore = await h.post(`/v2/instances/${name}/restore/`, { backup_id: backup.id });
        expect(restore.status, JSON.stringify(restore.body)).toBe(200);
        const done = await eventually(
          'the restore to finish',
          async () => {
            const all = (await h.get(`/v2/instances/${name}/restores/`)).body.data as {
              id: string;
              state: string;
              state_reason: string | null;
            }[];
            const r = all.find((x) => x.id === restore.body.data.id);
            return r && ['COMPLETED', 'FAILED'].includes(r.state) ? r : undefined;
          },
          180_000,
        );
        f.restore = secs(Date.now() - t1);
        expect(done, JSON.stringify(done)).toMatchObject({ state: 'COMPLETED', state_reason: null });
        await h.waitFor(name, (r) => r?.state === 'COMPLETED', 60_000);
        expect(await titles(http)).toEqual(['before the backup']);
        expect((await call(`${http}/other/_search`)).status).toBe(404);
      }, 300_000);

      if (v.version === '2.4.6') {
        it('grows its heap with a resize: the node restarts with the heap of the new plan, its data kept', async () => {
          const heap = async () => {
            const r = await call(`${http}/_nodes/_local/jvm`);
            return Object.values(r.body.nodes as Record<string, { jvm: { mem: { heap_max_in_bytes: number } } }>)[0]!.jvm.mem
              .heap_max_in_bytes;
          };
          expect(await heap()).toBeLessThanOrEqual(512 * 1024 * 1024);
          const t0 = Date.now();
          const res = await h.post(`/v2/elasticsearch/${name}/resize/`, { new_plan: 8 });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.data).toBe(`Resizing of instance "${name}" from 4 GB to 8 GB has started`);
          await h.waitFor(name, (r) => r?.state === 'COMPLETED' && r.plan === 8, 240_000);
          f.resize = secs(Date.now() - t0);
          expect(await heap()).toBeGreaterThan(900 * 1024 * 1024);
          expect(await titles(http)).toEqual(['before the backup']);
        }, 300_000);
      }

      it('leaves nothing when deleted: no process, no directory, no listener', async () => {
        const dir = join(h.dataDir, 'instances', rec.id);
        const t0 = Date.now();
        expect((await h.delete(`/v2/instances/${name}/`)).status).toBe(200);
        await h.waitFor(name, (r) => r === undefined, 120_000);
        f.delete = secs(Date.now() - t0);
        expect(existsSync(dir)).toBe(false);
        expect(processesUnder(dir)).toEqual([]);
        await expect(call(http)).rejects.toThrow();
        expect(readFileSync(join(h.dataDir, 'edge', 'haproxy.cfg'), 'utf8')).not.toContain(rec.id);
      }, 180_000);
    });
  }

  it('fails the build of a node that stops at start within seconds of its exit, with the line that says why', async () => {
    const res = await h.post('/v2/instances/', {
      name: 'stops',
      plan: 4,
      service: 'elasticsearch',
      type: 'elasticsearch',
      version: FAILING.version,
      zone: 'US-Dallas',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const t0 = Date.now();
    const failed = await h.waitFor('stops', (r) => r?.state === 'FAILED' || r?.state === 'COMPLETED', 110_000);
    figures[`${FAILING.engine} ${FAILING.version} stops`] = { failed: secs(Date.now() - t0) };
    expect(failed.state).toBe('FAILED');
    expect(failed.state_reason).toMatch(
      /^elasticsearch 7\.10\.2 exited at start: unknown setting \[xpack\.security\.\w+(\.\w+)*\] please check/,
    );
    expect(failed.state_reason).not.toMatch(/\bat org\.|\.java:\d+/);
  }, 120_000);
});
