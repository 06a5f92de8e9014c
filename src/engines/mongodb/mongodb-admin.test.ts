import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MongoAdmin, clientOptions, targetUri } from './mongodb-admin.js';
import { probeMongo } from './mongodb-probe.js';

// No mongod can be installed on this machine: these tests run the real driver against what can
// run here (a closed port, a TCP server that is not MongoDB) to check what hangar relies on.

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A TCP server that records each client's source address and closes the connection (it speaks no MongoDB). */
async function closingServer(): Promise<{ port: number; sources: string[] }> {
  const sources: string[] = [];
  const server = createServer((socket) => {
    sources.push(socket.remoteAddress ?? '');
    socket.destroy();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, sources };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const { port } = await closingServer();
  await new Promise((r) => servers.pop()!.close(r));
  return port;
}

describe('clientOptions', () => {
  it("connects to one process directly, as hangar's user on admin", () => {
    const o = clientOptions({ instanceId: 'i', ports: [20001], adminSecret: 's3cret' });
    expect(o).toMatchObject({ directConnection: true, auth: { username: 'hangar', password: 's3cret' }, authSource: 'admin' });
    expect(o.replicaSet).toBeUndefined();
    expect(targetUri({ instanceId: 'i', ports: [20001] })).toBe('mongodb://127.0.0.1:20001/');
  });

  it('finds the primary of a replica set, and connects without credentials for the localhost exception', () => {
    const o = clientOptions({ instanceId: 'i', ports: [20001, 20002, 20003], replicaSet: 'rs-i' });
    expect(o).toMatchObject({ replicaSet: 'rs-i' });
    expect(o.directConnection).toBeUndefined();
    expect(o.auth).toBeUndefined();
    expect(targetUri({ instanceId: 'i', ports: [20001, 20002, 20003] })).toBe('mongodb://127.0.0.1:20001,127.0.0.1:20002,127.0.0.1:20003/');
  });
});

describe('MongoAdmin with the real driver', () => {
  it('reports a process that does not listen as ECONNREFUSED (what tells a moved port from a slow start)', async () => {
    const admin = new MongoAdmin();
    try {
      const port = await closedPort();
      await expect(admin.commands({ instanceId: 'i', ports: [port] }).run('admin', { isMaster: 1 })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await admin.close();
    }
  });
});

describe('probeMongo', () => {
  it('connects from the probe source address and fails with where it probed', async () => {
    const server = await closingServer();
    const target = { host: '127.0.0.1', port: server.port, localAddress: '127.77.0.1' };
    await expect(probeMongo(target, 'secret', 500)).rejects.toThrow(
      new RegExp(`probe of 127\\.0\\.0\\.1:${server.port} from 127\\.77\\.0\\.1`),
    );
    expect(server.sources.length).toBeGreaterThan(0);
    expect(new Set(server.sources)).toEqual(new Set(['127.77.0.1']));
  });
});
