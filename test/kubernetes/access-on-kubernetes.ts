import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, portOf } from '../e2e/helpers/hangar-process.js';
import { ClientHost, Testbed, readTestbedEnv, testbedAvailable } from './helpers/testbed.js';

// Access and Redis day two in a Kubernetes zone of the real single-node cluster
// (scripts/k8s-testbed): what the edge pods and the NetworkPolicy enforce, refused connections
// read from the edge pods, Redis users and settings on both engines and across a Sentinel
// failover. Driven through hangar's HTTP API, checked with kubectl and clients on hosts of their own.
export function accessOnKubernetes(): void {
  describe.runIf(testbedAvailable())('access and Redis day two on Kubernetes', () => {
    const tb = new Testbed(readTestbedEnv() ?? {});
    const run = `a${process.pid}`;
    const ns = `hangar-e2e-${run}`;
    const storageClass = `hangar-e2e-${run}`;
    const dir = mkdtempSync(join(tmpdir(), 'hangar-k8s-access-'));
    const nodeIp = tb.env.HANGAR_K8S_NODE_IP!;
    let admitted: ClientHost;
    let stranger: ClientHost;
    let hangar: HangarProcess;
    let inst: any;

    beforeAll(async () => {
      tb.namespace(ns);
      tb.volumes(`pv-${run}`, storageClass, join(dir, 'volumes'), 4);
      admitted = await ClientHost.create(`hka${process.pid % 100000}`, '192.0.2.110', nodeIp);
      stranger = await ClientHost.create(`hks${process.pid % 100000}`, '192.0.2.111', nodeIp);
      writeFileSync(join(dir, 'zones.yaml'), tb.zonesFile(ns, storageClass));
      hangar = await HangarProcess.start({ env: { HANGAR_ZONES: join(dir, 'zones.yaml'), HANGAR_BUILD_TIMEOUT: '300' } });
    }, 120_000);

    afterEach((ctx) => {
      if (ctx.task.result?.state !== 'fail' || !hangar) return;
      console.log(`hangar's last warnings:\n${hangar.warnings().join('\n')}`);
    });

    afterAll(async () => {
      await hangar?.destroy();
      admitted?.remove();
      stranger?.remove();
      tb.kubectl(['delete', 'namespace', ns, '--wait=true', '--timeout=120s']);
      tb.kubectl(['delete', 'pv', '-l', `hangar-test=pv-${run}`]);
      rmSync(dir, { recursive: true, force: true });
    }, 180_000);

    const pods = (selector: string) => tb.json(['-n', ns, 'get', 'pods', '-l', selector]).items as any[];
    const onPod = (pod: string, cmd: string) => tb.k(['-n', ns, 'exec', pod, '--', 'sh', '-c', cmd]);
    const admin = 'redis-cli --user hangar --pass "$HANGAR_ADMIN_SECRET" --no-auth-warning';

    it('the edge pods and the NetworkPolicy enforce exactly the ACLs; check agrees with real clients', async () => {
      const res = await hangar.post('/v2/instances/', {
        ...hangar.redisBody('cache'),
        zone: 'Kube',
        version: '7.0.15',
        acls: [{ cidr_mask: admitted.address, description: 'client host' }],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      inst = await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 240_000);
      // an edge pod still starting shows as not in sync ("the edge pod is not ready"): read once both run
      let eff: any;
      await expect
        .poll(
          async () => {
            eff = (await hangar.get('/v2/instances/cache/acls/effective')).body.data;
            return eff.in_sync;
          },
          {
            timeout: 60_000,
            interval: 500,
          },
        )
        .toBe(true);
      expect(eff.in_sync, JSON.stringify(eff)).toBe(true);
      expect(eff.enforcers.map((e: any) => e.name.split('/')[0]).sort()).toEqual(['networkpolicy', 'pod', 'pod']);
      for (const e of eff.enforcers) expect(e.sources.main, e.name).toEqual([admitted.address]);
      // as the API server holds it: every client rule names its sources (a rule without them admits everyone)
      const policy = tb.json(['-n', ns, 'get', 'networkpolicy', `h-${inst.id}-edge`]);
      expect(policy.spec.ingress.length).toBeGreaterThan(1);
      for (const rule of policy.spec.ingress) expect(rule.from, JSON.stringify(rule)).toEqual(expect.arrayContaining([expect.any(Object)]));
      const port = portOf(inst.connect_string);
      for (const [host, expected] of [
        [admitted, true],
        [stranger, false],
      ] as const) {
        expect((await hangar.post('/v2/instances/cache/acls/check', { ip: host.address })).body.data.admitted).toBe(expected);
        expect(await host.ping(nodeIp, port, inst.password)).toBe(expected ? 'PONG' : 'closed');
      }
    }, 300_000);

    it('a refused connection is read back from the edge pods and counted in /metrics', async () => {
      const port = portOf(inst.connect_string);
      expect(await stranger.ping(nodeIp, port, inst.password)).toBe('closed');
      let denied: any[] = [];
      const until = Date.now() + 10_000;
      while (!denied.some((d) => d.source === stranger.address) && Date.now() < until) {
        denied = (await hangar.get('/v2/instances/cache/acls/denied')).body.data;
        if (!denied.some((d) => d.source === stranger.address)) await new Promise((r) => setTimeout(r, 250));
      }
      expect(denied[0]).toEqual({ source: stranger.address, time: expect.any(String), listener: 'public' });
      expect(denied.map((d) => d.source)).not.toContain(admitted.address);
      const metrics = await (await fetch(`${hangar.url}/metrics`)).text();
      const refused = Number(
        new RegExp(`hangar_edge_connections_total\\{instance_id="${inst.id}",outcome="refused"\\} (\\d+)`).exec(metrics)?.[1] ?? 0,
      );
      expect(refused).toBeGreaterThanOrEqual(1);
    }, 60_000);

    it('a user limited to app:* and the settings run on both engines and survive a Sentinel failover', async () => {
      const port = portOf(inst.connect_string);
      const user = await hangar.post('/v2/redis/cache/users/', {
        username: 'app',
        password: 'app-password-1',
        keys: ['app:*'],
        commands: ['+@read', '+@write', '-@dangerous', '+@connection'],
      });
      expect(user.status, JSON.stringify(user.body)).toBe(200);
      const cfg = await hangar.patch('/v2/redis/cache/config/', { 'maxmemory-policy': 'allkeys-lru', maxclients: 5000 });
      expect(cfg.status, JSON.stringify(cfg.body)).toBe(200);
      const asApp = async () => {
        const c = admitted.redis(nodeIp, port);
        try {
          const auth = await c.send('AUTH', 'app', 'app-password-1');
          expect(auth.reply, JSON.stringify(auth)).toBe('OK');
          const set = await c.send('SET', 'app:1', 'mine');
          expect(set.reply, JSON.stringify(set)).toBe('OK');
          expect((await c.send('GET', 'other:1')).error).toMatch(/^NOPERM/);
        } finally {
          c.end();
        }
      };
      await asApp();
      const members = pods(`hangar.io/instance=${inst.id},app.kubernetes.io/component=redis`).map((p) => p.metadata.name as string);
      for (const m of members) {
        expect(onPod(m, `${admin} acl getuser app | head -2`)).toContain('flags');
        expect(onPod(m, `${admin} config get maxmemory-policy`).split('\n')[1]).toBe('allkeys-lru');
        expect(onPod(m, 'grep -E "^(maxmemory-policy|maxclients|user app)" /data/redis.conf')).toMatch(
          /maxmemory-policy allkeys-lru[\s\S]*maxclients 5000|maxclients 5000[\s\S]*maxmemory-policy allkeys-lru/,
        );
      }
      const roleOf = (pod: string) => /role:(\w+)/.exec(onPod(pod, `${admin} info replication`))?.[1];
      const primary = members.find((m) => roleOf(m) === 'master')!;
      const replica = members.find((m) => m !== primary)!;
      expect(await tb.sentinelReplicaFlags(ns, inst.id), 'Sentinel knows the replica, serving, before the kill').toBe('slave');
      tb.kubectl(['-n', ns, 'delete', 'pod', primary, '--grace-period=0', '--force', '--wait=false']);
      const until = Date.now() + 30_000;
      while (roleOf(replica) !== 'master' && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      expect(roleOf(replica)).toBe('master');
      await hangar.waitFor('cache', (r) => r?.state === 'ACTIVE', 120_000);
      expect((await hangar.get('/v2/redis/cache/maxMemoryPolicy/')).body.data).toBe('allkeys-lru');
      expect((await hangar.get('/v2/redis/cache/maxClients/')).body.data).toBe('5000');
      let served = false;
      for (const end = Date.now() + 30_000; !served && Date.now() < end; ) {
        served = (await admitted.ping(nodeIp, port, inst.password)) === 'PONG';
        if (!served) await new Promise((r) => setTimeout(r, 500));
      }
      expect(served).toBe(true);
      await asApp();
    }, 240_000);

    it('a password rotation keeps both passwords working until finish', async () => {
      const port = portOf(inst.connect_string);
      const old = inst.password as string;
      // each step is an operation: its answer comes at once on a busy cluster, its SUCCEEDED once both engines have it
      const succeeded = async (res: { headers: Headers }) => {
        const id = res.headers.get('x-operation-id');
        expect(id).toMatch(/^[0-9a-f]{24}$/);
        await expect
          .poll(async () => (await hangar.get(`/v2/operations/${id}/`)).body.data.state, { timeout: 120_000, interval: 250 })
          .toBe('SUCCEEDED');
      };
      const rotated = await hangar.post('/v2/instances/cache/rotate-password');
      const { password } = rotated.body.data;
      await succeeded(rotated);
      expect(await admitted.ping(nodeIp, port, old)).toBe('PONG');
      expect(await admitted.ping(nodeIp, port, password)).toBe('PONG');
      const finished = await hangar.post('/v2/instances/cache/rotate-password/finish');
      expect(finished.body.data.retired).toBe(true);
      await succeeded(finished);
      expect(await admitted.ping(nodeIp, port, old)).toMatch(/WRONGPASS/);
      expect(await admitted.ping(nodeIp, port, password)).toBe('PONG');
    }, 300_000);
  });
}
