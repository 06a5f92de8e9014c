// Run inside a client host's network namespace: connects to a Redis behind the edge again and
// again (a new connection every 20 ms) until AUTH + PING answers PONG (`admitted`) or the edge
// closes the connection (`refused`), then prints {"at": <ms since the epoch>} and exits; after
// the time limit it prints {"at": null}. Started before the change it waits for, it tells when
// the change took effect to within a few ms, without a process start per try. It prints
// {"ready": true} after its first try, when that was not the outcome waited for.
import { connect } from 'node:net';

const [host, port, password, want, limitMs] = process.argv.slice(2);
const until = Date.now() + Number(limitMs);
const encode = (args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

/** One try: 'admitted' (PONG), 'refused' (closed by the edge), or 'other'. */
function attempt() {
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port) });
    let data = '';
    let done = false;
    const end = (outcome) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(1000, () => end('other'));
    socket.on('error', () => end('other'));
    socket.on('close', () => end(data.includes('+PONG') ? 'admitted' : 'refused'));
    socket.on('connect', () => socket.write(encode(['AUTH', password]) + encode(['PING'])));
    socket.on('data', (d) => {
      data += d.toString('utf8');
      if (data.includes('+PONG')) end('admitted');
    });
  });
}

for (let tries = 1; ; tries++) {
  const outcome = await attempt();
  if (tries === 1 && outcome !== want) process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  if (outcome === want) {
    process.stdout.write(`${JSON.stringify({ at: Date.now() })}\n`);
    break;
  }
  if (Date.now() > until) {
    process.stdout.write(`${JSON.stringify({ at: null })}\n`);
    break;
  }
  await new Promise((r) => setTimeout(r, 20));
}
