// Runs chromium inside a network namespace of its own (started as `unshare --net node browser-netns.mjs ...`),
// so that no change to the machine's network (an interface or address added by another test, a pod's veth)
// reaches the browser: Chromium fails the requests waiting for a connection with ERR_NETWORK_CHANGED on any
// address change it sees. The namespace has only its loopback; the two ports the tests need cross over Unix
// sockets (the filesystem is shared):
//   - the app: 127.0.0.1:<appPort> in here -> <dir>/app.sock, which the test forwards to the real server;
//   - DevTools: <dir>/cdp.sock -> chromium's DevTools port in here, which the test serves on a port of its own.
// Prints chromium's stderr through, then `browser-netns ready` once both crossings are up. Exits with chromium.
import { execFileSync, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';

const [appPort, dir, chromium, ...flags] = process.argv.slice(2);

/** Both ways between two sockets; either end closing closes the other. */
function splice(a, b) {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
}

const listen = (server, ...args) =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(...args, resolve);
  });

execFileSync('ip', ['link', 'set', 'lo', 'up']);
await listen(
  createServer((s) => splice(s, connect(join(dir, 'app.sock')))),
  Number(appPort),
  '127.0.0.1',
);

const child = spawn(chromium, [...flags, '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0'], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

let stderr = '';
let devtools = 0;
child.stderr.on('data', async (c) => {
  process.stderr.write(c);
  if (devtools) return;
  stderr += c.toString('utf8');
  const m = /DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr);
  if (!m) return;
  devtools = Number(m[1]);
  await listen(
    createServer((s) => splice(s, connect(devtools, '127.0.0.1'))),
    join(dir, 'cdp.sock'),
  );
  process.stderr.write('browser-netns ready\n');
});
