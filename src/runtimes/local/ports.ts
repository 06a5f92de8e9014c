import { createServer } from 'node:net';

/** Whether a listening socket can be bound to `host:port` right now. */
function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(false);
      // An address this machine does not have: nothing of ours can listen there either, so it
      // says nothing about the port; the edge reports the address when it fails to bind it.
      else if (err.code === 'EADDRNOTAVAIL') resolve(true);
      else reject(err);
    });
    server.listen({ port, host }, () => server.close(() => resolve(true)));
  });
}

/**
 * Whether nothing listens on `port` on any of `hosts` (engines bind 127.0.0.1, the edge its
 * bind address), so the port can be handed to a new instance.
 */
export async function portIsFree(port: number, hosts: readonly string[]): Promise<boolean> {
  for (const host of new Set(hosts)) {
    if (!(await canBind(port, host))) return false;
  }
  return true;
}
