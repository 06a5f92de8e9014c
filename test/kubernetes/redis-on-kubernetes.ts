import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BIN, HangarProcess, portOf } from '../e2e/helpers/hangar-process.js';
import { ClientHost, Testbed, imageAvailable, readTestbedEnv, testbedAvailable } from './helpers/testbed.js';

// Redis instances in a Kubernetes zone of a real single-node cluster (scripts/k8s-testbed): real
// pods running redis-server, Redis Sentinel and HAProxy, driven through hangar's HTTP API only
// (and checked with kubectl and a Redis client).
const execFileP = promisify(execFile);

/** An engine of the redis service as these tests run it: its version on the testbed and its client program. */
export interface RedisFamily {
  readonly engine: 'redis' | 'valkey';
  readonly version: string;
  readonly cli: string;
}

export const REDIS: RedisFamily = { engine: 'redis', version: '7.0.15', cli: 'redis-cli' };
export const VALKEY: RedisFamily = { engine: 'valkey', version: '8.0.1', cli: 'valkey-cli' };

/**
 * The suite for an engine of the redis service: every case (`all`), or its core (`core`: create,
 * ACLs, failover, resize, delete), as Valkey runs it beside Redis's whole suite.
 */
export function redisOnKubernetes(family: RedisFamily = REDIS, scope: 'all' | 'core' = 'all'): void {
  const full = scope === 'all';
  /** A test of the whole suite: defined only there (the core suite of another engine has no such test, rather than a skipped one). */
  const itFull = (name: string, fn: () => Promise<void>, timeout?: number): void => {
    if (full) it(name, fn, timeout);
  };
  describe.runIf(testbedAvailable() && imageAvailable(family.engine))(`${family.engine} on Kubernetes`, () => {
    const tb = new Testbed(readTestbedEnv() ?? {});
    const run = `${family.engine === 'redis' ? 't' : 'v'}${process.pid}`;
    const ns = `hangar-e2e-${run}`;
    const storageClass = `hangar-e2e-${run}`;
    const dir = mkdtempSync(join(tmpdir(), 'hangar-k8s-'));
    const nodeIp = tb.env.HANGAR_K8S_NODE_IP!;
    let client: ClientHost;
    let hangar: HangarProcess;
    let inst: any;

    const zones = (extra = '') => tb.zonesFile(ns, storageClass, extra);

    beforeAll(async () => {
      tb.namespace(ns);
      tb.volumes(`pv-${run}`, storageClass, join(dir, 'volumes'), full ? 16 : 4);
      // two volumes large enough for the plan no node can fit, so that the scheduler's reason is memory
      if (full) tb.volumes(`pv-${run}-large`, storageClass, join(dir, 'volumes'), 2, '400Gi');
      client = await ClientHost.create(`hk${family.engine[0]}${process.pid % 100000}`, full ? '192.0.2.100' : '192.0.2.101', nodeIp);
      writeFileSync(join(dir, 'zones.yaml'), zones());
      hangar = await HangarProcess.start({ env: { HANGAR_ZONES: join(dir, 'zones.yaml'), HANGAR_BUILD_TIMEOUT: '300' } });
    }, 120_000);

    // What hangar said, when a test fails: the warnings at the end of its log.
    afterEach((ctx) => {
      if (ctx.task.result?.state !== 'fail' || !hangar) return;
      console.log(`hangar's last warnings:\n${hangar.warnings().join('\n')}`);
    });

    afterAll(async () => {
      await hangar?.destroy();
      client?.remove();
      tb.kubectl(['delete', 'namespace', ns, '--wait=true', '--timeout=120s']);
      tb.kubectl(['delete', 'pv', '-l', `hangar-test in (pv-${run},pv-${run}-large)`]);
      rmSync(dir, { recursive: true, force: true });
    }, 180_000);

    const create = (name: string, extra: Record<string, unknown> = {}) =>
      hangar.post('/v2/instances/', { ...hangar.redisBody(name), zone: 'Kube', version: family.version, engine: family.engine, ...extra });
    const pods = (selector: string) => tb.json(['-n', ns, 'get', 'pods', '-l', selector]).items as any[];

    // An ACL change's answer waits for the edge pods (at most 2 s); on a cluster busier than that,
    // the change's operation turns SUCCEEDED once every edge pod has it. Returns the operation's steps.
    const enforced = async (res: { status: number; headers: Headers }, what: string): Promise<string[]> => {
      expect(res.status).toBe(200);
      const id = res.headers.get('x-operation-id');
      expect(id).toMatch(/^[0-9a-f]{24}$/);
      const asked = Date.now();
      let op: any;
      await expect
        .poll(
          async () => {
            op = (await hangar.get(`/v2/operations/${id}/`)).body.data;
            return op.state;
          },
          { timeout: 60_000, interval: 100 },
        )
        .toBe('SUCCEEDED');
      const t0 = op.steps[0]?.at?.$date ?? 0;
      const steps = op.steps.map((s: { name: string; at: { $date: number } }) => `${s.name} +${s.at.$date - t0}`).join(', ');
      console.log(`${what}: its operation SUCCEEDED ${Date.now() - asked} ms after the answer (${steps} ms)`);
      return op.steps.map((s: { name: string }) => s.name);
    };

    it('a redis_ha_instance turns ACTIVE with its pods Running, reached at the edge Service on the node', async () => {
      const res = await create('cache');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      inst = await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 240_000);
      expect(inst.connect_string).toBe(`redis://${nodeIp}:${portOf(inst.connect_string)}`);
      const id = inst.id as string;
      const running = pods(`hangar.io/instance=${id}`).filter((p) => p.status.phase === 'Running');
      expect(running.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort()).toEqual([
        'edge',
        'edge',
        'redis',
        'redis',
        'sentinel',
        'sentinel',
        'sentinel',
      ]);
      const redisPod = pods(`hangar.io/instance=${id},app.kubernetes.io/component=redis`)[0];
      // the engine asked for, from its own image
      expect(inst.engine).toBe(family.engine);
      expect(redisPod.spec.containers[0].image).toBe(tb.env[`HANGAR_K8S_${family.engine.toUpperCase()}_IMAGE`]);
      const server = tb.k([
        '-n',
        ns,
        'exec',
        redisPod.metadata.name,
        '--',
        'sh',
        '-c',
        `${family.cli} --user hangar --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning info server`,
      ]);
      expect(server).toMatch(family.engine === 'valkey' ? `valkey_version:${family.version}` : `redis_version:${family.version}`);
      expect(redisPod.spec.containers[0].resources).toEqual({ requests: { memory: '689Mi', cpu: '50m' }, limits: { memory: '689Mi' } });
      // a sentinel's CPU is limited: it can spin when an engine's pod is made again (redis/redis#9956)
      const sentinelPod = pods(`hangar.io/instance=${id},app.kubernetes.io/component=sentinel`)[0];
      expect(sentinelPod.spec.containers[0].resources).toEqual({
        requests: { memory: '64Mi', cpu: '50m' },
        limits: { memory: '64Mi', cpu: '100m' },
      });
    }, 300_000);

    it('the edge admits only the ACL sources: none, then the client host, then none again with its open connection cut; an ACL change touches nothing else', async () => {
      const port = portOf(inst.connect_string);
      expect(await client.ping(nodeIp, port, inst.password)).toBe('closed');
      const generation = () =>
        tb.k([
          '-n',
          ns,
          'get',
          'statefulsets,deployments',
          '-l',
          `hangar.io/instance=${inst.id}`,
          '-o',
          'jsonpath={.items[*].metadata.generation}',
        ]);
      const before = generation();
      const admitted = await client.waitUntil(nodeIp, port, inst.password, 'admitted');
      const acl = await hangar.post(`/v2/instances/cache/acls/`, { cidr_mask: client.address, description: 'client host' });
      const answered = Date.now();
      const admittedAt = await admitted.at;
      expect(admittedAt, 'admitted within 10 s of the answer').not.toBeNull();
      // the access alone: the edge pods through their runtime API, then the allow lists and policy; no workload applied or rolled
      const steps = await enforced(acl, 'acl add');
      expect(steps).toContain('ensure:access-applied');
      expect(steps.filter((s) => /objects-applied|edge-applied/.test(s))).toEqual([]);
      expect(generation()).toBe(before);
      const lists = tb.json(['-n', ns, 'get', 'secret', `h-${inst.id}-edge-acl`]).data;
      expect(Buffer.from(lists['main.lst'], 'base64').toString()).toBe(`${client.address}\n`);
      const open = client.redis(nodeIp, port);
      expect((await open.send('AUTH', inst.password)).reply).toBe('OK');
      expect((await open.send('SET', 'written', 'through the edge')).reply).toBe('OK');
      expect((await open.send('GET', 'written')).reply).toBe('through the edge');
      const refused = await client.waitUntil(nodeIp, port, inst.password, 'refused');
      const del = await hangar.delete(`/v2/instances/cache/acls/${acl.body.data}/`);
      const deleteAnswered = Date.now();
      while (!open.closed && Date.now() - deleteAnswered < 10_000) await new Promise((r) => setTimeout(r, 10));
      const cutAfter = Date.now() - deleteAnswered;
      expect(open.closed).toBe(true);
      const refusedAt = await refused.at;
      expect(refusedAt, 'refused within 10 s of the answer').not.toBeNull();
      // negative: enforced before the API answered (the answer waits for the edge pods, at most 2 s)
      console.log(
        `ACL enforcement after the API's answer: a new connection admitted ${admittedAt! - answered} ms after an add, refused ${refusedAt! - deleteAnswered} ms after a delete, an open one cut ${cutAfter} ms after it`,
      );
      await enforced(del, 'acl delete');
      expect(await client.ping(nodeIp, port, inst.password)).toBe('closed');
      expect(generation()).toBe(before);
    }, 60_000);

    // Before the resize: a resize rolls the pods, and the failover Sentinel makes then holds back
    // the next one of the same primary for twice its failover-timeout.
    it('the primary killed: Sentinel promotes the replica within 10 s, the edge follows, a writing client goes on; lost writes measured', async () => {
      await enforced(
        await hangar.post(`/v2/instances/cache/acls/`, { cidr_mask: '0.0.0.0/0', description: 'everyone, for the writer' }),
        'acl add for the writer',
      );
      const port = portOf(inst.connect_string);
      // the engines' roles, asked at their Services' addresses as hangar's own user (no kubectl exec:
      // a busy API server or kubelet must not be what is measured)
      const n = `h-${inst.id}-redis`;
      const adminSecret = tb.redisAdminSecret(ns, inst.id);
      const members = [0, 1].map((i) => ({
        pod: `${n}-${i}`,
        address: tb.json(['-n', ns, 'get', 'service', `${n}-${i}`]).spec.clusterIP as string,
      }));
      const roleOf = async (address: string): Promise<string | undefined> => {
        const c = createClient({
          socket: { host: address, port: 6379, connectTimeout: 1000, reconnectStrategy: false },
          username: 'hangar',
          password: adminSecret,
        });
        c.on('error', () => {});
        try {
          await c.connect();
          return /role:(\w+)/.exec(await c.info('replication'))?.[1];
        } catch {
          return undefined;
        } finally {
          // a client whose connection failed is closed already: disconnect() then throws at once
          try {
            if (c.isOpen) await c.disconnect();
          } catch {
            /* closed meanwhile */
          }
        }
      };
      // asked until both answer (one try can time out on a busy node): one primary, one replica
      let roles: (string | undefined)[] = [];
      const rolesUntil = Date.now() + 30_000;
      for (;;) {
        roles = await Promise.all(members.map((m) => roleOf(m.address)));
        if ((roles.includes('master') && roles.includes('slave')) || Date.now() > rolesUntil) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const primary = members[roles.indexOf('master')]!;
      const replica = members.find((m) => m !== primary)!;
      expect(
        roles.filter((r) => r === 'master'),
        `roles before the kill: ${roles.join(', ')}`,
      ).toHaveLength(1);
      // what is measured is the failover: Sentinel has found the replica first
      expect(await tb.sentinelReplicaFlags(ns, inst.id), 'Sentinel knows the replica, serving, before the kill').toBe('slave');
      const writer = createClient({
        socket: { host: nodeIp, port, reconnectStrategy: () => 50, connectTimeout: 1000 },
        password: inst.password,
      });
      writer.on('error', () => {});
      await writer.connect();
      const acked: number[] = [];
      let failed = 0;
      let n2 = 0;
      let writing = true;
      const loop = (async () => {
        while (writing) {
          const i = n2++;
          try {
            await writer.set(`k:${i}`, String(i));
            acked.push(i);
          } catch {
            failed++;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      })();
      try {
        await new Promise((r) => setTimeout(r, 1000));
        const killedAt = Date.now();
        // killed at once (no grace period), as a crashed node would leave it; the StatefulSet makes it again
        tb.kubectl(['-n', ns, 'delete', 'pod', primary.pod, '--grace-period=0', '--force', '--wait=false']);
        let promotedAt = 0;
        while (Date.now() - killedAt < 30_000) {
          if ((await roleOf(replica.address)) === 'master') {
            promotedAt = Date.now();
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        if (promotedAt === 0) {
          const sentinels = pods(`hangar.io/instance=${inst.id},app.kubernetes.io/component=sentinel`).map(
            (p) => p.metadata.name as string,
          );
          const logs = sentinels.map((s) => `${s}:\n${tb.kubectl(['-n', ns, 'logs', s, '--tail=30']).stdout}`).join('\n');
          console.log(
            `no promotion within 30 s; pods:\n${tb.kubectl(['-n', ns, 'get', 'pods', '-o', 'wide']).stdout}\nsentinel logs:\n${logs}`,
          );
        }
        expect(promotedAt, 'the replica was promoted').toBeGreaterThan(0);
        expect(promotedAt - killedAt).toBeLessThan(10_000);
        const ackedBefore = acked.length;
        const until = Date.now() + 15_000;
        while (acked.length < ackedBefore + 50 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
        writing = false;
        await loop;
        expect(acked.length, 'the client goes on writing through the connect string').toBeGreaterThanOrEqual(ackedBefore + 50);
        const reader = createClient({ socket: { host: nodeIp, port }, password: inst.password });
        reader.on('error', () => {});
        await reader.connect();
        const values = await reader.mGet(acked.map((i) => `k:${i}`));
        const lost = values.filter((v) => v === null).length;
        console.log(
          `failover: promoted after ${promotedAt - killedAt} ms; ${acked.length} writes acknowledged, ${failed} failed while it happened, ${lost} acknowledged writes lost`,
        );
        // Replication is asynchronous: writes acknowledged by the old primary in the last moments before it died may be lost.
        expect(lost).toBeLessThan(acked.length / 2);
        await reader.quit();
      } finally {
        writing = false;
        // a write queued while the client reconnects waits for it: closed, it fails at once
        if (writer.isOpen) writer.destroy();
        await loop;
      }
      await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 120_000);
      // Left settled for the tests after it: the killed engine is back as the replica, and one
      // engine alone says it is primary, seen three times in a row a second apart.
      let steady = 0;
      const settleUntil = Date.now() + 90_000;
      while (steady < 3 && Date.now() < settleUntil) {
        const now = await Promise.all(members.map((m) => roleOf(m.address)));
        steady = now.filter((r) => r === 'master').length === 1 && now.filter((r) => r === 'slave').length === 1 ? steady + 1 : 0;
        await new Promise((r) => setTimeout(r, 1000));
      }
      expect(steady, 'one primary and one replica after the failover').toBe(3);
      // how the killed engine came back (its start script says when it waited or asked for the failover)
      const said = tb
        .kubectl(['-n', ns, 'logs', primary.pod])
        .stdout.split('\n')
        .filter((l) => l.startsWith('hangar:'));
      console.log(
        `the killed engine started again: ${said.length ? said.join(' / ') : 'Sentinel had promoted the replica already; it followed'}`,
      );
    }, 240_000);

    it('resize sets maxmemory live, then rolls the pods to their new memory limit one by one; the data stays', async () => {
      const writer = createClient({ socket: { host: nodeIp, port: portOf(inst.connect_string) }, password: inst.password });
      // a connection cut (a failover cuts the new primary's clients) is the command's failure, not an uncaught error
      writer.on('error', () => {});
      await writer.connect();
      await writer.set('before-resize', 'kept');
      await writer.quit();
      expect((await hangar.post('/v2/redis/cache/resize/', { new_plan: 1000 })).status).toBe(200);
      await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE' && r.plan === 1000, 180_000);
      for (const pod of pods(`hangar.io/instance=${inst.id},app.kubernetes.io/component=redis`)) {
        const got = tb.k([
          '-n',
          ns,
          'exec',
          pod.metadata.name,
          '--',
          'sh',
          '-c',
          `${family.cli} --user hangar --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning config get maxmemory`,
        ]);
        expect(got.trim().split('\n')[1]).toBe(String(1000 * 1024 * 1024));
        // Kubernetes 1.20 cannot change a running container's limit: the pod was rolled to it
        expect(pod.spec.containers[0].resources.limits.memory).toBe('1314Mi');
      }
      const reader = createClient({ socket: { host: nodeIp, port: portOf(inst.connect_string) }, password: inst.password });
      reader.on('error', () => {});
      await reader.connect();
      expect(await reader.get('before-resize')).toBe('kept');
      await reader.quit();
      expect((await hangar.get('/v2/redis/cache/connectedSlaves/')).body.data).toBe(1);
    }, 240_000);

    itFull(
      'an object deleted by hand is re-created (the edge Deployment: clients are served again)',
      async () => {
        const edge = `h-${inst.id}-edge`;
        const uidOf = () => {
          const r = tb.kubectl(['-n', ns, 'get', 'deployment', edge, '-o', 'jsonpath={.metadata.uid}']);
          return r.status === 0 ? r.stdout.trim() : '';
        };
        // each step says when it was done: a run that fails says which step took the time
        const t0 = Date.now();
        const step = (what: string) => console.log(`object deleted by hand: ${what} after ${Date.now() - t0} ms`);
        const deleted = uidOf();
        tb.k(['-n', ns, 'delete', 'deployment', edge]);
        // back: a Deployment of that name that is not the one deleted
        const until = Date.now() + 60_000;
        let back = false;
        while (!back && Date.now() < until) {
          const uid = uidOf();
          back = uid !== '' && uid !== deleted;
          if (!back) await new Promise((r) => setTimeout(r, 500));
        }
        expect(back).toBe(true);
        step('the Deployment made again');
        // hangar's own output reaches the test through a pipe: the line may follow the object
        await expect.poll(() => hangar.log, { timeout: 30_000 }).toMatch(/object deleted; the instance is reconciled/);
        // Served again once the new edge pods run. Each attempt is a new client with its own bound: an
        // edge that accepts a connection before its backends answer must not hold the test; after
        // 90 s it fails with what the cluster shows.
        let value: string | null | undefined;
        let last = '';
        const servedUntil = Date.now() + 90_000;
        for (let attempt = 1; value === undefined && Date.now() < servedUntil; attempt++) {
          const c = createClient({
            socket: { host: nodeIp, port: portOf(inst.connect_string), connectTimeout: 2000, reconnectStrategy: false },
            password: inst.password,
          });
          c.on('error', () => {});
          let timer: NodeJS.Timeout | undefined;
          try {
            const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5000)));
            value = await Promise.race([c.connect().then(() => c.get('before-resize')), bound]);
          } catch (err) {
            last = `attempt ${attempt}: ${(err as Error).message}`;
            await new Promise((r) => setTimeout(r, 500));
          } finally {
            clearTimeout(timer);
            if (c.isOpen) c.destroy();
          }
        }
        if (value === undefined) {
          const pods = tb.kubectl(['-n', ns, 'get', 'pods,endpoints', '-o', 'wide']).stdout;
          const logs = tb.kubectl(['-n', ns, 'logs', `deployment/${edge}`, '--tail=20']).stdout;
          throw new Error(`not served through the new edge within 90 s (${last});\n${pods}\nedge log:\n${logs}`);
        }
        step('a client read through the new edge');
        expect(value).toBe('kept');
        // the pods the resize rolled may still be coming back: the instance is ACTIVE once both answer
        const rec = await hangar
          .waitFor('cache', (r) => r?.state === 'ACTIVE', 120_000)
          .catch((err: Error) => {
            throw new Error(`${err.message}; pods:\n${tb.kubectl(['-n', ns, 'get', 'pods', '-o', 'wide']).stdout}`);
          });
        expect(rec.state).toBe('ACTIVE');
        step('the instance ACTIVE');
        // the test's own bound is over the sum of its steps' (60 + 30 + 90 + 120 s), each of which fails with its reason
      },
      330_000,
    );

    itFull(
      'a member Service deleted by hand: made again with a new ClusterIP, which the engines, the Sentinels and the edge follow; a failover after it works',
      async () => {
        const n = `h-${inst.id}-redis`;
        const adminSecret = tb.redisAdminSecret(ns, inst.id);
        const addressOf = (i: number) => {
          const r = tb.kubectl(['-n', ns, 'get', 'service', `${n}-${i}`, '-o', 'jsonpath={.spec.clusterIP}']);
          return r.status === 0 ? r.stdout.trim() : '';
        };
        const ask = async (host: string, port: number, args: string[], user?: string): Promise<unknown> => {
          const c = createClient({
            socket: { host, port, connectTimeout: 1000, reconnectStrategy: false },
            ...(user ? { username: user } : {}),
            password: adminSecret,
          });
          c.on('error', () => {});
          try {
            await c.connect();
            return await c.sendCommand(args);
          } catch (err) {
            return `(${(err as Error).message})`;
          } finally {
            if (c.isOpen) c.destroy();
          }
        };
        const replication = async (address: string) => String(await ask(address, 6379, ['INFO', 'replication'], 'hangar'));
        const primaryIndex = async () => {
          for (let i = 0; i < 2; i++) if (/role:master/.test(await replication(addressOf(i)))) return i;
          return -1;
        };
        const t0 = Date.now();
        const step = (what: string) => console.log(`member Service deleted by hand: ${what} after ${Date.now() - t0} ms`);
        const p = await primaryIndex();
        expect(p, 'one engine is primary').toBeGreaterThanOrEqual(0);
        const old = addressOf(p);
        tb.k(['-n', ns, 'delete', 'service', `${n}-${p}`]);
        await expect
          .poll(() => addressOf(p), { timeout: 60_000, interval: 500 })
          .not.toMatch(new RegExp(`^(${old.replace(/\./g, '\\.')})?$`));
        const now = addressOf(p);
        step(`the Service made again (${old} -> ${now})`);
        const sentinelIps = () =>
          pods(`hangar.io/instance=${inst.id},app.kubernetes.io/component=sentinel`).map((x) => x.status.podIP as string);
        // what every part of the instance names the primary by, until all name the new address
        const seen = async (): Promise<string> => {
          const said: string[] = [];
          const announced = await ask(now, 6379, ['CONFIG', 'GET', 'replica-announce-ip'], 'hangar');
          said.push(`announced ${Array.isArray(announced) ? announced[1] : announced}`);
          said.push(`replica follows ${/master_host:(\S+)/.exec(await replication(addressOf(1 - p)))?.[1] ?? '?'}`);
          for (const ip of sentinelIps()) {
            const master = (await ask(ip, 26379, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'hangar'])) as string[] | string;
            const replicas = (await ask(ip, 26379, ['SENTINEL', 'REPLICAS', 'hangar'])) as string[][] | string;
            const replicaIps = Array.isArray(replicas) ? replicas.map((r) => r[r.indexOf('ip') + 1]).join('+') : replicas;
            said.push(`sentinel ${Array.isArray(master) ? master[0] : master} (replicas ${replicaIps})`);
          }
          return said.join(', ');
        };
        const want = [
          `announced ${now}`,
          `replica follows ${now}`,
          ...sentinelIps().map(() => `sentinel ${now} (replicas ${addressOf(1 - p)})`),
        ].join(', ');
        await expect.poll(seen, { timeout: 90_000, interval: 1000 }).toBe(want);
        step('the engines and every Sentinel name the new address');
        await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 120_000);
        // and a failover after it: Sentinel promotes the replica, the edge follows, the data is there
        expect(await tb.sentinelReplicaFlags(ns, inst.id), 'Sentinel knows the replica, serving, before the kill').toBe('slave');
        tb.kubectl(['-n', ns, 'delete', 'pod', `${n}-${p}`, '--grace-period=0', '--force', '--wait=false']);
        await expect.poll(() => primaryIndex(), { timeout: 30_000, interval: 200 }).toBe(1 - p);
        step('the replica promoted');
        // the killed engine comes back as the replica of the new primary, at its new address
        await expect
          .poll(async () => /master_host:(\S+)[\s\S]*master_link_status:up/.exec(await replication(now))?.[1], {
            timeout: 90_000,
            interval: 1000,
          })
          .toBe(addressOf(1 - p));
        step('the killed engine replicates from it');
        await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 120_000);
        const reader = createClient({ socket: { host: nodeIp, port: portOf(inst.connect_string) }, password: inst.password });
        reader.on('error', () => {});
        await reader.connect();
        expect(await reader.get('before-resize')).toBe('kept');
        await reader.quit();
      },
      360_000,
    );

    itFull(
      "a plan the node cannot fit shows the scheduler's reason in the record; a plan over the zone's capacity is refused",
      async () => {
        const over = await create('over-capacity', { plan: 10000 });
        expect(over.status).toBe(409);
        expect(over.body.code).toBe('CAPACITY_EXCEEDED');
        // 24 GiB of node: a pod asking for 100000 * 1.25 MB cannot be scheduled
        writeFileSync(join(dir, 'zones.yaml'), zones().replace('  capacity_mb: 12000', '  capacity_mb: 400000'));
        await hangar.stop();
        await hangar.serve();
        expect((await create('huge', { plan: 100000 })).status).toBe(200);
        const rec = await hangar.waitFor('huge', (r) => /Insufficient memory/.test(r?.state_reason ?? ''), 120_000);
        expect(rec.state).toBe('BUILDING');
        expect(rec.state_reason).toMatch(/not scheduled \(Unschedulable\): 0\/1 nodes are available: 1 Insufficient memory/);
        expect((await hangar.delete('/v2/instances/huge/')).status).toBe(200);
        await hangar.waitFor('huge', (r) => r === undefined, 120_000);
      },
      240_000,
    );

    it('delete removes every object of the instance; the instance disappears once they are gone', async () => {
      expect(tb.objectsOf(ns, inst.id).length).toBeGreaterThan(0);
      expect((await hangar.delete('/v2/instances/cache/')).status).toBe(200);
      await hangar.waitFor('cache', (r) => r === undefined, 180_000);
      expect(tb.objectsOf(ns, inst.id)).toEqual([]);
      expect(tb.k(['-n', ns, 'get', 'pvc', '-l', `hangar.io/instance=${inst.id}`, '-o', 'name']).trim()).toBe('');
    }, 200_000);

    itFull(
      'hangar killed mid-create converges after it starts again',
      async () => {
        await hangar.stop();
        await hangar.serve({ HANGAR_TEST_DIE_AT: 'create:objects-applied' });
        expect((await create('interrupted')).status).toBe(200);
        const exit = await hangar.waitExit(120_000);
        expect(exit.signal).toBe('SIGKILL');
        await hangar.serve();
        const rec = await hangar.waitFor('interrupted', (r) => r?.state === 'ACTIVE', 240_000);
        expect(rec.state).toBe('ACTIVE');
      },
      400_000,
    );

    itFull(
      'the API server stopped for 30 s mid-create: no 5xx meanwhile, the instance converges after it returns',
      async () => {
        expect((await create('patient')).status).toBe(200);
        await new Promise((r) => setTimeout(r, 1000));
        const statuses: number[] = [];
        // stopped for 30 s, and for 12 s at least after hangar serves again (a start on a busy
        // machine can take most of the 30 s): the reads below all fall in the outage
        const resume = tb.stopApiServer();
        const stoppedAt = Date.now();
        let startedIn: number;
        try {
          // hangar restarted while the API server does not answer serves from the store (serve() fails
          // when it does not within its start timeout)
          await hangar.stop();
          const restartedAt = Date.now();
          await hangar.serve();
          startedIn = Date.now() - restartedAt;
          const until = Math.max(stoppedAt + 30_000, Date.now() + 12_000);
          while (Date.now() < until) {
            statuses.push((await hangar.get('/v2/instances/patient/')).status);
            statuses.push((await hangar.get('/v2/instances/')).status);
            await new Promise((r) => setTimeout(r, 500));
          }
        } finally {
          resume();
        }
        console.log(`hangar restarted while the API server was stopped: serving after ${startedIn} ms`);
        expect(statuses.length).toBeGreaterThan(20);
        expect(statuses.filter((s) => s >= 500)).toEqual([]);
        const rec = await hangar.waitFor('patient', (r) => r?.state === 'ACTIVE', 240_000);
        expect(rec.state).toBe('ACTIVE');
      },
      360_000,
    );

    itFull(
      "hangar's user with only the Role's verbs suffices (every test above), and a missing verb is named",
      async () => {
        // take patch on networkpolicies away: the next change of an instance says what is missing
        const role = tb.json(['-n', ns, 'get', 'role', 'hangar']);
        role.rules = role.rules.map((r: any) => (r.resources.includes('networkpolicies') ? { ...r, verbs: ['get', 'list', 'delete'] } : r));
        tb.k(['-n', ns, 'apply', '-f', '-'], JSON.stringify(role));
        try {
          expect((await create('forbidden')).status).toBe(200);
          const rec = await hangar.waitFor('forbidden', (r) => /lacks the verb/.test(r?.state_reason ?? ''), 180_000);
          expect(rec.state_reason).toMatch(/lacks the verb "(patch|create) networkpolicies\.networking\.k8s\.io"/);
        } finally {
          tb.k(['-n', ns, 'apply', '-f', 'deploy/role.yaml']);
        }
        await hangar.waitFor('forbidden', (r) => r?.state === 'ACTIVE', 240_000);
      },
      480_000,
    );

    itFull(
      'MongoDB and Elasticsearch instances: every object accepted by the API server and their pods created (their images cannot run here)',
      async () => {
        const mongo = await hangar.post('/v2/instances/', {
          name: 'docs',
          service: 'mongodb',
          type: 'mongodb_replica_set',
          plan: 1,
          version: '3.4.2',
          zone: 'Kube',
        });
        expect(mongo.status, JSON.stringify(mongo.body)).toBe(200);
        const es = await hangar.post('/v2/instances/', {
          name: 'search',
          service: 'elasticsearch',
          type: 'elasticsearch',
          plan: 4,
          version: '6.4.1',
          zone: 'Kube',
        });
        expect(es.status, JSON.stringify(es.body)).toBe(200);
        for (const [rec, members] of [
          [mongo.body.data, 3],
          [es.body.data, 1],
        ] as const) {
          const until = Date.now() + 120_000;
          while (pods(`hangar.io/instance=${rec.id}`).length < members && Date.now() < until) await new Promise((r) => setTimeout(r, 1000));
          expect(pods(`hangar.io/instance=${rec.id}`)).toHaveLength(members);
          expect(tb.objectsOf(ns, rec.id).filter((o) => o.startsWith('statefulset'))).toHaveLength(1);
          const shown = await hangar.waitFor(rec.name, (r) => /image|Image/.test(r?.state_reason ?? ''), 120_000);
          expect(shown.state).toBe('BUILDING');
        }
        for (const name of ['docs', 'search']) expect((await hangar.delete(`/v2/instances/${name}/`)).status).toBe(200);
        for (const name of ['docs', 'search']) await hangar.waitFor(name, (r) => r === undefined, 180_000);
      },
      480_000,
    );

    itFull(
      'hangar doctor checks each Kubernetes zone: kubeconfig, API, namespace, every verb of the Role (naming the missing ones)',
      async () => {
        // run without blocking this process: the hangar of this file writes its log to it meanwhile
        const doctor = async (file: string) => {
          const r = await execFileP(process.execPath, [BIN, 'doctor', '--json'], {
            env: { ...process.env, HANGAR_ZONES: file, HANGAR_DATA_DIR: join(dir, 'doctor') },
          }).then(
            (ok) => ({ ...ok, code: 0 }),
            (err: { code?: number; stdout?: string; stderr?: string }) => ({
              code: err.code ?? -1,
              stdout: err.stdout ?? '',
              stderr: err.stderr ?? '',
            }),
          );
          expect(r.stdout, r.stderr).not.toBe('');
          return { status: r.code, report: JSON.parse(r.stdout) };
        };
        const good = await doctor(join(dir, 'zones.yaml'));
        expect(good.report.zones[0].checks.map((c: any) => [c.check, c.ok])).toEqual([
          ['kubeconfig', true],
          ['api', true],
          ['namespace', true],
          ['rbac', true],
        ]);
        // the same user in a namespace where its Role is not bound
        writeFileSync(join(dir, 'elsewhere.yaml'), zones().replace(`namespace: ${ns}`, 'namespace: default'));
        const bad = await doctor(join(dir, 'elsewhere.yaml'));
        expect(bad.status).toBe(1);
        const rbac = bad.report.zones[0].checks.find((c: any) => c.check === 'rbac');
        expect(rbac.ok).toBe(false);
        expect(rbac.detail).toMatch(/missing: get pods, list pods, watch pods, .*patch networkpolicies\.networking\.k8s\.io/);
        // two runs of the CLI, each asking the API server one access review per verb
      },
      120_000,
    );
  });
}
