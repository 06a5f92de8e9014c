import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Acl, Instance } from '../../../client/index.js';
import { MutationStatus, formErrors, useMutation } from '../components/mutation.js';
import { Busy, Confirm, ErrorBox, Field } from '../components/ui.js';
import { useEngines } from '../engines.js';
import { formatUtc } from '../format.js';
import { api } from '../session.js';

/** The labels of the form's fields, by their API names: a refusal naming one is said in these words. */
const LABELS = { cidr_mask: 'Address or range', description: 'Description' };

/** What each ACL group of a product (`acl_groups` of GET /v2/engines/) means, as the form offers it. */
const GROUPS: Readonly<Record<string, { label: string; shown: string }>> = {
  transport: { label: 'Also the transport port', shown: '(+ transport)' },
  kibana: { label: 'Kibana instead', shown: '(Kibana)' },
};

/** The source address hangar sees this browser from (`GET /v2/whoami/`), once read. */
export function useMyAddress(): string | undefined {
  const [ip, setIp] = useState<string | undefined>();
  useEffect(() => {
    void api((c) => c.whoami()).then(
      (w) => setIp(w.source_ip),
      () => undefined,
    );
  }, []);
  return ip;
}

/**
 * Admits `cidr` to an instance; the notice says so, with each warning of the answer (a range
 * stored otherwise than written). Shared by the ACLs tab and the overview's "add my address".
 */
export async function admit(name: string, body: { cidr_mask: string; description: string; transport?: boolean; kibana?: boolean }) {
  const warnings: string[] = [];
  await api((c) => c.createAcl(name, body, { onWarning: (w) => warnings.push(w) }));
  return warnings.length > 0 ? `${body.cidr_mask} is admitted. ${warnings.join(' ')}.` : `${body.cidr_mask} is admitted.`;
}

/** The addresses admitted to an instance: list, add (or add my address), delete with confirmation. */
export function AclsTab({ instance }: { instance: Instance }) {
  const name = instance.name;
  const [acls, setAcls] = useState<Acl[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const myIp = useMyAddress();
  const { engines } = useEngines();
  const [form, setForm] = useState<{ cidr: string; description: string; groups: readonly string[] }>({
    cidr: '',
    description: '',
    groups: [],
  });
  const m = useMutation();
  const [confirm, setConfirm] = useState<Acl | undefined>();

  const load = useCallback(async () => {
    try {
      setAcls(await api((c) => c.listAcls(name)));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, [name]);

  useEffect(() => void load(), [load]);

  const add = (cidr: string, description: string, groups: readonly string[] = []) =>
    m.run(
      `Admitting ${cidr}…`,
      async () => {
        const done = await admit(name, { cidr_mask: cidr, description, ...Object.fromEntries(groups.map((g) => [g, true])) });
        setForm({ cidr: '', description: '', groups: [] });
        return done;
      },
      load,
    );

  const remove = (acl: Acl) => {
    setConfirm(undefined);
    void m.run(
      `Removing ${acl.cidr_mask}…`,
      async () => {
        await api((c) => c.deleteAcl(name, acl._id.$oid));
        return `${acl.cidr_mask} is no longer admitted; its open connections were closed.`;
      },
      load,
    );
  };

  const errors = formErrors(m.error, LABELS);
  const groups = (engines?.of(instance)?.features.acl_groups ?? []).filter((g) => g in GROUPS);
  const busy = m.busy !== undefined;
  return (
    <section aria-labelledby="acls-title">
      <h2 id="acls-title">ACLs</h2>
      <p class="hint">No ACL, no access: clients connect only from these addresses. Deleting one closes its open connections.</p>
      <ErrorBox error={loadError} title="The ACLs could not be read" />
      {acls === undefined && !loadError ? <Busy>Loading ACLs…</Busy> : null}
      {acls && acls.length === 0 ? <p class="empty">No address is admitted yet. Nobody can connect until one is.</p> : null}
      {acls && acls.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="ACLs" tabIndex={0}>
          <table class="cards">
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Description</th>
                <th scope="col">Added (UTC)</th>
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
                    {groups
                      .filter((g) => (a as Record<string, unknown>)[g] === true)
                      .map((g) => ` ${GROUPS[g]!.shown}`)
                      .join('')}
                  </th>
                  <td data-label="Description">{a.description}</td>
                  <td data-label="Added">{formatUtc(a.date_created.$date)}</td>
                  <td>
                    <button type="button" class="small danger" onClick={() => setConfirm(a)} disabled={busy}>
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
        <button type="button" onClick={() => myIp && void add(myIp, 'my address (added by the console)')} disabled={!myIp || busy}>
          Add my address{myIp ? ` (${myIp})` : ''}
        </button>
      </div>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void add(form.cidr.trim(), form.description.trim(), form.groups);
        }}
        noValidate
      >
        <Field label={LABELS.cidr_mask} error={errors.of('cidr_mask')} hint="An IPv4 or IPv6 address, or a CIDR range such as 10.0.0.0/8.">
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
        <Field label={LABELS.description} error={errors.of('description')}>
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
        {groups.map((g) => (
          <div class="field checkbox" key={g}>
            <input
              id={`acl-${g}`}
              type="checkbox"
              checked={form.groups.includes(g)}
              onChange={(e) =>
                setForm({
                  ...form,
                  groups: e.currentTarget.checked ? [...form.groups.filter((x) => x !== g), g] : form.groups.filter((x) => x !== g),
                })
              }
            />
            <label for={`acl-${g}`}>{GROUPS[g]!.label}</label>
          </div>
        ))}
        <button type="submit" class="primary" disabled={busy || form.cidr.trim() === ''}>
          Add ACL
        </button>
      </form>
      <MutationStatus mutation={m} error={errors.general} />
      {confirm ? (
        <Confirm
          title="Delete this ACL?"
          confirmLabel={`Delete ${confirm.cidr_mask}`}
          onConfirm={() => remove(confirm)}
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
