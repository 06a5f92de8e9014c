// A minimal Redis client run inside a network namespace: one connection, then one command per line of stdin (a JSON array), one JSON answer per line
// on stdout: {"reply":...}, {"error":...}, or {"closed":true} once the server closed the connection.
import { connect } from 'node:net';
import { createInterface } from 'node:readline';

const [host, port] = process.argv.slice(2);
const socket = connect({ host, port: Number(port) });
let buffer = '';
const waiting = [];
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const encode = (args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

function parse() {
  // simple replies, errors, integers and bulk strings: what the tests send gets
  for (;;) {
    const end = buffer.indexOf('\r\n');
    if (end < 0) return;
    const type = buffer[0];
    const line = buffer.slice(1, end);
    if (type === '$') {
      const len = Number(line);
      if (len < 0) {
        buffer = buffer.slice(end + 2);
        waiting.shift()?.({ reply: null });
        continue;
      }
      if (buffer.length < end + 2 + len + 2) return;
      const value = buffer.slice(end + 2, end + 2 + len);
      buffer = buffer.slice(end + 2 + len + 2);
      waiting.shift()?.({ reply: value });
      continue;
    }
    buffer = buffer.slice(end + 2);
    if (type === '-') waiting.shift()?.({ error: line });
    else if (type === ':') waiting.shift()?.({ reply: Number(line) });
    else waiting.shift()?.({ reply: line });
  }
}

socket.on('data', (d) => {
  buffer += d.toString('utf8');
  parse();
});
const closed = () => {
  for (const w of waiting.splice(0)) w({ closed: true });
  say({ closed: true });
  process.exit(0);
};
socket.on('close', closed);
socket.on('error', () => {});
socket.on('connect', () => {
  createInterface({ input: process.stdin }).on('line', (line) => {
    waiting.push(say);
    socket.write(encode(JSON.parse(line)));
  });
});
