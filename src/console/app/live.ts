import { useEffect, useState } from 'preact/hooks';
import type { HangarEvent, Instance, Operation } from '../../client/index.js';
import { HangarApiError } from '../../client/index.js';
import { newerOperation } from './format.js';
import { api, onSessionChange, session } from './session.js';

/**
 * Live state. One connection to hangar's event stream (`GET /v2/events/stream`, through the
 * typed client's `events()`) serves every page of the tab: pages `follow` it, are told each
 * event, and are asked to read their state again whenever the stream (re)opens or reports a
 * gap. While the stream is not open (it failed, or this hangar has none) they are asked every
 * POLL_MS instead, and the stream is tried again with backoff, resuming after the last event
 * seen. A browser keeps six connections per host: a stream per page would use them up.
 */
export const POLL_MS = 2000;
/** While the stream is open no request is made: this often, the token is checked (a revoked one ends the session). */
export const SESSION_CHECK_MS = 10_000;
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
/** The stream is kept this long after the last follower left (the next page follows at once). */
const LINGER_MS = 5000;

/** `stream`: changes arrive as they happen; `polling`: the stream failed, pages read every POLL_MS; `connecting`: neither yet. */
export type LiveMode = 'connecting' | 'stream' | 'polling';

export interface Follower {
  /** Each event of the account, as it happens. */
  readonly onEvent?: (e: HangarEvent) => void;
  /** Read the state again: at once, when the stream (re)opens or reports a gap, every POLL_MS while it is not open. */
  readonly onResync: () => void;
}

class Hub {
  private readonly followers = new Set<Follower>();
  private readonly modeListeners = new Set<(m: LiveMode) => void>();
  private current: LiveMode = 'connecting';
  private abort: AbortController | undefined;
  private pollTimer: ReturnType<typeof setInterval> | undefined;
  private checkTimer: ReturnType<typeof setInterval> | undefined;
  private lingerTimer: ReturnType<typeof setTimeout> | undefined;

  get mode(): LiveMode {
    return this.current;
  }

  follow(f: Follower): () => void {
    this.followers.add(f);
    clearTimeout(this.lingerTimer);
    this.start();
    f.onResync();
    return () => {
      this.followers.delete(f);
      if (this.followers.size === 0) {
        clearTimeout(this.lingerTimer);
        this.lingerTimer = setTimeout(() => this.stop(), LINGER_MS);
      }
    };
  }

  onMode(listener: (m: LiveMode) => void): () => void {
    this.modeListeners.add(listener);
    return () => this.modeListeners.delete(listener);
  }

  /** Ends the stream (log out, session expired); the next follower starts it again. */
  stop(): void {
    this.abort?.abort();
    this.abort = undefined;
    clearInterval(this.pollTimer);
    clearInterval(this.checkTimer);
    clearTimeout(this.lingerTimer);
    this.pollTimer = this.checkTimer = this.lingerTimer = undefined;
    this.setMode('connecting');
  }

  /** After a log in: the pages still following get a stream of the new session. */
  resume(): void {
    if (this.followers.size > 0) this.start();
  }

  private start(): void {
    if (this.abort || !session()) return;
    const abort = new AbortController();
    this.abort = abort;
    this.pollTimer = setInterval(() => {
      if (this.current !== 'stream') this.resync();
    }, POLL_MS);
    this.checkTimer = setInterval(() => {
      // api() ends the session on a 401; anything else is the next check's business
      if (this.current === 'stream') void api((c) => c.whoami()).catch(() => undefined);
    }, SESSION_CHECK_MS);
    void this.run(abort.signal);
  }

  private async run(signal: AbortSignal): Promise<void> {
    let last: number | undefined;
    let delay = RETRY_FIRST_MS;
    while (!signal.aborted) {
      try {
        await api(async (c) => {
          const events = c.events({
            reconnect: false,
            signal,
            ...(last !== undefined ? { lastEventId: last } : {}),
            onOpen: () => {
              delay = RETRY_FIRST_MS;
              this.setMode('stream');
              // what changed before the stream opened (or while it was down) is read again
              this.resync();
            },
            onGap: () => this.resync(),
          });
          for await (const e of events) {
            last = e.id;
            for (const f of [...this.followers]) f.onEvent?.(e);
          }
        });
      } catch (err) {
        // a refused token: api() has ended the session, whose listener stops the hub
        if (signal.aborted || (err instanceof HangarApiError && err.status === 401)) return;
      }
      if (signal.aborted) return;
      // ended or refused: the pages poll meanwhile, and the stream is tried again
      this.setMode('polling');
      this.resync();
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        signal.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            resolve();
          },
          { once: true },
        );
      });
      delay = Math.min(RETRY_MAX_MS, delay * 2);
    }
  }

  private resync(): void {
    for (const f of [...this.followers]) f.onResync();
  }

  private setMode(m: LiveMode): void {
    if (m === this.current) return;
    this.current = m;
    for (const l of [...this.modeListeners]) l(m);
  }
}

const hub = new Hub();
onSessionChange((s) => {
  hub.stop();
  if (s) hub.resume();
});

/** Follows the account's changes: see Follower. Returns the function that stops following. */
export function follow(f: Follower): () => void {
  return hub.follow(f);
}

export function liveMode(): LiveMode {
  return hub.mode;
}

/** Called with each change of the live mode. */
export function onLiveMode(listener: (m: LiveMode) => void): () => void {
  return hub.onMode(listener);
}

/** The live mode, as a component's state. */
export function useLiveMode(): LiveMode {
  const [mode, setMode] = useState(hub.mode);
  useEffect(() => {
    setMode(hub.mode);
    return hub.onMode(setMode);
  }, []);
  return mode;
}

/** How a page says where its changes come from. */
export function liveText(mode: LiveMode): string {
  return mode === 'stream'
    ? 'changes appear as they happen'
    : mode === 'polling'
      ? `the live stream is down: read again every ${POLL_MS / 1000} s`
      : 'connecting to the live stream';
}

export interface Watch<T> {
  /** Each fresh value (undefined: the instance is gone). */
  readonly onValue: (value: T) => void;
  /** A failed read; the watch keeps following. */
  readonly onError: (err: unknown) => void;
}

/**
 * A read that is repeated on demand: calls made while one is in flight are coalesced into one
 * more read after it, so the last value shown is never older than the last demand.
 */
export function reader<T>(read: () => Promise<T>, watch: Watch<T>): { refresh: () => void; stop: () => void } {
  let stopped = false;
  let running = false;
  let again = false;
  const refresh = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    void (async () => {
      do {
        again = false;
        try {
          const value = await read();
          if (!stopped) watch.onValue(value);
        } catch (err) {
          if (!stopped) watch.onError(err);
        }
      } while (again && !stopped);
      running = false;
    })();
  };
  return { refresh, stop: () => (stopped = true) };
}

/** The account's instances, now and on every change. Returns the function that stops watching. */
export function watchInstances(watch: Watch<Instance[]>): () => void {
  const r = reader(() => api((c) => c.listInstances()), watch);
  const unfollow = follow({ onResync: r.refresh, onEvent: (e) => e.kind.startsWith('instance.') && r.refresh() });
  return () => {
    r.stop();
    unfollow();
  };
}

/** One instance, now and on every change; undefined once it is gone (404). */
export function watchInstance(name: string, watch: Watch<Instance | undefined>): () => void {
  let id: string | undefined;
  const r = reader(async () => {
    try {
      const inst = await api((c) => c.getInstance(name));
      id = inst.id;
      return inst;
    } catch (err) {
      if (err instanceof HangarApiError && err.status === 404) return undefined;
      throw err;
    }
  }, watch);
  const unfollow = follow({
    onResync: r.refresh,
    onEvent: (e) => {
      // a change an operation records without a new state (a TLS mode) shows when the operation starts and ends
      if (e.kind.startsWith('operation.') && e.kind !== 'operation.progress' && id !== undefined && e.instance_id === id) {
        r.refresh();
        return;
      }
      if (!e.kind.startsWith('instance.')) return;
      if (e.instance_name === name || (id !== undefined && e.instance_id === id) || (e.kind === 'instance.renamed' && e.data.from === name))
        r.refresh();
    },
  });
  return () => {
    r.stop();
    unfollow();
  };
}

/** One operation, now and at each of its changes (the stream carries the whole record). */
export function watchOperation(id: string, watch: Watch<Operation>): () => void {
  let shown: Operation | undefined;
  const show = (op: Operation) => {
    if (shown && newerOperation(shown, op) === shown) return;
    shown = op;
    watch.onValue(op);
  };
  const r = reader(() => api((c) => c.getOperation(id)), { onValue: show, onError: watch.onError });
  const unfollow = follow({
    onResync: r.refresh,
    onEvent: (e) => {
      if (e.operation_id === id && e.kind.startsWith('operation.')) show(e.data as unknown as Operation);
    },
  });
  return () => {
    r.stop();
    unfollow();
  };
}
