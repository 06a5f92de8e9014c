import type { Logger } from 'pino';
import type { StreamEvent } from '../domain/operations.js';
import type { Db } from '../store/database.js';
import { eventsPrunedThrough, latestEventId, listEventsAfter } from '../store/event-repository.js';

/** How often this process reads new events from the store while someone follows the stream. */
const POLL_MS = 250;
/** Events read per query. */
const PAGE = 500;

export interface Subscriber {
  readonly accountId: string;
  /** Whether an event of the account is wanted (kinds, instance). */
  readonly wants: (e: StreamEvent) => boolean;
  /** Called with each wanted event, in id order, once. */
  readonly send: (e: StreamEvent) => void;
  /** Called when the stream closes (hangar stops): end the connection. */
  readonly onClose?: () => void;
}

interface Subscription extends Subscriber {
  /** Every event up to this id was looked at. */
  cursor: number;
  live: boolean;
  closed: boolean;
}

/**
 * The live stream of events of this process: one reader polls the store for new events (so
 * events written by any replica, by triggers or by requests, all arrive) and hands them to the
 * subscribers of their account. A subscriber that resumes from an older event first reads its
 * backlog from the store, then joins the live feed without a gap or a repeat. Events are in id
 * order; on PostgreSQL their writers take a lock so that ids commit in order (see
 * event-repository), which makes "everything up to the last id read" a safe cursor.
 */
export class EventStream {
  private readonly subs = new Set<Subscription>();
  private cursor: number | undefined;
  private starting: Promise<number> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly log: Logger | undefined,
  ) {}

  /**
   * Where a new subscriber starts: after `lastEventId` when it resumes, else after the newest
   * event now. `lost` when events after `lastEventId` were pruned (it should read the state again).
   */
  async start(lastEventId: number | undefined): Promise<{ cursor: number; lost: boolean }> {
    const latest = await this.latest();
    if (lastEventId === undefined) return { cursor: latest, lost: false };
    return { cursor: lastEventId, lost: lastEventId < (await eventsPrunedThrough(this.db)) };
  }

  /**
   * Sends the subscriber every wanted event of its account after `cursor`: first those in the
   * store, then each new one as it comes. Returns the function that ends the subscription.
   */
  async subscribe(sub: Subscriber, cursor: number): Promise<() => void> {
    if (this.closed) throw new Error('the event stream is closed');
    const s: Subscription = { ...sub, cursor, live: false, closed: false };
    this.subs.add(s);
    this.ensurePolling();
    const end = () => {
      s.closed = true;
      this.subs.delete(s);
      if (this.subs.size === 0) this.stopPolling();
    };
    try {
      await this.catchUp(s);
    } catch (err) {
      end();
      throw err;
    }
    return end;
  }

  /** Subscribers now. */
  get size(): number {
    return this.subs.size;
  }

  /** Stops reading and tells every subscriber (their connections end). */
  close(): void {
    this.closed = true;
    this.stopPolling();
    const subs = [...this.subs];
    this.subs.clear();
    for (const s of subs) {
      s.closed = true;
      s.onClose?.();
    }
  }

  private async latest(): Promise<number> {
    if (this.cursor !== undefined) return this.cursor;
    this.starting ??= latestEventId(this.db).then((id) => {
      this.cursor ??= id;
      return this.cursor;
    });
    try {
      return await this.starting;
    } finally {
      this.starting = undefined;
    }
  }

  /** Reads the subscriber's backlog from the store until it meets the live feed. */
  private async catchUp(s: Subscription): Promise<void> {
    for (;;) {
      const through = await this.latest();
      if (s.cursor >= through) {
        s.live = true;
        return;
      }
      const rows = await listEventsAfter(this.db, { afterId: s.cursor, accountId: s.accountId, throughId: through, limit: PAGE });
      if (s.closed) return;
      for (const e of rows) this.deliver(s, e);
      s.cursor = rows.length === PAGE ? rows[rows.length - 1]!.id : Math.max(s.cursor, through);
    }
  }

  private deliver(s: Subscription, e: StreamEvent): void {
    if (e.id <= s.cursor || e.accountId !== s.accountId) return;
    s.cursor = e.id;
    if (!s.wants(e)) return;
    try {
      s.send(e);
    } catch (err) {
      this.log?.warn({ err }, 'an event was not sent to a subscriber');
    }
  }

  private ensurePolling(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
  }

  private stopPolling(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    // The next subscriber starts from the store's newest event again.
    if (this.subs.size === 0) this.cursor = undefined;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.cursor === undefined) return;
    this.polling = true;
    try {
      for (;;) {
        const from = this.cursor;
        if (from === undefined) return;
        const rows = await listEventsAfter(this.db, { afterId: from, limit: PAGE });
        if (rows.length === 0 || this.cursor !== from) return;
        const last = rows[rows.length - 1]!.id;
        this.cursor = last;
        for (const s of this.subs) {
          if (!s.live) continue;
          for (const e of rows) this.deliver(s, e);
          s.cursor = Math.max(s.cursor, last);
        }
        if (rows.length < PAGE) return;
      }
    } catch (err) {
      this.log?.debug({ err }, 'reading new events failed');
    } finally {
      this.polling = false;
    }
  }
}
