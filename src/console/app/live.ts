import type { Instance } from '../../client/index.js';
import { HangarApiError } from '../../client/index.js';
import { api } from './session.js';

/**
 * Live instance state. Today it polls the API every POLL_MS; when hangar has an event stream
 * (`/v2/events/stream`), only this module changes: pages subscribe, and are told.
 */
export const POLL_MS = 2000;

export interface Watch<T> {
  /** Each fresh value (undefined: the instance is gone). */
  readonly onValue: (value: T) => void;
  /** A failed refresh; the watch keeps trying. */
  readonly onError: (err: unknown) => void;
}

function poll<T>(read: () => Promise<T>, watch: Watch<T>): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    try {
      const value = await read();
      if (!stopped) watch.onValue(value);
    } catch (err) {
      if (!stopped) watch.onError(err);
      // a refused token ends the session: polling on would only fail again
      if (err instanceof HangarApiError && err.status === 401) return;
    }
    if (!stopped) timer = setTimeout(() => void tick(), POLL_MS);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The account's instances, now and on every change. Returns the function that stops watching. */
export function watchInstances(watch: Watch<Instance[]>): () => void {
  return poll(() => api((c) => c.listInstances()), watch);
}

/** One instance, now and on every change; undefined once it is gone (404). */
export function watchInstance(name: string, watch: Watch<Instance | undefined>): () => void {
  return poll(async () => {
    try {
      return await api((c) => c.getInstance(name));
    } catch (err) {
      if (err instanceof HangarApiError && err.status === 404) return undefined;
      throw err;
    }
  }, watch);
}
