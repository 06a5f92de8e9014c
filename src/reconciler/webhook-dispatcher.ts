import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { StreamEvent } from '../domain/operations.js';
import type { Keyring } from '../lib/secrets.js';
import { refusal, type TargetPolicy } from '../lib/ssrf-guard.js';
import { postWebhook, signature } from '../lib/webhook-http.js';
import type { Db } from '../store/database.js';
import {
  claimDueDeliveries,
  fanOutEvents,
  findDeliveryToSend,
  listDeletedWebhookIds,
  recordAttempt,
  releaseDelivery,
  removeWebhook,
  signingSecrets,
  type AttemptOutcome,
} from '../store/webhook-repository.js';
import { Controller } from './controller.js';
import { Ticker } from '../lib/ticker.js';

/** How often new events are fanned out and due deliveries claimed. */
const TICK_MS = 250;
/** One attempt, connection included, within this. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** A claim outlives the attempt it covers; a replica that dies holding one loses it after this. */
const CLAIM_MS = 30_000;
/** Attempts running at once on this replica. */
const CONCURRENCY = 8;
/** Events fanned out per transaction. */
const FAN_OUT_BATCH = 200;
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 15 * 60_000;

export interface WebhookDispatcherDeps {
  readonly db: Db;
  readonly keyring: Keyring;
  readonly log: Logger;
  readonly now: () => number;
  readonly config: Config;
  /** The body of an event's deliveries (the event record as the stream shows it). */
  readonly render: (e: StreamEvent) => string;
  /** Where deliveries may go (checked on the addresses connected to). */
  readonly policy: TargetPolicy;
  /** Identity of this replica in delivery claims. */
  readonly owner: string;
}

/** The wait before attempt `n + 1` after `n` failed ones: doubling from 1 s, at most 15 min, ±20 %. */
export function backoffMs(failed: number, random: () => number = Math.random): number {
  const base = Math.min(BACKOFF_FIRST_MS * 2 ** Math.max(0, failed - 1), BACKOFF_MAX_MS);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * Sends webhook deliveries, apart from the API and the reconciler: new events are fanned out to
 * the webhooks that want them (delivery rows, in the store, so nothing is lost across a restart),
 * then every replica claims due deliveries and attempts them with a bounded number at once, each
 * within ATTEMPT_TIMEOUT_MS. A failed attempt is retried with exponential backoff until
 * HANGAR_WEBHOOK_RETRY_WINDOW has passed since the event; then the delivery is FAILED. A slow
 * or dead receiver only ever holds one of this replica's delivery slots.
 */
export class WebhookDispatcher {
  private readonly controller: Controller;
  private readonly ticker = new Ticker(
    () => this.dispatch(),
    TICK_MS,
    () => {},
  );

  constructor(private readonly deps: WebhookDispatcherDeps) {
    this.controller = new Controller((id, signal) => this.attempt(id, signal), { workers: CONCURRENCY, log: deps.log });
  }

  start(): void {
    if (this.ticker.started) return;
    this.controller.start();
    this.ticker.start();
  }

  async stop(): Promise<void> {
    await this.ticker.stop();
    await this.controller.stop(ATTEMPT_TIMEOUT_MS);
  }

  /** Fans new events out, finishes deletions a dead replica left, and starts due attempts (or waits for the round in progress). */
  tick(): Promise<void> {
    return this.ticker.tick();
  }

  private async dispatch(): Promise<void> {
    const { db, now } = this.deps;
    try {
      while ((await fanOutEvents(db, this.deps.render, now(), FAN_OUT_BATCH)) === FAN_OUT_BATCH);
      for (const id of await listDeletedWebhookIds(db, now() - 2 * CLAIM_MS)) await removeWebhook(db, id);
      const room = 2 * CONCURRENCY - this.controller.depth;
      if (room > 0) for (const id of await claimDueDeliveries(db, this.deps.owner, now(), CLAIM_MS, room)) this.controller.enqueue(id);
    } catch (err) {
      this.deps.log.warn({ err }, 'webhook deliveries not dispatched');
    }
  }

  /** One attempt of a claimed delivery; records how it went. Never throws. */
  private async attempt(id: string, signal: AbortSignal): Promise<void> {
    const { db, keyring, config, owner } = this.deps;
    try {
      const found = await findDeliveryToSend(db, id);
      if (!found) return; // its webhook was deleted meanwhile
      const { delivery, webhook } = found;
      const sentAt = this.deps.now();
      const body = delivery.payload;
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'hangar-webhooks',
        'x-hangar-delivery': delivery.id,
        'x-hangar-event': delivery.event_kind,
        'x-hangar-event-id': String(delivery.event_id),
        'x-hangar-signature': signature(signingSecrets(webhook, keyring, sentAt), Math.floor(sentAt / 1000), body),
      };
      let status: number | null = null;
      let error: string | null = null;
      try {
        ({ status } = await postWebhook(new URL(webhook.url), body, headers, {
          timeoutMs: ATTEMPT_TIMEOUT_MS,
          check: (ip, port) => refusal(ip, port, this.deps.policy),
          signal,
        }));
        if (status < 200 || status > 299) error = `the receiver answered ${status}`;
      } catch (err) {
        if (signal.aborted) {
          await releaseDelivery(db, id, owner);
          return;
        }
        error = (err as Error).message || String(err);
      }
      const now = this.deps.now();
      const attempts = delivery.attempts + 1;
      let outcome: AttemptOutcome;
      if (error === null) outcome = { state: 'DELIVERED' };
      else {
        const retryAt = now + backoffMs(attempts);
        const windowEnd = Number(delivery.created_at) + config.webhookRetryWindowSeconds * 1000;
        outcome = retryAt > windowEnd ? { state: 'FAILED' } : { state: 'PENDING', retryAt };
        if (outcome.state === 'FAILED') {
          error = `gave up after ${attempts} attempt(s) in ${Math.round((now - Number(delivery.created_at)) / 1000)} s: ${error}`;
          this.deps.log.info({ webhook: webhook.id, delivery: id, err: error }, 'webhook delivery given up');
        }
      }
      await recordAttempt(db, id, owner, outcome, status, error, now);
    } catch (err) {
      this.deps.log.warn({ err, delivery: id }, 'webhook delivery attempt not recorded');
      await releaseDelivery(db, id, owner).catch(() => {});
    }
  }
}
