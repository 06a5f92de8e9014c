import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterHealth, healthProblem } from './elasticsearch-probe.js';

// No Elasticsearch can be installed on this machine: a stand-in HTTP server answers
// /_cluster/health as a node does, and records what it was sent.

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function standInNode(answer: { status: number; body: string }) {
  const seen: { path: string; auth: string | undefined; source: string | undefined }[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization, source: req.socket.remoteAddress });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, seen };
}

describe('clusterHealth', () => {
  it("reads the cluster's status, with hangar's credentials, from the probe source", async () => {
    const node = await standInNode({ status: 200, body: '{"cluster_name":"hangar-x","status":"yellow","number_of_nodes":1}' });
    const status = await clusterHealth(
      { host: '127.0.0.1', port: node.port, localAddress: '127.77.0.1' },
      { username: 'hangar', password: 'pw' },
    );
    expect(status).toBe('yellow');
    expect(node.seen).toEqual([
      { path: '/_cluster/health', auth: `Basic ${Buffer.from('hangar:pw').toString('base64')}`, source: '127.77.0.1' },
    ]);
  });

  it('sends no credentials to a node without security', async () => {
    const node = await standInNode({ status: 200, body: '{"status":"green"}' });
    expect(await clusterHealth({ host: '127.0.0.1', port: node.port }, undefined)).toBe('green');
    expect(node.seen[0]?.auth).toBeUndefined();
  });

  it('fails with the HTTP status of a refused login, and with the address of a node that does not listen', async () => {
    const node = await standInNode({ status: 401, body: '{"error":{"type":"security_exception"}}' });
    await expect(clusterHealth({ host: '127.0.0.1', port: node.port }, { username: 'hangar', password: 'wrong' })).rejects.toThrow(
      /HTTP 401.*security_exception/,
    );
    const port = node.port;
    await new Promise((r) => servers.pop()!.close(r));
    await expect(clusterHealth({ host: '127.0.0.1', port }, undefined)).rejects.toThrow(
      new RegExp(`127\\.0\\.0\\.1:${port}.*ECONNREFUSED`),
    );
  });
});

describe('healthProblem', () => {
  it('accepts green and yellow (a single node never assigns replicas), not red', () => {
    expect(healthProblem('green')).toBeUndefined();
    expect(healthProblem('yellow')).toBeUndefined();
    expect(healthProblem('red')).toBe('the cluster health is red');
  });
});
