import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statSync, type Stats } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarProcess, enginesAvailable, type RedisRecord } from './helpers/hangar-process.js';
import { enginePid, enginePort, pingOutcome } from './helpers/redis.js';

/** Every path under `dir` with its permission bits. */
function walk(dir: string): { path: string; mode: number; dir: boolean }[] {
  const out: { path: string; mode: number; dir: boolean }[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    let st: Stats;
    try {
      st = statSync(p);
    } catch {
      continue; // gone meanwhile (a temporary file)
    }
    out.push({ path: p, mode: st.mode & 0o777, dir: st.isDirectory() });
    if (st.isDirectory()) out.push(...walk(p));
  }
  return out;
}

/** The local addresses of the TCP sockets process `pid` listens on, e.g. `127.0.0.1:20001`. */
function listeningAddresses(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      /* closed meanwhile */
    }
  }
  const out: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9]!)) continue; // 0A: LISTEN
      const [hex, port] = f[1]!.split(':') as [string, string];
      const address =
        table === 'tcp'
          ? hex
              .match(/../g)!
              .reverse()
              .map((b) => parseInt(b, 16))
              .join('.')
          : hex === '00000000000000000000000001000000'
            ? '::1'
            : hex;
      out.push(`${address}:${parseInt(port, 16)}`);
    }
  }
  return out;
}

/** The first answer of a Redis engine to `commands` (inline protocol), sent on a fresh connection. */
function firstAnswer(port: number, commands: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    let got = '';
    s.on('data', (c: Buffer) => {
      got += c.toString();
      if (got.includes('\r\n')) s.destroy();
    });
    s.on('close', () => resolve(got.trim()));
    s.on('error', () => resolve('refused'));
    s.write(commands);
  });
}

// Black box: the built binary on the local runtime, real redis-server and HAProxy.
describe.runIf(enginesAvailable())('engines are reachable by hangar only', () => {
  let hangar: HangarProcess;
  let redis: RedisRecord;

  beforeAll(async () => {
    hangar = await HangarProcess.start();
    redis = await hangar.createRedis('guarded', { acls: [{ cidr_mask: '127.0.0.1', description: 'this machine' }] });
  }, 60_000);
  afterAll(async () => {
    await hangar?.destroy();
  });

  it('each engine listens on loopback only', () => {
    for (const role of ['primary', 'replica'] as const) {
      const port = enginePort(hangar.dataDir, redis.id, role);
      const addresses = listeningAddresses(enginePid(hangar.dataDir, redis.id, role));
      expect(addresses, role).toContain(`127.0.0.1:${port}`);
      for (const a of addresses) expect(a, `${role} listens on ${a}`).toMatch(/^(127\.0\.0\.1|::1):/);
    }
  });

  it('each engine asks for the password even on loopback: none, a wrong one and the admin user without its secret are refused', async () => {
    for (const role of ['primary', 'replica'] as const) {
      const port = enginePort(hangar.dataDir, redis.id, role);
      expect(await firstAnswer(port, 'PING\r\n'), role).toMatch(/^-NOAUTH/);
      expect(await firstAnswer(port, 'CONFIG GET requirepass\r\n'), role).toMatch(/^-NOAUTH/);
      // the user hangar administers the engine as, named in the documented redis.conf
      expect(await firstAnswer(port, 'AUTH hangar not-its-secret\r\n'), role).toMatch(/^-WRONGPASS/);
      expect(await pingOutcome(port, 'not-the-password'), role).toMatch(/WRONGPASS|invalid/i);
      expect(await pingOutcome(port, redis.password), role).toBe('PONG');
    }
  });

  it('the data dir and everything in it, configuration and engine data alike, are for their owner only', () => {
    // as root, engines run as the engine user: its group may pass through the data dir (not list
    // it) to instances/, which is that user's (test/e2e/engine-user.test.ts)
    const data = statSync(hangar.dataDir);
    if (process.getuid?.() === 0) {
      const gid = Number(spawnSync('id', ['-g', 'hangar-engine'], { encoding: 'utf8' }).stdout.trim());
      expect({ mode: data.mode & 0o777, gid: data.gid }).toEqual({ mode: 0o710, gid });
    } else {
      expect(data.mode & 0o777).toBe(0o700);
    }
    const entries = walk(hangar.dataDir);
    const shown = (e: { path: string; mode: number }) => `${e.path.slice(hangar.dataDir.length)} ${e.mode.toString(8)}`;
    // what the engines write themselves (redis-server's data files) included
    expect(entries.map((e) => e.path)).toEqual(
      expect.arrayContaining([join(hangar.dataDir, 'instances', redis.id, 'primary', 'redis.conf'), join(hangar.dataDir, 'secret.key')]),
    );
    expect(entries.some((e) => /appendonly|dump\.rdb/.test(e.path))).toBe(true);
    for (const e of entries) expect(shown(e)).toBe(shown({ ...e, mode: e.dir ? 0o700 : e.mode & 0o700 }));
    for (const e of entries.filter((x) => /\.(conf|cfg|key)$/.test(x.path))) expect(shown(e)).toBe(shown({ ...e, mode: 0o600 }));
  });
});
