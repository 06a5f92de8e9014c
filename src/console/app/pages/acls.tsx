import { useCallback, useEffect, useState } from 'preact/hooks';
import { HangarApiError, type Acl, type Instance } from '../../../client/index.js';
import { Busy, Confirm, ErrorBox, Field, Notice } from '../components/ui.js';
import { api } from '../session.js';

/** The addresses admitted to an instance: list, add (or add my address), delete with confirmation. */
export function AclsTab({ instance }: { instance: Instance }) {
  const name = instance.name;
  const [acls, setAcls] = useState<Acl[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [myIp, setMyIp] = useState<string | undefined>();
  const [form, setForm] = useState({ cidr: '', description: '', transport: false, kibana: false });
  const [busy, setBusy] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const [notice, setNotice] = useState<string | undefined>();
  const [confirm, setConfirm] = useState<Acl | undefined>();

  const load = useCallback(async () => {
    try {
      setAcls(await api((c) => c.listAcls(name)));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, [name]);

  useEffect(() => {
    void load();
    void api((c) => c.whoami()).then(
      (w) => setMyIp(w.source_ip),
      () => undefined,
    );
  }, [load]);

  const add = async (cidr: string, description: string, extra: { transport?: boolean; kibana?: boolean } = {}) => {
    setBusy(`Admitting ${cidr}…`);
    setError(undefined);
    setNotice(undefined);
    try {
      await api((c) => c.createAcl(name, { cidr_mask: cidr, description, ...extra }));
      setNotice(`${cidr} is admitted.`);
      setForm({ cidr: '', description: '', transport: false, kibana: false });
      await load();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };

  const remove = async (acl: Acl) => {
    setConfirm(undefined);
    setBusy(`Removing ${acl.cidr_mask}…`);
    setError(undefined);
    setNotice(undefined);
    try {
      await api((c) => c.deleteAcl(name, acl._id.$oid));
      setNotice(`${acl.cidr_mask} is no longer admitted; its open connections were closed.`);
      await load();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };

  const fieldError = (f: string) =>
    error instanceof HangarApiError && error.status === 400 && error.field === f ? error.message : undefined;
  const es = instance.service === 'elasticsearch';
  return (
    <section aria-labelledby="acls-title">
      <h2 id="acls-title">ACLs</h2>
      <p class="hint">No ACL, no access: clients connect only from these addresses. Deleting one closes its open connections.</p>
      <ErrorBox error={loadError} title="The ACLs could not be read" />
      {acls === undefined && !loadError ? <Busy>Loading ACLs…</Busy> : null}
      {acls && acls.length === 0 ? <p class="empty">No address is admitted yet.</p> : null}
      {acls && acls.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="ACLs" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Description</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {acls.map((a) => (
                <tr key={a._id.$oid} data-acl={a.cidr_mask}>
                  <th scope="row">
                    <code>{a.cidr_mask}</code>
                    {a.transport ? ' (+ transport)' : ''}
                    {a.kibana ? ' (Kibana)' : ''}
                  </th>
                  <td>{a.description}</td>
                  <td>{new Date(a.date_created.$date).toISOString().slice(0, 19).replace('T', ' ')} UTC</td>
                  <td>
                    <button type="button" class="small danger" onClick={() => setConfirm(a)} disabled={busy !== undefined}>
                      Delete <span class="visually-hidden">ACL {a.cidr_mask}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      <h3>Add an address</h3>
      <div class="actions">
        <button
          type="button"
          onClick={() => myIp && void add(myIp, 'my address (added by the console)')}
          disabled={!myIp || busy !== undefined}
        >
          Add my address{myIp ? ` (${myIp})` : ''}
        </button>
      </div>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void add(
            form.cidr.trim(),
            form.description.trim(),
            es ? { ...(form.transport ? { transport: true } : {}), ...(form.kibana ? { kibana: true } : {}) } : {},
          );
        }}
        noValidate
      >
        <Field label="Address or range" error={fieldError('cidr_mask')} hint="An IPv4 or IPv6 address, or a CIDR range such as 10.0.0.0/8.">
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              name="cidr_mask"
              value={form.cidr}
              onInput={(e) => setForm({ ...form, cidr: e.currentTarget.value })}
              aria-describedby={describedBy}
              aria-invalid={invalid}
            />
          )}
        </Field>
        <Field label="Description" error={fieldError('description')}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              name="description"
              maxLength={256}
              value={form.description}
              onInput={(e) => setForm({ ...form, description: e.currentTarget.value })}
              aria-describedby={describedBy}
              aria-invalid={invalid}
            />
          )}
        </Field>
        {es ? (
          <>
            <div class="field checkbox">
              <input
                id="acl-transport"
                type="checkbox"
                checked={form.transport}
                onChange={(e) => setForm({ ...form, transport: e.currentTarget.checked })}
              />
              <label for="acl-transport">Also the transport port</label>
            </div>
            <div class="field checkbox">
              <input
                id="acl-kibana"
                type="checkbox"
                checked={form.kibana}
                onChange={(e) => setForm({ ...form, kibana: e.currentTarget.checked })}
              />
              <label for="acl-kibana">Kibana instead</label>
            </div>
          </>
        ) : null}
        <button type="submit" class="primary" disabled={busy !== undefined || form.cidr.trim() === ''}>
          Add ACL
        </button>
      </form>
      <ErrorBox error={error && !fieldError('cidr_mask') && !fieldError('description') ? error : undefined} />
      {busy ? <Busy>{busy}</Busy> : null}
      {notice ? <Notice>{notice}</Notice> : null}
      {confirm ? (
        <Confirm
          title="Delete this ACL?"
          confirmLabel={`Delete ${confirm.cidr_mask}`}
          onConfirm={() => void remove(confirm)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>
            <code>{confirm.cidr_mask}</code> ({confirm.description}) will no longer be admitted to {name}, and its open connections are
            closed.
          </p>
        </Confirm>
      ) : null}
    </section>
  );
}
