// A TCP relay in a process of its own: node tcp-relay.mjs LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT.
// Prints "ready" once it listens; every connection is piped to the target. A test whose process
// blocks (a synchronous kubectl) would otherwise leave the connections it relays waiting.
import { connect, createServer } from 'node:net';

const [host, port, targetHost, targetPort] = process.argv.slice(2);
const server = createServer((client) => {
  const upstream = connect(Number(targetPort), targetHost);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.pipe(upstream).pipe(client);
});
server.listen(Number(port), host, () => process.stdout.write('ready\n'));
