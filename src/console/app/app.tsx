import { useEffect, useState } from 'preact/hooks';
import { BackupsPage } from './pages/backups.js';
import { CreatePage } from './pages/create.js';
import { EventsPage } from './pages/events.js';
import { InstancePage } from './pages/instance.js';
import { InstancesPage } from './pages/instances.js';
import { KeysPage } from './pages/keys.js';
import { LoginPage } from './pages/login.js';
import { OperationPage, OperationsPage } from './pages/operations.js';
import { WebhookPage, WebhooksPage } from './pages/webhooks.js';
import { follow, liveText, useLiveMode } from './live.js';
import { type Route, currentRoute, href, loginHref, navigate, placeOf, useRoute } from './router.js';
import { logOut, onSessionChange, session, type Session } from './session.js';

const NAV = [
  { id: 'instances', label: 'Instances' },
  { id: 'keys', label: 'API keys' },
  { id: 'webhooks', label: 'Webhooks' },
  { id: 'events', label: 'Audit log' },
  { id: 'operations', label: 'Operations' },
  { id: 'backups', label: 'Backups' },
] as const;

function titleOf(route: Route): string {
  const [first, second] = route.parts;
  if (first === 'login') return 'Log in';
  if (first === 'instances' && second === 'new')
    return route.query.get('restore_from') ? 'Restore a backup into a new instance' : 'Create an instance';
  if (first === 'instances' && second) return `Instance ${second}`;
  if (first === 'operations' && second) return `Operation ${second}`;
  if (first === 'webhooks' && second) return 'Webhook deliveries';
  if (first === 'backups' && second) return `Backups of ${second}`;
  return NAV.find((n) => n.id === first)?.label ?? 'Instances';
}

/** Whether the user has pressed a key or a pointer since the page loaded. */
let interacted = false;
for (const kind of ['keydown', 'pointerdown'] as const)
  window.addEventListener(kind, () => (interacted = true), { capture: true, once: true });

/** The page for a route (the user is logged in). */
function Page({ route }: { route: Route }) {
  const [first, second, third] = route.parts;
  switch (first) {
    case 'instances':
      if (second === 'new') return <CreatePage query={route.query} />;
      if (second) return <InstancePage name={second} tab={third ?? 'overview'} operation={route.query.get('operation')} />;
      return <InstancesPage notice={route.query.get('deleted') ? `Instance ${route.query.get('deleted')} is deleted.` : null} />;
    case 'keys':
      return <KeysPage />;
    case 'events':
      return <EventsPage />;
    case 'operations':
      return second ? <OperationPage id={second} /> : <OperationsPage query={route.query} />;
    case 'webhooks':
      return second ? <WebhookPage id={second} /> : <WebhooksPage />;
    case 'backups':
      return <BackupsPage name={second} />;
    default:
      return <InstancesPage />;
  }
}

/** Whether the page's changes come from the event stream (or, while it is down, from reading again). */
function LiveIndicator() {
  const mode = useLiveMode();
  // the stream stays open while logged in, whatever the page: its session check notices a revoked token
  useEffect(() => follow({ onResync: () => undefined }), []);
  return (
    <span class={`live ${mode}`} data-live={mode} title={`Live state: ${liveText(mode)}`}>
      <span class="dot" aria-hidden="true" />
      {mode === 'stream' ? 'Live' : mode === 'polling' ? 'Refreshing' : 'Connecting'}
    </span>
  );
}

export function App() {
  const route = useRoute();
  const [user, setUser] = useState<Session | undefined>(session);

  // A refused token (or a log out) ends the session: to the login page, keeping the place.
  useEffect(
    () =>
      onSessionChange((s, why) => {
        setUser(s);
        if (!s) {
          const here = currentRoute();
          navigate(loginHref(here.parts[0] === 'login' ? '' : placeOf(here), why === 'expired'), { replace: true });
        }
      }),
    [],
  );

  const onLogin = route.parts[0] === 'login';
  useEffect(() => {
    if (!user && !onLogin) navigate(loginHref(placeOf(route)), { replace: true });
  }, [user, onLogin, route.raw]);

  // Each new page the user goes to: its title, and the keyboard focus on its heading (screen
  // readers read it). Not on load, nor on the redirects that follow it: the browser starts at the
  // top of the page anyway, and a heading focused before any key or click shows a focus ring.
  const path = route.parts.join('/');
  useEffect(() => {
    document.title = `${titleOf(route)} · hangar`;
    const h = document.getElementById('page-title');
    if (h && interacted && document.activeElement?.tagName !== 'INPUT') h.focus({ preventScroll: false });
  }, [path]);

  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link by convention; the router owns the URL's hash, so a click moves the focus to the page's title rather than following #main */}
      <a
        class="skip-link"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('page-title')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('instances')}>
          hangar
        </a>
        {user ? (
          <>
            <nav aria-label="Main">
              {NAV.map((n) => (
                <a key={n.id} href={href(n.id)} aria-current={route.parts[0] === n.id ? 'page' : undefined}>
                  {n.label}
                </a>
              ))}
            </nav>
            <div class="account">
              <LiveIndicator />
              <span class="login-name" title="Logged in as">
                {user.login}
              </span>
              <button type="button" class="small" onClick={() => void logOut()}>
                Log out
              </button>
            </div>
          </>
        ) : null}
      </header>
      <main id="main">{onLogin || !user ? <LoginPage route={route} /> : <Page route={route} />}</main>
    </>
  );
}
