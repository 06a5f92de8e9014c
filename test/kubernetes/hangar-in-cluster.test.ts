import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pg from 'pg';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { portOf } from '../e2e/helpers/hangar-process.js';
import { claimPortRange } from '../helpers/ports.js';
import { Testbed, nodesAvailable, readTestbedEnv } from './helpers/testbed.js';

// hangar itself in the cluster (`npm run test:k8s-nodes`, a testbed of three nodes): its image built
// from this repository's build and the machine's Node.js (`scripts/k8s-testbed hangar-image`),
// `kubectl apply -k` of deploy/ (a copy with the testbed's zone, image and Secret), two replicas on
// PostgreSQL, its API reached through its Service, one replica owning the Kubernetes runtime at a
// time. PostgreSQL is the machine's (a database of the test's own), outside the cluster as a
// control plane's database usually is (a managed one): the pods reach it through a relay at node
// 1's address, as the machine's PostgreSQL listens on 127.0.0.1 only.

const REPO = join(import.meta.dirname, '..', '..');
const NS = 'hangar';
const LOGIN = 'e2e@example.com';
const PASSWORD = 'correct-horse-battery-staple';

/** A TCP relay from `host:port` to PostgreSQL on 127.0.0.1:5432, in a process of its own; close() ends it. */
async function relay(host: string, port: number): Promise<{ close: () => Promise<void> }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'helpers', 'tcp-relay.mjs'), host, String(port), '127.0.0.1', '5432'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the relay exited (${code})`)));
  });
  return {
    close: async () => {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** hangar's API at `url` as the bootstrap account. */
class Api {
  private token = '';
  constructor(readonly url: string) {}

  async login(): Promise<void> {
    const basic = Buffer.from(`${LOGIN}:${PASSWORD}`).toString('base64');
    const res = await fetch(`${this.url}/v2/tokens/`, { headers: { authorization: `Basic ${basic}` }, signal: AbortSignal.timeout(5000) });
    if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`);
    this.token = ((await res.json()) as { data: { token: string } }).data.token;
  }

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { 'x-auth-token': this.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  async waitFor(name: string, predicate: (rec: any) => boolean, ms: number): Promise<any> {
    const until = Date.now() + ms;
    let last: unknown;
    while (Date.now() < until) {
      try {
        const r = await this.request('GET', `/v2/instances/${name}/`);
        last = r.body;
        if (r.status === 200 && predicate(r.body.data)) return r.body.data;
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`instance ${name} did not reach the expected state: ${JSON.stringify(last)}`);
  }
}

describe.runIf(nodesAvailable(3))('hangar as a Deployment in the cluster', () => {
  const tb = new Testbed(readTestbedEnv() ?? {});
  const run = `c${process.pid}`;
  const storageClass = `hangar-e2e-${run}`;
  const database = `hangar_k8s_${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'hangar-k8s-'));
  const nodeIp = tb.env.HANGAR_K8S_NODE_IP!;
  let db: Awaited<ReturnType<typeof relay>>;
  let api: Api;
  let image = '';
  let inst: any;

  /** `scripts/k8s-testbed hangar-image [tag]`: the image's reference. */
  const buildImage = (tag?: string): string => {
    const r = spawnSync(join(REPO, 'scripts', 'k8s-testbed'), ['hangar-image', ...(tag ? [tag] : [])], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    if (r.status !== 0) throw new Error(`k8s-testbed hangar-image: ${r.stderr}`);
    return r.stdout.trim().split('\n').pop()!;
  };

  /** deploy/ as a copy (the PodDisruptionBudget in the version the cluster serves) and an overlay of the testbed's own. */
  const overlay = (ref: string, relayPort: number): string => {
    const base = join(dir, 'deploy');
    cpSync(join(REPO, 'deploy'), base, { recursive: true });
    const servesPolicyV1 = tb.kubectl(['api-versions']).stdout.split('\n').includes('policy/v1');
    if (!servesPolicyV1) {
      for (const f of readdirSync(base).filter((f) => f.endsWith('.yaml'))) {
        const text = readFileSync(join(base, f), 'utf8');
        writeFileSync(
          join(base, f),
          text.replace(/apiVersion: policy\/v1\n(kind: PodDisruptionBudget)/g, 'apiVersion: policy/v1beta1\n$1'),
        );
      }
    }
    const [first, last] = (tb.env.HANGAR_K8S_NODEPORT_RANGE ?? '').split('-');
    const zones = [
      'Kube:',
      '  runtime: kubernetes',
      '  in_cluster: true',
      `  namespace: ${NS}`,
      `  storage_class: ${storageClass}`,
      `  node_port_range: ${first}-${last}`,
      `  images: { ${tb.images()} }`,
      '  capacity_mb: 12000',
    ].join('\n');
    const [name, tag] = ref.split(':');
    const top = join(dir, 'overlay');
    const files: Record<string, string> = {
      'kustomization.yaml': [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `bases: [${relative(top, base)}]`,
        `images: [{ name: "hangar", newName: "${name}", newTag: "${tag}" }]`,
        'patchesStrategicMerge: [testbed.yaml]',
        'generatorOptions: { disableNameSuffixHash: true }',
        'secretGenerator:',
        '  - name: hangar-secrets',
        `    namespace: ${NS}`,
        '    literals:',
        `      - database-url=postgres://postgres@${nodeIp}:${relayPort}/${database}`,
        `      - secret-key=${Buffer.alloc(32, 7).toString('base64')}`,
      ].join('\n'),
      'testbed.yaml': [
        'apiVersion: apps/v1',
        'kind: Deployment',
        `metadata: { name: hangar, namespace: ${NS} }`,
        'spec:',
        '  template:',
        '    spec:',
        '      containers:',
        '        - name: hangar',
        '          imagePullPolicy: Never',
        '          env:',
        `            - { name: HANGAR_BOOTSTRAP_LOGIN, value: "${LOGIN}" }`,
        `            - { name: HANGAR_BOOTSTRAP_PASSWORD, value: "${PASSWORD}" }`,
        '            - { name: HANGAR_BUILD_TIMEOUT, value: "300" }',
        '---',
        'apiVersion: v1',
        'kind: ConfigMap',
        `metadata: { name: hangar-zones, namespace: ${NS} }`,
        'data:',
        '  zones.yaml: |',
        ...zones.split('\n').map((l) => `    ${l}`),
      ].join('\n'),
    };
    mkdirSync(top, { recursive: true });
    for (const [f, text] of Object.entries(files)) writeFileSync(join(top, f), `${text}\n`);
    return top;
  };

  interface HangarPod {
    name: string;
    ip: string;
    node: string;
    ready: boolean;
    deleting: boolean;
    image: string;
  }
  const hangarPods = (): HangarPod[] =>
    (tb.json(['-n', NS, 'get', 'pods', '-l', 'app.kubernetes.io/name=hangar']).items as any[]).map((p) => ({
      name: p.metadata.name,
      ip: p.status.podIP ?? '',
      node: p.spec.nodeName ?? '',
      ready: (p.status.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
      deleting: p.metadata.deletionTimestamp !== undefined,
      image: p.spec.containers[0].image,
    }));
  /** Whether a replica says it owns the runtime (its /metrics). */
  const owns = async (ip: string): Promise<boolean | undefined> => {
    try {
      const res = await fetch(`http://${ip}:8080/metrics`, { signal: AbortSignal.timeout(3000) });
      return /^hangar_runtime_owner 1$/m.test(await res.text());
    } catch {
      return undefined;
    }
  };
  const owner = async (): Promise<HangarPod | undefined> => {
    for (const p of hangarPods().filter((x) => x.ready && !x.deleting)) if (await owns(p.ip)) return p;
    return undefined;
  };

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    const range = await claimPortRange();
    db = await relay(nodeIp, range.first);
    image = buildImage();
    tb.volumes(`pv-${run}`, storageClass, join(dir, 'volumes'), 4);
    const top = overlay(image, range.first);
    tb.k(['apply', '-k', top]);
    const rolled = tb.kubectl(['-n', NS, 'rollout', 'status', 'deployment/hangar', '--timeout=240s']);
    if (rolled.status !== 0)
      throw new Error(
        `hangar did not roll out: ${rolled.stderr}\n${tb.kubectl(['-n', NS, 'get', 'pods', '-o', 'wide']).stdout}\n${tb.kubectl(['-n', NS, 'logs', '-l', 'app.kubernetes.io/name=hangar', '--tail=30']).stdout}`,
      );
    const svc = tb.json(['-n', NS, 'get', 'service', 'hangar']).spec.clusterIP as string;
    api = new Api(`http://${svc}:8080`);
    await api.login();
  }, 900_000);

  afterEach((ctx) => {
    if (ctx.task.result?.state !== 'fail') return;
    console.log(tb.kubectl(['-n', NS, 'get', 'pods', '-o', 'wide']).stdout);
    for (const p of hangarPods()) console.log(`${p.name}:\n${tb.kubectl(['-n', NS, 'logs', p.name, '--tail=40']).stdout}`);
  });

  afterAll(async () => {
    tb.kubectl(['delete', 'namespace', NS, '--wait=true', '--timeout=180s']);
    tb.kubectl(['delete', 'pv', '-l', `hangar-test=pv-${run}`]);
    await db?.close();
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('runs two replicas on different nodes behind its Service, one of them owning the runtime', async () => {
    const pods = hangarPods().filter((p) => p.ready);
    expect(pods).toHaveLength(2);
    expect(pods[0]!.image).toBe(image);
    expect(new Set(pods.map((p) => p.node)).size, 'the replicas on different nodes').toBe(2);
    const owners = await Promise.all(pods.map((p) => owns(p.ip)));
    expect(
      owners.filter((o) => o === true),
      `owners: ${owners.join(', ')}`,
    ).toHaveLength(1);
    expect(owners.filter((o) => o === false)).toHaveLength(1);
    console.log(`hangar pods: ${pods.map((p) => `${p.name} on ${p.node}`).join(', ')}; image ${image}`);
  });

  it('creates, admits, resizes a redis_ha_instance through its API', async () => {
    const created = await api.request('POST', '/v2/instances/', {
      name: 'incluster',
      plan: 500,
      service: 'redis',
      type: 'redis_ha_instance',
      version: '7.0.15',
      zone: 'Kube',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    inst = await api.waitFor('incluster', (r) => r?.state === 'ACTIVE', 300_000);
    const acl = await api.request('POST', '/v2/instances/incluster/acls/', { cidr_mask: '0.0.0.0/0', description: 'everyone' });
    expect(acl.status).toBe(200);
    await api.waitFor('incluster', (r) => r?.state === 'ACTIVE', 60_000);
    const [host] = inst.connect_string.replace('redis://', '').split(':');
    const c = createClient({ socket: { host, port: portOf(inst.connect_string) }, password: inst.password });
    c.on('error', () => {});
    await c.connect();
    expect(await c.set('written', 'in the cluster')).toBe('OK');
    c.destroy();
    expect((await api.request('POST', '/v2/redis/incluster/resize/', { new_plan: 1000 })).status).toBe(200);
    await api.waitFor('incluster', (r) => r?.state === 'ACTIVE' && r.plan === 1000, 300_000);
  }, 660_000);

  /**
   * A steady client of the API (a read of the instance every 100 ms through the Service) and of
   * the instance (a write every 50 ms through its connect string), while `during` runs; what failed.
   */
  const steady = async (during: () => Promise<void>) => {
    const apiFailures: { at: number; what: string }[] = [];
    const writeFailures: number[] = [];
    let apiOk = 0;
    let writes = 0;
    let going = true;
    const reads = (async () => {
      while (going) {
        try {
          const r = await api.request('GET', '/v2/instances/incluster/');
          if (r.status === 200) apiOk++;
          else apiFailures.push({ at: Date.now(), what: String(r.status) });
        } catch (err) {
          const cause = (err as { cause?: { code?: string; message?: string } }).cause;
          apiFailures.push({ at: Date.now(), what: `${(err as Error).message} (${cause?.code ?? cause?.message ?? ''})` });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const [host] = inst.connect_string.replace('redis://', '').split(':');
    const writer = createClient({
      socket: { host, port: portOf(inst.connect_string), reconnectStrategy: () => 100 },
      password: inst.password,
    });
    writer.on('error', () => {});
    await writer.connect();
    const writing = (async () => {
      while (going) {
        try {
          await writer.set('steady', String(writes));
          writes++;
        } catch {
          writeFailures.push(Date.now());
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await during();
    } finally {
      going = false;
      await reads;
      await writing;
      writer.destroy();
    }
    return { apiOk, apiFailures, writes, writeFailures };
  };

  it('the owner pod deleted: the other replica takes the runtime over within the lease; the API and the instance serve throughout', async () => {
    const before = await owner();
    expect(before).toBeDefined();
    const other = hangarPods().find((p) => p.name !== before!.name && p.ready)!;
    let tookOver = 0;
    let deletedAt = 0;
    let newOwner = '';
    const r = await steady(async () => {
      await new Promise((res) => setTimeout(res, 2000));
      deletedAt = Date.now();
      // at once, as a crashed process or a lost node leaves it: no lease handed back
      tb.k(['-n', NS, 'delete', 'pod', before!.name, '--grace-period=0', '--force', '--wait=false']);
      const until = Date.now() + 60_000;
      while (Date.now() < until) {
        // the other replica, or the pod made to replace the deleted one, whichever takes it
        const now = await owner();
        if (now && now.name !== before!.name) {
          tookOver = Date.now();
          newOwner = now.name;
          break;
        }
        await new Promise((res) => setTimeout(res, 100));
      }
      await new Promise((res) => setTimeout(res, 2000));
    });
    expect(
      tookOver,
      `a replica took the runtime over (${hangarPods()
        .map((p) => `${p.name} ready ${p.ready}`)
        .join(', ')})`,
    ).toBeGreaterThan(0);
    console.log(
      `owner ${before!.name} deleted: ${newOwner}${newOwner === other.name ? ' (the other replica)' : ' (the pod made to replace it)'} owned the runtime ${tookOver - deletedAt} ms later (lease 6 s); API reads ok ${r.apiOk}, failed ${r.apiFailures.length} (${r.apiFailures.map((f) => `${f.what} at +${f.at - deletedAt} ms`).join(', ')}); writes ${r.writes}, failed ${r.writeFailures.length}`,
    );
    // the lease (6 s) runs out, then the next renewal attempt takes it and the runtime starts
    expect(tookOver - deletedAt).toBeLessThan(6000 + 8000);
    // the new owner carries a change out (its own address admitted by the edges first)
    const acl = await api.request('POST', '/v2/instances/incluster/acls/', {
      cidr_mask: '203.0.113.0/24',
      description: 'after the handover',
    });
    expect(acl.status).toBe(200);
    await api.waitFor('incluster', (rec) => rec?.state === 'ACTIVE', 60_000);
    const op = (await api.request('GET', `/v2/operations/${acl.headers.get('x-operation-id')}/`)).body.data;
    expect(op.state).toBe('SUCCEEDED');
    tb.k(['-n', NS, 'rollout', 'status', 'deployment/hangar', '--timeout=180s']);
  }, 300_000);

  it('a rolling update to a new image under a steady client: requests fail no longer than the handover, no operation stays running', async () => {
    const next = buildImage(`${image.split(':')[1]}-next`);
    let started = 0;
    let done = 0;
    const r = await steady(async () => {
      await new Promise((res) => setTimeout(res, 2000));
      started = Date.now();
      tb.k(['-n', NS, 'set', 'image', 'deployment/hangar', `hangar=${next}`]);
      const rolled = tb.kubectl(['-n', NS, 'rollout', 'status', 'deployment/hangar', '--timeout=300s']);
      expect(rolled.status, rolled.stderr).toBe(0);
      done = Date.now();
      // a change asked right after: carried out by the new image's owner
      for (let attempt = 1; ; attempt++) {
        try {
          const acl = await api.request('POST', '/v2/instances/incluster/acls/', {
            cidr_mask: '198.51.100.0/24',
            description: 'after the update',
          });
          expect(acl.status).toBe(200);
          break;
        } catch (err) {
          const cause = (err as { cause?: { code?: string; message?: string } }).cause;
          console.log(
            `the ACL request after the update, attempt ${attempt}: ${(err as Error).message} (${cause?.code ?? cause?.message ?? ''})`,
          );
          if (attempt === 5) throw err;
          await new Promise((res) => setTimeout(res, 1000));
        }
      }
      await new Promise((res) => setTimeout(res, 2000));
    });
    const pods = hangarPods().filter((p) => !p.deleting);
    expect(pods.map((p) => p.image)).toEqual([next, next]);
    console.log(
      `rolling update to ${next} in ${Math.round((done - started) / 1000)} s: API reads ok ${r.apiOk}, failed ${r.apiFailures.length} (${r.apiFailures.map((f) => `${f.what} at +${f.at - started} ms`).join(', ')}); writes ${r.writes}, failed ${r.writeFailures.length}`,
    );
    // What failed here was a request on a kept-alive connection to a pod that had gone (undici's
    // UND_ERR_SOCKET): one or two, never a refusal or an error answer of hangar.
    expect(r.apiFailures.length).toBeLessThanOrEqual(2);
    expect(r.apiFailures.filter((f) => !/UND_ERR_SOCKET/.test(f.what))).toEqual([]);
    await api.waitFor('incluster', (rec) => rec?.state === 'ACTIVE', 120_000);
    // no operation left running
    const until = Date.now() + 60_000;
    let running: any[] = [];
    while (Date.now() < until) {
      const ops = (await api.request('GET', '/v2/operations/')).body.data as any[];
      running = ops.filter((o) => o.state !== 'SUCCEEDED' && o.state !== 'FAILED');
      if (running.length === 0) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    expect(running.map((o) => `${o.kind ?? o.type} ${o.state}`)).toEqual([]);
    // a replica of the new image owns the runtime (asked for 30 s: seen once with none right after the roll)
    await expect.poll(async () => (await owner())?.image, { timeout: 30_000, interval: 1000 }).toBe(next);
  }, 900_000);
});
