import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/client/index.js';
import { loadConfig } from '../../src/config.js';
import { startHangar, type Hangar } from '../../src/server.js';
import { listEventsAfter } from '../../src/store/event-repository.js';
import { redisBody } from '../helpers/bodies.js';
import { DIALECTS } from '../helpers/database.js';
import { type Account, type TestHangar, startTestHangar } from '../helpers/hangar.js';
import { type Received, Receiver } from '../helpers/webhook-receiver.js';

// Webhooks on a listening hangar (emulated runtime), delivered to receivers this test starts on
// 127.0.0.1 (so the hangar allows private targets and http). Signatures are checked with the
// client's WebCrypto helper and, independently, with node:crypto.

const WAIT = { timeout: 30_000, interval: 50 };

/** The signature check a receiver in another language would do: node:crypto, by hand. */
function signedBy(secret: string, r: Received): boolean {
  const header = String(r.headers['x-hangar-signature']);
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  const expected = createHmac('sha256', secret).update(`${t}.${r.body}`).digest();
  return [...header.matchAll(/v1=([0-9a-f]{64})/g)].some((m) => timingSafeEqual(Buffer.from(m[1]!, 'hex'), expected));
}

const succeededFor = (name: string) => (rs: Received[]) =>
  rs.some((r) => r.event?.kind === 'operation.succeeded' && r.event.instance_name === name);

describe.each(DIALECTS)('webhooks (%s)', (dialect) => {
  let th: TestHangar;
  let alice: Account;
  let bob: Account;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await Receiver.start();
    receivers.push(r);
    return r;
  };

  beforeAll(async () => {
    th = await startTestHangar({ dialect, listen: true, env: { HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    alice = await th.signup();
    bob = await th.signup();
  });
  afterEach(async () => {
    for (const r of receivers.splice(0)) await r.close();
  });
  afterAll(() => th?.close());

  it('200: the secret is in the creation answer only; the webhook is listed and read without it; another account gets 404', async () => {
    const r = await receiver();
    const created = await alice.post('/v2/webhooks/', { url: r.url, kinds: ['operation'], description: 'ci' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const w = created.body.data;
    expect(w).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      url: r.url,
      kinds: ['operation'],
      description: 'ci',
      secret: expect.stringMatching(/^whsec_/),
    });
    const listed = (await alice.get('/v2/webhooks/')).body.data;
    expect(listed.find((x: any) => x.id === w.id)).toEqual(Object.fromEntries(Object.entries(w).filter(([k]) => k !== 'secret')));
    expect(JSON.stringify(listed)).not.toContain(w.secret);
    expect(JSON.stringify((await alice.get(`/v2/webhooks/${w.id}/`)).body)).not.toContain(w.secret);
    for (const res of [
      await bob.get(`/v2/webhooks/${w.id}/`),
      await bob.delete(`/v2/webhooks/${w.id}/`),
      await bob.get(`/v2/webhooks/${w.id}/deliveries`),
      await bob.post(`/v2/webhooks/${w.id}/rotate-secret`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('WEBHOOK_NOT_FOUND');
    }
    expect((await alice.delete(`/v2/webhooks/${w.id}/`)).status).toBe(200);
    expect((await alice.get(`/v2/webhooks/${w.id}/`)).status).toBe(404);
  });

  it('delivers every event of the kinds asked for once per delivery id, signed; each event to each webhook once', async () => {
    const all = await receiver();
    const some = await receiver();
    const wAll = (await alice.post('/v2/webhooks/', { url: all.url })).body.data;
    const wSome = (await alice.post('/v2/webhooks/', { url: some.url, kinds: ['operation.succeeded', 'instance.state'] })).body.data;
    await alice.ready(redisBody('hooked'));
    await all.until('the create', succeededFor('hooked'));
    await some.until('the create', succeededFor('hooked'));
    const account = (await alice.get('/v2/whoami/')).body.data.account_id;
    const stored = (await listEventsAfter(th.hangar.store.db, { afterId: 0, accountId: account, limit: 10_000 })).filter(
      (e) => e.instanceName === 'hooked',
    );
    await all.until('every event', (rs) => stored.every((e) => rs.some((r) => r.event.id === e.id)));
    for (const [rcv, w, wanted] of [
      [all, wAll, stored],
      [some, wSome, stored.filter((e) => e.kind === 'operation.succeeded' || e.kind === 'instance.state')],
    ] as const) {
      const got = rcv.received.filter((r) => r.event.instance_name === 'hooked');
      expect(got.map((r) => r.event.id).sort((a, b) => a - b)).toEqual(wanted.map((e) => e.id));
      expect(new Set(got.map((r) => r.delivery)).size).toBe(got.length);
      for (const r of got) {
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers['x-hangar-event']).toBe(r.event.kind);
        expect(r.headers['x-hangar-event-id']).toBe(String(r.event.id));
        expect(r.headers['x-hangar-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
        expect(await verifyWebhookSignature(w.secret, String(r.headers['x-hangar-signature']), r.body)).toBe(true);
        expect(signedBy(w.secret, r)).toBe(true);
        expect(await verifyWebhookSignature('whsec_not-the-secret', String(r.headers['x-hangar-signature']), r.body)).toBe(false);
        expect(await verifyWebhookSignature(w.secret, String(r.headers['x-hangar-signature']), `${r.body} `)).toBe(false);
      }
    }
    const delivered = (await alice.get(`/v2/webhooks/${wAll.id}/deliveries?limit=500`)).body.data.filter((d: any) =>
      stored.some((e) => e.id === d.event_id),
    );
    expect(delivered).toHaveLength(stored.length);
    expect(
      delivered.every(
        (d: any) =>
          d.state === 'DELIVERED' && d.attempts === 1 && d.last_status === 200 && d.last_error === null && d.date_delivered !== null,
      ),
    ).toBe(true);
    // an old signature is refused by the verifier (replay)
    const r0 = all.received[0]!;
    expect(
      await verifyWebhookSignature(wAll.secret, String(r0.headers['x-hangar-signature']), r0.body, { now: Date.now() + 3600_000 }),
    ).toBe(false);
  });

  it('retries a delivery answered 500 with backoff, the same delivery id and body, until a 2xx', async () => {
    const r = await receiver();
    r.answer = (_, attempt) => (attempt <= 2 ? 500 : 200);
    const w = (await alice.post('/v2/webhooks/', { url: r.url, kinds: ['operation.succeeded'] })).body.data;
    await alice.ready(redisBody('retried'));
    await expect
      .poll(async () => (await alice.get(`/v2/webhooks/${w.id}/deliveries`)).body.data.map((d: any) => d.state), WAIT)
      .toEqual(['DELIVERED']);
    const [d] = (await alice.get(`/v2/webhooks/${w.id}/deliveries`)).body.data;
    expect(d).toMatchObject({
      state: 'DELIVERED',
      attempts: 3,
      last_status: 200,
      last_error: null,
      event_kind: 'operation.succeeded',
      next_attempt: null,
    });
    const attempts = r.deliveries().get(d.id)!;
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    for (const a of attempts) expect(signedBy(w.secret, a)).toBe(true);
    // the waits grow: at least 1 s, then at least 2 s (less 20 % of jitter)
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(750);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(1500);
  });

  it('after DELETE has answered, the receiver gets nothing more', async () => {
    const gone = await receiver();
    const kept = await receiver();
    const wGone = (await alice.post('/v2/webhooks/', { url: gone.url })).body.data;
    await alice.post('/v2/webhooks/', { url: kept.url, kinds: ['operation.succeeded'] });
    await alice.ready(redisBody('before-delete'));
    await gone.until('the first create', succeededFor('before-delete'));
    expect((await alice.delete(`/v2/webhooks/${wGone.id}/`)).status).toBe(200);
    const deletedAt = Date.now();
    await alice.ready(redisBody('after-delete'));
    await kept.until('the second create', succeededFor('after-delete'));
    expect(gone.received.filter((x) => x.at >= deletedAt)).toEqual([]);
    expect((await alice.get(`/v2/webhooks/${wGone.id}/deliveries`)).status).toBe(404);
  });

  it('a receiver that never answers slows nothing; deleting its webhook waits for the attempt in flight, then nothing more arrives', async () => {
    const stuck = await receiver();
    stuck.answer = () => 'hang';
    const w = (await alice.post('/v2/webhooks/', { url: stuck.url })).body.data;
    await alice.ready(redisBody('while-stuck'));
    await stuck.until('a request it holds', () => stuck.open > 0);
    // the API and the reconciler go on meanwhile
    await alice.ready(redisBody('still-fine'));
    expect((await alice.get('/v2/instances/')).status).toBe(200);
    expect((await alice.delete(`/v2/webhooks/${w.id}/`)).status).toBe(200);
    const deletedAt = Date.now();
    // the attempts ended before the answer; the receiver, in this busy process, may take a moment
    // to see their connections close (an attempt not waited for would hold its own for 10 s)
    const openUntil = Date.now() + 2000;
    while (stuck.open > 0 && Date.now() < openUntil) await new Promise((r) => setTimeout(r, 20));
    expect(stuck.open).toBe(0);
    await alice.ready(redisBody('after-stuck'));
    expect(stuck.received.filter((x) => x.at >= deletedAt)).toEqual([]);
  }, 60_000);

  it('a rotated secret signs from then on, and the old one too for a day: two v1= values', async () => {
    const r = await receiver();
    const w = (await alice.post('/v2/webhooks/', { url: r.url, kinds: ['operation.succeeded'] })).body.data;
    const rotated = await alice.post(`/v2/webhooks/${w.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(w.secret);
    expect(rotated.body.data.previous_secret_until.$date).toBeGreaterThan(Date.now() + 23 * 3600_000);
    await alice.ready(redisBody('rotated'));
    await r.until('the create', succeededFor('rotated'));
    const got = r.received.find((x) => x.event.instance_name === 'rotated')!;
    expect(String(got.headers['x-hangar-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(await verifyWebhookSignature(rotated.body.data.secret, String(got.headers['x-hangar-signature']), got.body)).toBe(true);
    expect(await verifyWebhookSignature(w.secret, String(got.headers['x-hangar-signature']), got.body)).toBe(true);
    expect((await alice.post(`/v2/webhooks/${w.id}/rotate-secret`, { secret: 'mine' })).status).toBe(400);
  });

  it('deliveries are not lost across a restart: those a down receiver refused are sent after it', async () => {
    const r = await receiver();
    r.answer = () => 503;
    const w = (await alice.post('/v2/webhooks/', { url: r.url, kinds: ['operation'] })).body.data;
    await alice.ready(redisBody('across-restart'));
    await r.until('a refused attempt', succeededFor('across-restart'));
    await th.restart();
    r.answer = () => 200;
    await expect
      .poll(async () => (await alice.get(`/v2/webhooks/${w.id}/deliveries`)).body.data.every((d: any) => d.state === 'DELIVERED'), WAIT)
      .toBe(true);
    const deliveries = (await alice.get(`/v2/webhooks/${w.id}/deliveries`)).body.data;
    // operation.created and operation.succeeded at least (a pass shorter than a quarter second writes no progress between)
    expect(deliveries.length).toBeGreaterThanOrEqual(2);
    expect(deliveries.map((d: any) => d.event_kind)).toEqual(expect.arrayContaining(['operation.created', 'operation.succeeded']));
    for (const d of deliveries) expect(r.deliveries().get(d.id)!.at(-1)!.event.id).toBe(d.event_id);
  });

  it('400: kinds that are no kinds, a body field it does not take; 409 past 20 webhooks', async () => {
    const carol = await th.signup();
    expect((await carol.post('/v2/webhooks/', { url: 'http://127.0.0.1:9/x', kinds: ['instance.exploded'] })).body).toMatchObject({
      code: 'INVALID_VALUE',
      field: 'kinds',
    });
    expect((await carol.post('/v2/webhooks/', { url: 'http://127.0.0.1:9/x', secret: 'mine' })).status).toBe(400);
    expect((await carol.post('/v2/webhooks/', { url: 'not a url' })).body).toMatchObject({ code: 'INVALID_VALUE', field: 'url' });
    for (let i = 0; i < 20; i++) expect((await carol.post('/v2/webhooks/', { url: `http://127.0.0.1:9/${i}` })).status).toBe(200);
    expect((await carol.post('/v2/webhooks/', { url: 'http://127.0.0.1:9/21' })).body).toMatchObject({ code: 'QUOTA_EXCEEDED' });
  });

  it("400 TARGET_NOT_ALLOWED, even with private targets allowed: hangar's own API and port range, cloud metadata", async () => {
    const api = Number(new URL(th.url).port);
    const range = th.config.portRange.first + 5;
    for (const url of [
      `http://127.0.0.1:${api}/v2/instances/`,
      `http://localhost:${api}/`,
      `http://127.0.0.1:${range}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
    ]) {
      const res = await alice.post('/v2/webhooks/', { url });
      expect(res.status, url).toBe(400);
      expect(res.body, url).toMatchObject({ code: 'TARGET_NOT_ALLOWED', field: 'url' });
    }
  });
});

describe('webhook targets without the settings', () => {
  let th: TestHangar;
  let alice: Account;
  beforeAll(async () => {
    th = await startTestHangar({ env: { HANGAR_WEBHOOK_RETRY_WINDOW: '2' } });
    alice = await th.signup();
  });
  afterAll(() => th?.close());

  it.each([
    ['https://127.0.0.1/hook', 'loopback'],
    ['https://localhost:8443/hook', 'loopback'],
    ['https://[::1]/hook', 'loopback'],
    ['https://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['https://10.0.0.7/hook', 'private'],
    ['https://192.168.1.20/hook', 'private'],
    ['https://169.254.10.1/hook', 'link-local'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['https://0.0.0.0/hook', 'unspecified'],
  ])('400 TARGET_NOT_ALLOWED: %s (%s)', async (url, why) => {
    const res = await alice.post('/v2/webhooks/', { url });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'TARGET_NOT_ALLOWED', field: 'url', message: expect.stringContaining(why) });
  });

  it('400: http:// without HANGAR_WEBHOOK_ALLOW_HTTP, a URL with credentials; 200: a public https address', async () => {
    expect((await alice.post('/v2/webhooks/', { url: 'http://93.184.215.14/hook' })).body).toMatchObject({
      code: 'INVALID_VALUE',
      message: expect.stringContaining('HANGAR_WEBHOOK_ALLOW_HTTP'),
    });
    expect((await alice.post('/v2/webhooks/', { url: 'https://user:pw@93.184.215.14/hook' })).body).toMatchObject({
      code: 'INVALID_VALUE',
      field: 'url',
    });
    expect((await alice.post('/v2/webhooks/', { url: 'https://93.184.215.14/hook' })).status).toBe(200);
  });

  it('a delivery whose target became refused (a restart without the setting) is not sent, and says why; it is FAILED after the retry window', async () => {
    const r = await Receiver.start();
    try {
      await th.restart({ HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true', HANGAR_WEBHOOK_RETRY_WINDOW: '2' });
      const w = (await alice.post('/v2/webhooks/', { url: r.url, kinds: ['operation.created'] })).body.data;
      await th.restart({ HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_RETRY_WINDOW: '2' });
      const created = await alice.post('/v2/instances/', redisBody('refused-target'));
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      // the whole delivery is polled, so that a miss shows its attempts and last error
      const newest = async () => {
        const res = await alice.get(`/v2/webhooks/${w.id}/deliveries`);
        return res.status === 200 ? res.body.data[0] : { status: res.status, body: res.body };
      };
      await expect.poll(newest, WAIT).toMatchObject({ state: 'FAILED' });
      const [d] = (await alice.get(`/v2/webhooks/${w.id}/deliveries`)).body.data;
      expect(d.last_error).toMatch(/^gave up after \d+ attempt\(s\) in \d+ s: 127\.0\.0\.1 is a loopback address/);
      expect(d.last_status).toBeNull();
      expect(r.received).toEqual([]);
    } finally {
      await r.close();
    }
    // two restarts of hangar, then a wait of up to WAIT for the verdict
  }, 90_000);
});

describe.runIf(DIALECTS.includes('postgres'))('webhooks with two replicas on one PostgreSQL', () => {
  let th: TestHangar;
  let other: Hangar;
  let alice: Account;
  let r: Receiver;

  beforeAll(async () => {
    const env = { HANGAR_WEBHOOK_ALLOW_HTTP: 'true', HANGAR_WEBHOOK_ALLOW_PRIVATE: 'true' };
    th = await startTestHangar({ dialect: 'postgres', listen: true, env });
    alice = await th.signup();
    other = await startHangar(
      loadConfig(
        {},
        {
          ...env,
          HANGAR_PORT: '0',
          HANGAR_DATA_DIR: th.config.dataDir,
          HANGAR_RUNTIME: 'emulated',
          HANGAR_LOG_LEVEL: 'silent',
          HANGAR_HOST_ID: th.config.hostId,
          HANGAR_DATABASE_URL: th.config.databaseUrl!,
          HANGAR_REPLICA_ID: 'second-replica',
        },
      ),
      undefined,
      { listen: true },
    );
    r = await Receiver.start();
  });
  afterAll(async () => {
    await r?.close();
    await other?.close();
    await th?.close();
  });

  it('each event is delivered once, though both replicas fan out and deliver', async () => {
    const w = (await alice.post('/v2/webhooks/', { url: r.url })).body.data;
    for (const name of ['rep-1', 'rep-2', 'rep-3']) await alice.post('/v2/instances/', redisBody(name));
    for (const name of ['rep-1', 'rep-2', 'rep-3']) await r.until(name, succeededFor(name));
    await expect
      .poll(
        async () => (await alice.get(`/v2/webhooks/${w.id}/deliveries?limit=500`)).body.data.every((d: any) => d.state === 'DELIVERED'),
        WAIT,
      )
      .toBe(true);
    const ids = r.received.map((x) => x.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(r.received.map((x) => x.delivery)).size).toBe(ids.length);
  });
});
