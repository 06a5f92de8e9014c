import { useEffect, useState } from 'preact/hooks';

/**
 * Routes live in the URL's fragment (`#/instances/cache/acls`): hangar serves one page at `/`
 * and `/console/`, and a reload or a shared link lands on the same place.
 */
export interface Route {
  /** Path segments, decoded: `#/instances/cache` -> ['instances', 'cache']. */
  readonly parts: readonly string[];
  readonly query: URLSearchParams;
  /** The fragment as it is, without '#': what `next=` keeps. */
  readonly raw: string;
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/instances';
  const [path = '', query = ''] = raw.split('?', 2);
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query: new URLSearchParams(query), raw };
}

export function currentRoute(): Route {
  return parseRoute(window.location.hash);
}

/** `href` of a route: path segments are encoded. */
export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const target = to.startsWith('#') ? to : `#${to}`;
  if (opts.replace) {
    history.replaceState(null, '', target);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    window.location.hash = target;
  }
}

/** Query keys that carry a one-time notice ("deleted", "renamed"): said once, never kept as a place. */
const NOTICES = ['deleted', 'renamed'];

/** Where a route is, without its one-time notices: what a login comes back to. */
export function placeOf(route: Route): string {
  const q = new URLSearchParams(route.query);
  for (const k of NOTICES) q.delete(k);
  const qs = q.toString();
  return `/${route.parts.map(encodeURIComponent).join('/')}${qs ? `?${qs}` : ''}`;
}

/** The login page, remembering where the user was. */
export function loginHref(next: string, expired = false): string {
  const q = new URLSearchParams();
  if (next && !next.startsWith('/login')) q.set('next', next);
  if (expired) q.set('expired', '1');
  const qs = q.toString();
  return `#/login${qs ? `?${qs}` : ''}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const on = () => setRoute(currentRoute());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
