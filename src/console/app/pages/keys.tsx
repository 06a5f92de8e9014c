import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiKey, CreatedApiKey } from '../../../client/index.js';
import { MutationStatus, useMutation } from '../components/mutation.js';
import { Busy, Confirm, CopyValue, ErrorBox } from '../components/ui.js';
import { api } from '../session.js';

/** The account's API key pairs: create (the pass key shown once), list, delete. */
export function KeysPage() {
  const [keys, setKeys] = useState<ApiKey[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [created, setCreated] = useState<CreatedApiKey | undefined>();
  const m = useMutation();
  const [confirm, setConfirm] = useState<ApiKey | undefined>();

  const load = useCallback(async () => {
    try {
      setKeys(await api((c) => c.listApiKeys()));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, []);
  useEffect(() => void load(), [load]);

  const create = () =>
    void m.run(
      'Creating a key pair…',
      async () => {
        setCreated(await api((c) => c.createApiKey()));
        return undefined;
      },
      load,
    );

  const remove = (k: ApiKey) => {
    setConfirm(undefined);
    void m.run(
      `Deleting ${k.user_key}…`,
      async () => {
        await api((c) => c.deleteApiKey(k.id));
        if (created?.id === k.id) setCreated(undefined);
        return `Key ${k.user_key} is deleted: it no longer logs in.`;
      },
      load,
    );
  };
  const busy = m.busy !== undefined;

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          API keys
        </h1>
        <button type="button" class="primary" onClick={create} disabled={busy}>
          Create API key
        </button>
      </div>
      <p class="hint">
        A key pair logs in like a password: HTTP Basic with the user key as login and the pass key as password (for example{' '}
        <code>hangar login</code> or <code>GET /v2/tokens/</code>). Give each program its own pair, and delete a pair you no longer use.
      </p>
      {created ? (
        // biome-ignore lint/a11y/useSemanticElements: a named region (the role a <section> has), which the console's tests find by role and name
        <div class="secret-box" role="region" aria-label="New key pair">
          <h2>New key pair</h2>
          <p>
            <strong>Copy the pass key now: it is shown this once.</strong> hangar keeps only a hash of it.
          </p>
          <dl class="connect">
            <CopyValue label="User key" value={created.user_key} />
            <CopyValue label="Pass key" value={created.pass_key} />
          </dl>
          <button type="button" onClick={() => setCreated(undefined)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <MutationStatus mutation={m} error={m.error} />
      <ErrorBox error={loadError} title="The keys could not be read" />
      {keys === undefined && !loadError ? <Busy>Loading keys…</Busy> : null}
      {keys && keys.length === 0 ? <p class="empty">No API key yet.</p> : null}
      {keys && keys.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="API keys" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">User key</th>
                <th scope="col">Created (UTC)</th>
                <th scope="col">Last used (UTC)</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-key={k.user_key}>
                  <th scope="row">
                    <code>{k.user_key}</code>
                  </th>
                  <td>{k.created}</td>
                  <td>{k.last_used ?? 'never'}</td>
                  <td>
                    <button type="button" class="small danger" onClick={() => setConfirm(k)} disabled={busy}>
                      Delete <span class="visually-hidden">key {k.user_key}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {confirm ? (
        <Confirm
          title="Delete this API key?"
          confirmLabel="Delete key"
          onConfirm={() => remove(confirm)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>
            Programs logging in with <code>{confirm.user_key}</code> will be refused. Tokens it already gave keep working until they expire.
          </p>
        </Confirm>
      ) : null}
    </section>
  );
}
