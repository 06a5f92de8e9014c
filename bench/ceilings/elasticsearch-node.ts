/**
 * Ceiling of the elasticsearch figure, by hand: an Elasticsearch node (5.x to 7.x) of the engine
 * cache started directly, as hangar starts one (the same distribution, Java, heap and settings:
 * one node on loopback, single-node discovery), without hangar: its own directory, its own
 * configuration, run as the engine user when this runs as root (the node refuses root). Measured
 * from the spawn: the node's own "started" line on its output, and the first /_cluster/health
 * that says green or yellow (polled every 20 ms). Then SIGTERM, and its exit waited for.
 * Usage: node elasticsearch-node.js DIR HOME MANIFEST_JSON UID GID HEAP_MB  (prints one JSON line;
 * UID and GID -1: run as this process's user)
 */
import { spawn } from 'node:child_process';
import { chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../lib/free-port.js';
import { now, until } from '../lib/time.js';

const [dir, home, manifestJson, uidArg, gidArg, heapArg] = process.argv.slice(2);
if (!dir || !home || !manifestJson || !heapArg) throw new Error('usage: elasticsearch-node.js DIR HOME MANIFEST_JSON UID GID HEAP_MB');
const manifest = JSON.parse(manifestJson) as { version: string; program: string; env: Record<string, string> };
const uid = Number(uidArg);
const gid = Number(gidArg);
const heap = Number(heapArg);
const major = Number(manifest.version.split('.')[0]);
if (major < 5 || major > 7) throw new Error(`the ceiling starts Elasticsearch 5.x to 7.x, not ${manifest.version}`);

/** GET /_cluster/health: the status, or undefined while the node does not answer. */
function health(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/_cluster/health', timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          resolve((JSON.parse(body) as { status?: string }).status);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

const conf = join(dir, 'config');
mkdirSync(conf, { recursive: true });
mkdirSync(join(dir, 'data'));
for (const f of ['jvm.options', 'log4j2.properties']) copyFileSync(join(home, 'config', f), join(conf, f));
const [httpPort, transportPort] = [await freePort(), await freePort()];
writeFileSync(
  join(conf, 'elasticsearch.yml'),
  [
    'cluster.name: "ceiling"',
    'node.name: "node-0"',
    `path.logs: "${dir}"`,
    'network.host: "127.0.0.1"',
    `http.port: ${httpPort}`,
    `${major >= 7 ? 'transport.port' : 'transport.tcp.port'}: ${transportPort}`,
    'discovery.type: "single-node"',
    '',
  ].join('\n'),
);
if (uid >= 0)
  for (const p of [dir, conf, join(dir, 'data'), ...['jvm.options', 'log4j2.properties', 'elasticsearch.yml'].map((f) => join(conf, f))])
    chownSync(p, uid, gid);

const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  ...manifest.env,
  ES_JAVA_OPTS: `-Xms${heap}m -Xmx${heap}m`,
  // 5.x reads jvm.options from ES_JVM_OPTIONS and its configuration from -Epath.conf; 6.x on from ES_PATH_CONF
  ...(major === 5 ? { ES_JVM_OPTIONS: join(conf, 'jvm.options') } : { ES_PATH_CONF: conf, ES_TMPDIR: dir }),
};
const args = [...(major === 5 ? [`-Epath.conf=${conf}`] : []), `-Epath.data=${join(dir, 'data')}`];
const t0 = now();
const node = spawn(manifest.program, args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...(uid >= 0 ? { uid, gid } : {}) });
let startedMs: number | undefined;
let stopping = false;
let output = '';
const exited = new Promise<number | null>((resolve) => node.once('exit', resolve));
node.stdout.on('data', (c: Buffer) => {
  output = (output + c.toString()).slice(-20_000);
  if (startedMs === undefined && /\] started\b/.test(output)) startedMs = now() - t0;
});
node.stderr.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
void exited.then((code) => {
  if (!stopping) {
    process.stderr.write(`the node exited with ${code} before it was green:\n${output.slice(-3000)}\n`);
    process.exit(1);
  }
});
await until('the node green or yellow', async () => ((await health(httpPort))?.match(/green|yellow/) ? true : undefined), 300_000, 20);
const healthyMs = now() - t0;
stopping = true;
node.kill('SIGTERM');
await exited;
process.stdout.write(`${JSON.stringify({ startedMs: startedMs ?? healthyMs, healthyMs })}\n`);
