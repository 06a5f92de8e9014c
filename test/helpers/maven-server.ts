import { createHash } from 'node:crypto';
import { type Server, type ServerResponse, createServer } from 'node:http';
import { freePort } from './ports.js';

/** How a file is served: whole, cut off halfway (the connection closed), or half then nothing more. */
export type Serving = 'whole' | 'cut' | 'stall';

/**
 * A Maven repository of the test's own on loopback: files under `<base>/<path>`, each with a
 * `.sha1` beside it (the right one, a given one, or none), as Maven Central lays them out.
 */
export interface MavenServer {
  /** `http://127.0.0.1:<port>/maven2` */
  readonly base: string;
  /** Paths asked for, in order. */
  readonly requests: string[];
  /** Serves `data` at `path`; `sha1` overrides the `.sha1` beside it (null: none). */
  put(path: string, data: Buffer, opts?: { sha1?: string | null; serving?: Serving }): void;
  close(): Promise<void>;
}

export const sha1Of = (data: Buffer): string => createHash('sha1').update(data).digest('hex');

export async function startMavenServer(): Promise<MavenServer> {
  const files = new Map<string, { data: Buffer; serving: Serving }>();
  const requests: string[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/maven2\//, '');
    requests.push(path);
    const file = files.get(path);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': file.data.length, 'content-type': 'application/octet-stream' });
    if (file.serving === 'whole') {
      res.end(file.data);
      return;
    }
    res.write(file.data.subarray(0, file.data.length >> 1));
    if (file.serving === 'cut') setTimeout(() => res.destroy(), 50);
    else open.add(res);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${port}/maven2`,
    requests,
    put(path, data, opts = {}) {
      files.set(path, { data, serving: opts.serving ?? 'whole' });
      const sha1 = opts.sha1 === undefined ? sha1Of(data) : opts.sha1;
      if (sha1 === null) files.delete(`${path}.sha1`);
      else files.set(`${path}.sha1`, { data: Buffer.from(sha1), serving: 'whole' });
    },
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
