/**
 * Ceiling of the ACL figure: the edge's own reaction time. A bare HAProxy (TCP, one listener
 * rejecting sources that are not in an allow-list file, as hangar's edge does) in front of a
 * redis-server; an `add acl` / `del acl` through its runtime API, then a client from that
 * source retried until it is admitted / refused.
 * Usage: node bare-haproxy.js DIR SAMPLES  (prints one JSON line)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../lib/free-port.js';
import { probe } from '../lib/probe.js';
import { RespClient } from '../lib/resp.js';
import { now, until } from '../lib/time.js';

const PASSWORD = 'ceiling-password';
const [dir, samplesArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: bare-haproxy.js DIR SAMPLES');
const samples = Number(samplesArg ?? 10);

function command(socketPath: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: socketPath });
    const chunks: Buffer[] = [];
    socket.on('connect', () => socket.end(`${line}\n`));
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

const children: ChildProcess[] = [];
const out = { addMs: [] as number[], delMs: [] as number[] };
try {
  const redisPort = await freePort();
  const redisConf = join(dir, 'redis.conf');
  writeFileSync(
    redisConf,
    [
      `port ${redisPort}`,
      'bind 127.0.0.1',
      `dir "${dir}"`,
      'save ""',
      `requirepass "${PASSWORD}"`,
      'proc-title-template "{title} {listen-addr} {server-mode} {config-file}"',
    ].join('\n'),
  );
  children.push(spawn('redis-server', [redisConf], { stdio: 'ignore' }));
  (await until('redis', async () => RespClient.open(redisPort, PASSWORD).catch(() => undefined), 10_000, 2)).close();

  const port = await freePort();
  const allow = join(dir, 'allow.lst');
  const admin = join(dir, 'admin.sock');
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(allow, '');
  writeFileSync(
    cfg,
    [
      'global',
      `    stats socket ${admin} mode 600 level admin`,
      '    maxconn 4000',
      'defaults',
      '    mode tcp',
      '    timeout connect 5s',
      '    timeout client 1h',
      '    timeout server 1h',
      'frontend edge',
      `    bind 127.0.0.1:${port}`,
      `    tcp-request connection reject unless { src -f ${allow} }`,
      '    default_backend engine',
      'backend engine',
      `    server engine 127.0.0.1:${redisPort}`,
      '',
    ].join('\n'),
  );
  children.push(spawn('haproxy', ['-db', '-f', cfg], { stdio: 'ignore', env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin` } }));
  await until('haproxy', async () => command(admin, 'show info').catch(() => undefined), 10_000, 5);

  for (let i = 0; i < samples; i++) {
    const source = `127.89.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    if ((await probe(port, PASSWORD, source)) !== 'refused') throw new Error(`${source} admitted before its ACL`);
    let t0 = now();
    await command(admin, `add acl ${allow} ${source}`);
    await until('admitted', async () => ((await probe(port, PASSWORD, source)) === 'admitted' ? true : undefined), 5000, 0);
    out.addMs.push(now() - t0);
    t0 = now();
    await command(admin, `del acl ${allow} ${source}`);
    await until('refused', async () => ((await probe(port, PASSWORD, source)) === 'refused' ? true : undefined), 5000, 0);
    out.delMs.push(now() - t0);
  }
} finally {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
process.stdout.write(`${JSON.stringify(out)}\n`);
