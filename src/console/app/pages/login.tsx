import { useState } from 'preact/hooks';
import { HangarApiError } from '../../../client/index.js';
import { Busy, ErrorBox, Field, Notice } from '../components/ui.js';
import { navigate, type Route } from '../router.js';
import { logIn } from '../session.js';

/** Log in with a login and password (or an API key pair); then back to where the user was. */
export function LoginPage({ route }: { route: Route }) {
  const [login, setLogin] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const next = route.query.get('next');
  const expired = route.query.get('expired') === '1';

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await logIn(login.trim(), password);
      setPassword('');
      navigate(next?.startsWith('/') && !next.startsWith('/login') ? next : '/instances', { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const refused = error instanceof HangarApiError && error.status === 401;
  return (
    <section class="login" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Log in to hangar
      </h1>
      {expired ? <Notice>Your session ended (the token expired or was revoked). Log in again to go on where you were.</Notice> : null}
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Login">
          {({ id, describedBy }) => (
            <input
              id={id}
              name="login"
              type="text"
              autocomplete="username"
              required
              value={login}
              aria-describedby={describedBy}
              onInput={(e) => setLogin(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Password" hint="Or log in with an API key pair: the user key as login, the pass key as password.">
          {({ id, describedBy }) => (
            <input
              id={id}
              name="password"
              type="password"
              autocomplete="current-password"
              required
              value={password}
              aria-describedby={describedBy}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        {refused ? (
          <div class="error-box" role="alert">
            <span class="what">Wrong login or password.</span>{' '}
            <span class="remedy">Check both and try again; after several failures hangar makes you wait.</span>
          </div>
        ) : (
          <ErrorBox error={error} />
        )}
        <button type="submit" class="primary" disabled={busy || login.trim() === '' || password === ''}>
          Log in
        </button>
        {busy ? <Busy>Logging in…</Busy> : null}
      </form>
    </section>
  );
}
