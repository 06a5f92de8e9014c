import { kindSelected, type StreamEvent } from '../domain/operations.js';
import type { DeliveryState, Webhook, WebhookDelivery } from '../domain/webhooks.js';
import { newObjectId } from '../lib/ids.js';
import type { Keyring } from '../lib/secrets.js';
import type { Db, WebhookDeliveryRow, WebhookRow } from './database.js';
import { latestEventId, listEventsAfter, lockEvents } from './event-repository.js';
import { getMeta } from './lease-repository.js';

/** Meta key: every event up to this id has its deliveries recorded. */
const FANNED_OUT = 'webhooks_fanned_out';

export function toWebhook(r: WebhookRow): Webhook {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    kinds: JSON.parse(r.kinds) as string[],
    description: r.description,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    previousSecretUntil: r.previous_secret_until === null ? null : Number(r.previous_secret_until),
  };
}

export function toDelivery(r: WebhookDeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    eventId: Number(r.event_id),
    eventKind: r.event_kind,
    state: r.state as DeliveryState,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at === null ? null : Number(r.next_attempt_at),
    lastStatus: r.last_status,
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    deliveredAt: r.delivered_at === null ? null : Number(r.delivered_at),
  };
}

/** The secrets that sign a webhook's deliveries now: the current one, and the previous one during its grace time. */
export function signingSecrets(r: WebhookRow, keyring: Keyring, now: number): string[] {
  const out = [keyring.decrypt(r.secret_enc)];
  if (r.previous_secret_enc !== null && r.previous_secret_until !== null && Number(r.previous_secret_until) > now)
    out.push(keyring.decrypt(r.previous_secret_enc));
  return out;
}

export interface NewWebhook {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  readonly kinds: readonly string[];
  readonly description: string;
  readonly secret: string;
  readonly createdAt: number;
}

/**
 * Records a webhook, at most `max` per account (counted in the transaction). It is sent the
 * events after the newest one now. False when the account has `max` already.
 */
export async function insertWebhook(db: Db, keyring: Keyring, w: NewWebhook, max: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // Under the events lock, as fan-outs are: the events up to `after_event_id` are all there.
    await lockEvents(trx);
    const n = await trx
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', w.accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(n.n) >= max) return false;
    const after = await latestEventId(trx);
    // The store's first webhook starts the fan-out here, so that the events after it are sent
    // whenever the dispatcher first looks (a hangar that has not fanned out yet would otherwise
    // take every event up to its first look for history).
    await startFanOut(trx, after);
    await trx
      .insertInto('webhooks')
      .values({
        id: w.id,
        account_id: w.accountId,
        url: w.url,
        kinds: JSON.stringify(w.kinds),
        description: w.description,
        secret_enc: keyring.encrypt(w.secret),
        previous_secret_enc: null,
        previous_secret_until: null,
        after_event_id: after,
        created_at: w.createdAt,
        updated_at: w.createdAt,
        deleted_at: null,
      })
      .execute();
    return true;
  });
}

export async function listWebhooks(db: Db, accountId: string): Promise<Webhook[]> {
  const rows = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toWebhook);
}

/** An account's webhook (not deleted), or undefined. */
export async function findWebhook(db: Db, accountId: string, id: string): Promise<Webhook | undefined> {
  const r = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return r && toWebhook(r);
}

/** Marks a webhook deleted: no delivery of it starts from now on. True when it was there. */
export async function markWebhookDeleted(db: Db, accountId: string, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('webhooks')
    .set({ deleted_at: now, updated_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Removes a webhook and its delivery records. */
export async function removeWebhook(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
    await trx.deleteFrom('webhooks').where('id', '=', id).execute();
  });
}

/** Webhooks marked deleted whose rows are still there (a replica died between the mark and the removal). */
export async function listDeletedWebhookIds(db: Db, before: number): Promise<string[]> {
  const rows = await db.selectFrom('webhooks').select('id').where('deleted_at', '<', before).execute();
  return rows.map((r) => r.id);
}

/** Attempts of a webhook's deliveries in flight now (claimed, and the claim not expired). */
export async function countAttemptsInFlight(db: Db, webhookId: string, now: number): Promise<number> {
  const r = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('webhook_id', '=', webhookId)
    .where('lease_owner', 'is not', null)
    .where('lease_expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A new secret signs from now on; the old one also signs until `previousUntil`. True when the webhook was there. */
export async function rotateWebhookSecret(
  db: Db,
  keyring: Keyring,
  accountId: string,
  id: string,
  secret: string,
  now: number,
  previousUntil: number,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .selectFrom('webhooks')
      .select('secret_enc')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!r) return false;
    await trx
      .updateTable('webhooks')
      .set({
        secret_enc: keyring.encrypt(secret),
        previous_secret_enc: r.secret_enc,
        previous_secret_until: previousUntil,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
    return true;
  });
}

/**
 * Records the deliveries of the events not fanned out yet (at most `batch` events), each event
 * to each live webhook of its account that wants its kind and was there before it. One
 * transaction under the events lock, which a new webhook takes too: a webhook is either seen by
 * a fan-out or created after the events it covered. The progress mark moves conditionally: of
 * replicas doing this at once, one records and the others find nothing to do. Returns how many
 * events were fanned out.
 */
export async function fanOutEvents(db: Db, render: (e: StreamEvent) => string, now: number, batch: number): Promise<number> {
  // Nothing new (the usual case): no transaction, no lock.
  const seen = await getMeta(db, FANNED_OUT);
  if (seen !== undefined && (await latestEventId(db)) <= Number(seen)) return 0;
  return db
    .transaction()
    .execute(async (trx) => {
      await lockEvents(trx);
      const mark = await getMeta(trx, FANNED_OUT);
      if (mark === undefined) {
        // No webhook was ever registered in this store (the first one sets the mark): the events
        // so far are history, sent to no one.
        await startFanOut(trx, await latestEventId(trx));
        return 0;
      }
      const events = await listEventsAfter(trx, { afterId: Number(mark), limit: batch });
      if (events.length === 0) return 0;
      const last = events[events.length - 1]!.id;
      const hooks = (await trx.selectFrom('webhooks').selectAll().where('deleted_at', 'is', null).execute()).map((r) => ({
        ...toWebhook(r),
        after: Number(r.after_event_id),
      }));
      const rows = [];
      for (const e of events) {
        for (const h of hooks) {
          if (h.accountId !== e.accountId || e.id <= h.after || !kindSelected(e.kind, h.kinds)) continue;
          rows.push({
            id: newObjectId(now),
            webhook_id: h.id,
            account_id: e.accountId,
            event_id: e.id,
            event_kind: e.kind,
            payload: render(e),
            state: 'PENDING',
            attempts: 0,
            next_attempt_at: now,
            last_status: null,
            last_error: null,
            created_at: now,
            updated_at: now,
            delivered_at: null,
            lease_owner: null,
            lease_expires_at: null,
          });
        }
      }
      for (let i = 0; i < rows.length; i += 100) {
        await trx
          .insertInto('webhook_deliveries')
          .values(rows.slice(i, i + 100))
          .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
          .execute();
      }
      const moved = await trx
        .updateTable('meta')
        .set({ value: String(last) })
        .where('key', '=', FANNED_OUT)
        .where('value', '=', mark)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) === 0) throw new FanOutRace();
      return events.length;
    })
    .catch((err: unknown) => {
      if (err instanceof FanOutRace) return 0;
      throw err;
    });
}

class FanOutRace extends Error {}

/** Sets where the fan-out starts (the events up to `eventId` are not sent), unless it has started. */
async function startFanOut(trx: Db, eventId: number): Promise<void> {
  await trx
    .insertInto('meta')
    .values({ key: FANNED_OUT, value: String(eventId) })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
}

/** Claims up to `limit` deliveries due now (of live webhooks) for `owner` until `now + leaseMs`; returns their ids. */
export async function claimDueDeliveries(db: Db, owner: string, now: number, leaseMs: number, limit: number): Promise<string[]> {
  const due = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select('d.id')
    .where('d.state', '=', 'PENDING')
    .where('d.next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('d.lease_owner', 'is', null), eb('d.lease_expires_at', '<', now)]))
    .where('w.deleted_at', 'is', null)
    .orderBy('d.next_attempt_at')
    .limit(limit)
    .execute();
  const claimed: string[] = [];
  for (const { id } of due) {
    const r = await db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: owner, lease_expires_at: now + leaseMs })
      .where('id', '=', id)
      .where('state', '=', 'PENDING')
      .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', now)]))
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) > 0) claimed.push(id);
  }
  return claimed;
}

/** A claimed delivery with what sending it needs: the payload, the URL and the webhook's row (secrets sealed). */
export async function findDeliveryToSend(db: Db, id: string): Promise<{ delivery: WebhookDeliveryRow; webhook: WebhookRow } | undefined> {
  const delivery = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  if (!delivery) return undefined;
  const webhook = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', delivery.webhook_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return webhook && { delivery, webhook };
}

/** How an attempt went: delivered, to be tried again at `retryAt`, or given up. */
export type AttemptOutcome =
  | { readonly state: 'DELIVERED' }
  | { readonly state: 'PENDING'; readonly retryAt: number }
  | { readonly state: 'FAILED' };

/** Records an attempt of a delivery claimed by `owner` and lets the claim go. */
export async function recordAttempt(
  db: Db,
  id: string,
  owner: string,
  outcome: AttemptOutcome,
  status: number | null,
  error: string | null,
  now: number,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      state: outcome.state,
      attempts: eb('attempts', '+', 1),
      last_status: status,
      last_error: error === null ? null : error.slice(0, 500),
      next_attempt_at: outcome.state === 'PENDING' ? outcome.retryAt : null,
      delivered_at: outcome.state === 'DELIVERED' ? now : null,
      updated_at: now,
      lease_owner: null,
      lease_expires_at: null,
    }))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Lets a claim go without an attempt (hangar is stopping). */
export async function releaseDelivery(db: Db, id: string, owner: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/** A webhook's deliveries, newest first; older than delivery `before` when given. */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  opts: { limit: number; beforeEventId?: number; states?: readonly string[] },
): Promise<WebhookDelivery[]> {
  let q = db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
  if (opts.beforeEventId !== undefined) q = q.where('event_id', '<', opts.beforeEventId);
  if (opts.states && opts.states.length > 0) q = q.where('state', 'in', opts.states);
  const rows = await q.orderBy('event_id', 'desc').limit(opts.limit).execute();
  return rows.map(toDelivery);
}

/** Removes finished delivery records last changed before `before`, at most `batch`. */
export async function pruneDeliveries(db: Db, before: number, batch: number): Promise<number> {
  const old = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('state', 'in', ['DELIVERED', 'FAILED'])
    .where('updated_at', '<', before)
    .limit(batch)
    .execute();
  if (old.length === 0) return 0;
  await db
    .deleteFrom('webhook_deliveries')
    .where(
      'id',
      'in',
      old.map((r) => r.id),
    )
    .execute();
  return old.length;
}
