import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_LIMITS } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type Hangar, startHangar } from '../../src/server.js';
import { accounts } from '../helpers/accounts.js';
import { PASSWORD } from '../helpers/hangar.js';
import { httpRequest } from './helpers/http.js';
import { type SlowConnection, openSlow } from './helpers/raw-socket.js';

/** The limits of this hangar: the defaults' mechanism with shorter times, so the test is quick. */
const LIMITS = { headersTimeoutMs: 1000, requestTimeoutMs: 2000, idleTimeoutMs: 1500, keepAliveTimeoutMs: 500, timeoutCheckMs: 100 };

/**
 * Slow clients cannot hold hangar: headers sent byte by byte are cut at the headers timeout,
 * bodies trickled at the request timeout, silent connections at the idle timeout, each with a
 * JSON 408 where an answer can still be given; meanwhile every other client is served.
 */
describe('slow clients', () => {
  let dir: string;
  let hangar: Hangar;
  let token: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-slow-'));
    const config = loadConfig(
      {},
      {
        HANGAR_PORT: '0',
        HANGAR_DATA_DIR: dir,
        HANGAR_RUNTIME: 'emulated',
        HANGAR_LOG_LEVEL: 'silent',
        HANGAR_HOST_ID: `slow-${process.pid}`,
        HANGAR_DRAIN_PERIOD: '0',
      },
    );
    hangar = await startHangar(config, undefined, { http: LIMITS });
    await accounts(hangar).createAccount('slow@example.com', PASSWORD);
    token = (await httpRequest(hangar.url, 'GET', '/v2/tokens/', { basic: ['slow@example.com', PASSWORD] })).json.data.token;
  });
  afterAll(async () => {
    await hangar?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Normal requests, one after the other, while `during` holds; how many were served. */
  async function serveWhile(during: () => boolean): Promise<number> {
    let served = 0;
    while (during()) {
      const res = await httpRequest(hangar.url, 'GET', '/v2/instances/', { headers: { 'x-auth-token': token } });
      expect(res.status).toBe(200);
      served++;
      await new Promise((r) => setTimeout(r, 20));
    }
    return served;
  }

  async function open(n: number, request: string, everyMs: number): Promise<SlowConnection[]> {
    const conns = await Promise.all(
      Array.from({ length: n }, (_, i) => openSlow(hangar.url, { localAddress: `127.0.1.${(i % 250) + 1}` })),
    );
    for (const c of conns) c.trickle(request, everyMs);
    return conns;
  }

  it('headers sent byte by byte: every such connection is cut with 408 REQUEST_TIMEOUT, and others are served meanwhile', async () => {
    const slow = await open(100, `GET /v2/instances/ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token}\r\nX-Slow: ${'a'.repeat(10_000)}`, 50);
    const served = await serveWhile(() => slow.some((c) => c.isOpen()));
    expect(served).toBeGreaterThan(5);
    for (const reply of await Promise.all(slow.map((c) => c.closed))) {
      expect(reply.status).toBe(408);
      expect(reply.json).toEqual({ message: expect.stringContaining('did not arrive in time'), code: 'REQUEST_TIMEOUT' });
    }
  });

  it('a body trickled byte by byte: cut with 408 REQUEST_TIMEOUT, nothing created, others served meanwhile', async () => {
    const body = JSON.stringify({
      name: 'trickled',
      plan: 500,
      service: 'redis',
      type: 'redis_ha_instance',
      version: '7.0.15',
      zone: 'US-Dallas',
      pad: 'x'.repeat(500),
    });
    const head = `POST /v2/instances/ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const slow = await Promise.all(Array.from({ length: 50 }, (_, i) => openSlow(hangar.url, { localAddress: `127.0.2.${i + 1}` })));
    for (const c of slow) {
      c.socket.write(head);
      c.trickle(body, 50);
    }
    const served = await serveWhile(() => slow.some((c) => c.isOpen()));
    expect(served).toBeGreaterThan(5);
    for (const reply of await Promise.all(slow.map((c) => c.closed))) {
      expect({ status: reply.status, code: reply.json?.code }).toEqual({ status: 408, code: 'REQUEST_TIMEOUT' });
    }
    expect((await httpRequest(hangar.url, 'GET', '/v2/instances/', { headers: { 'x-auth-token': token } })).json).toEqual({ data: [] });
  });

  it('a connection that sends nothing is closed (with a 408); so is an idle keep-alive connection after its answer', async () => {
    const silent = await openSlow(hangar.url);
    expect((await silent.closed).json).toMatchObject({ code: 'REQUEST_TIMEOUT' });
    const kept = await openSlow(hangar.url);
    kept.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`);
    expect((await kept.closed).status).toBe(200);
  });

  it('hangar serve applies the documented limits to its server', async () => {
    const d = mkdtempSync(join(tmpdir(), 'hangar-limits-'));
    const config = loadConfig(
      {},
      {
        HANGAR_PORT: '0',
        HANGAR_DATA_DIR: d,
        HANGAR_RUNTIME: 'emulated',
        HANGAR_LOG_LEVEL: 'silent',
        HANGAR_HOST_ID: `limits-${process.pid}`,
        HANGAR_DRAIN_PERIOD: '0',
      },
    );
    const h = await startHangar(config);
    try {
      const s = h.app.server as import('node:http').Server & { maxHeaderSize?: number; connectionsCheckingInterval?: number };
      expect({
        headersTimeoutMs: s.headersTimeout,
        requestTimeoutMs: s.requestTimeout,
        idleTimeoutMs: s.timeout,
        keepAliveTimeoutMs: s.keepAliveTimeout,
        timeoutCheckMs: s.connectionsCheckingInterval,
        maxHeaderBytes: s.maxHeaderSize,
      }).toEqual(HTTP_LIMITS);
      expect(HTTP_LIMITS).toEqual({
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 30_000,
        idleTimeoutMs: 30_000,
        keepAliveTimeoutMs: 5_000,
        timeoutCheckMs: 1_000,
        maxHeaderBytes: 16_384,
      });
    } finally {
      await h.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});
