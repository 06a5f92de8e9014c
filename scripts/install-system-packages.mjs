#!/usr/bin/env node
// Runs before `npm start`: the local runtime needs redis-server and haproxy. On Debian and
// Ubuntu, installs what is missing with apt-get (as root, or through sudo); elsewhere, says
// what to install. Skipped when hangar runs on the emulated runtime.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const runtime =
  process.env.HANGAR_RUNTIME ?? (process.argv.includes('--runtime') ? process.argv[process.argv.indexOf('--runtime') + 1] : 'local');
if (runtime === 'emulated') process.exit(0);

const has = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;
const wanted = [
  { bin: process.env.HANGAR_REDIS_SERVER_BIN ?? 'redis-server', pkg: 'redis-server' },
  { bin: process.env.HANGAR_HAPROXY_BIN ?? 'haproxy', pkg: 'haproxy' },
];
const missing = wanted.filter((w) => !has(w.bin)).map((w) => w.pkg);
if (missing.length === 0) process.exit(0);

const command = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
if (!existsSync('/usr/bin/apt-get')) {
  console.error(
    `hangar's local runtime needs ${missing.join(' and ')}; install them with your package manager, or start with HANGAR_RUNTIME=emulated`,
  );
  process.exit(1);
}
const root = process.getuid?.() === 0;
if (!root && !has('sudo')) {
  console.error(`hangar's local runtime needs ${missing.join(' and ')}; run as root: ${command}`);
  process.exit(1);
}
console.error(`installing ${missing.join(' and ')} for hangar's local runtime: ${command}`);
const run = root
  ? spawnSync('sh', ['-c', command], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  : spawnSync('sudo', ['-E', 'sh', '-c', command], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
process.exit(run.status ?? 1);
