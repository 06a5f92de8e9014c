import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { CreatedWebhook, Webhook, WebhookDelivery } from '../../../client/index.js';
import { EVENT_KINDS } from '../../../domain/operations.js';
import { MutationStatus, formErrors, useMutation } from '../components/mutation.js';
import { Busy, Confirm, CopyValue, ErrorBox, Field } from '../components/ui.js';
import { formatUtc } from '../format.js';
import { follow } from '../live.js';
import { href } from '../router.js';
import { api } from '../session.js';

/** What a webhook may ask for: the two families, then each kind. */
const KIND_CHOICES: readonly [string, string][] = [
  ['operation', 'Every operation event (operation)'],
  ['instance', 'Every instance event (instance)'],
  ...EVENT_KINDS.map((k): [string, string] => [k, k]),
];

/** The account's webhooks: register (the secret shown once), list, rotate the secret, delete; each one's deliveries. */
export function WebhooksPage() {
  const [hooks, setHooks] = useState<Webhook[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [secret, setSecret] = useState<{ hook: CreatedWebhook; why: 'created' | 'rotated' } | undefined>();
  const [form, setForm] = useState<{ url: string; description: string; kinds: readonly string[] }>({ url: '', description: '', kinds: [] });
  const m = useMutation();
  const [confirm, setConfirm] = useState<{ hook: Webhook; what: 'delete' | 'rotate' } | undefined>();

  const load = useCallback(async () => {
    try {
      setHooks(await api((c) => c.listWebhooks()));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  }, []);
  useEffect(() => void load(), [load]);

  /** An action, then the list read again; its notice (if any) once the list shows the outcome. */
  const run = (what: string, action: () => Promise<string | undefined>) => void m.run(what, action, load);

  const create = (e: Event) => {
    e.preventDefault();
    void run('Registering the webhook…', async () => {
      const hook = await api((c) =>
        c.createWebhook({
          url: form.url.trim(),
          ...(form.kinds.length ? { kinds: [...form.kinds] } : {}),
          ...(form.description.trim() ? { description: form.description.trim() } : {}),
        }),
      );
      setSecret({ hook, why: 'created' });
      setForm({ url: '', description: '', kinds: [] });
      return undefined;
    });
  };

  const remove = (hook: Webhook) => {
    setConfirm(undefined);
    void run(`Deleting the webhook to ${hook.url}…`, async () => {
      await api((c) => c.deleteWebhook(hook.id));
      if (secret?.hook.id === hook.id) setSecret(undefined);
      return `The webhook to ${hook.url} is deleted: it is sent nothing more.`;
    });
  };

  const rotate = (hook: Webhook) => {
    setConfirm(undefined);
    void run('Making a new secret…', async () => {
      setSecret({ hook: await api((c) => c.rotateWebhookSecret(hook.id)), why: 'rotated' });
      return undefined;
    });
  };

  const toggleKind = (k: string, on: boolean) => setForm((f) => ({ ...f, kinds: on ? [...f.kinds, k] : f.kinds.filter((x) => x !== k) }));
  const errors = formErrors(m.error, { url: 'URL', description: 'Description', kinds: 'Events' });
  const fieldError = errors.of;
  const kindsError = fieldError('kinds');
  const busy = m.busy;

  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Webhooks
      </h1>
      <p class="hint">
        hangar POSTs the events you choose (instance state changes, operation progress) to your URL as JSON, signed in{' '}
        <code>X-Hangar-Signature</code> with the webhook's secret (<code>verifyWebhookSignature</code> of <code>hangar/client</code> checks
        it). A delivery that fails is tried again with backoff for a day.
      </p>
      {secret ? (
        // biome-ignore lint/a11y/useSemanticElements: a named region (the role a <section> has), which the console's tests find by role and name
        <div class="secret-box" role="region" aria-label="Webhook secret">
          <h2>{secret.why === 'created' ? 'New webhook' : 'New secret'}</h2>
          <p>
            <strong>Copy the secret now: it is shown this once.</strong>
            {secret.why === 'rotated' ? ' The old secret also signs deliveries for 24 hours, while your receiver switches.' : ''}
          </p>
          <dl class="connect">
            <CopyValue label="URL" value={secret.hook.url} />
            <CopyValue label="Secret" value={secret.hook.secret} />
          </dl>
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <MutationStatus mutation={m} error={errors.general} />
      <ErrorBox error={loadError} title="The webhooks could not be read" />
      {hooks === undefined && !loadError ? <Busy>Loading webhooks…</Busy> : null}
      {hooks && hooks.length === 0 ? <p class="empty">No webhook yet.</p> : null}
      {hooks && hooks.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="Webhooks" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Description</th>
                <th scope="col">Created (UTC)</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {hooks.map((h) => (
                <tr key={h.id} data-webhook={h.id}>
                  <th scope="row">
                    <code>{h.url}</code>
                  </th>
                  <td>{h.kinds.join(', ')}</td>
                  <td>{h.description}</td>
                  <td>
                    {h.created}
                    {h.previous_secret_until ? (
                      <small class="hint"> (old secret signs until {formatUtc(h.previous_secret_until.$date)})</small>
                    ) : null}
                  </td>
                  <td class="row-actions">
                    <a class="button small" href={href('webhooks', h.id)}>
                      Deliveries <span class="visually-hidden">of {h.url}</span>
                    </a>
                    <button
                      type="button"
                      class="small"
                      onClick={() => setConfirm({ hook: h, what: 'rotate' })}
                      disabled={busy !== undefined}
                    >
                      Rotate secret <span class="visually-hidden">of {h.url}</span>
                    </button>
                    <button
                      type="button"
                      class="small danger"
                      onClick={() => setConfirm({ hook: h, what: 'delete' })}
                      disabled={busy !== undefined}
                    >
                      Delete <span class="visually-hidden">webhook to {h.url}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      <form class="add-webhook" onSubmit={create} noValidate aria-labelledby="add-webhook-title">
        <h2 id="add-webhook-title">Register a webhook</h2>
        <Field
          label="URL"
          error={fieldError('url')}
          hint="https:// (plain http:// and private addresses only where your operator allows them)."
        >
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              name="url"
              type="url"
              required
              maxLength={2048}
              placeholder="https://hooks.example.com/hangar"
              value={form.url}
              onInput={(e) => setForm({ ...form, url: e.currentTarget.value })}
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
              maxLength={200}
              value={form.description}
              onInput={(e) => setForm({ ...form, description: e.currentTarget.value })}
              aria-describedby={describedBy}
              aria-invalid={invalid}
            />
          )}
        </Field>
        <fieldset class="kinds" aria-describedby="kinds-hint">
          <legend>Events</legend>
          <small id="kinds-hint" class="hint">
            None checked: every event.
          </small>
          <div class="kind-grid">
            {KIND_CHOICES.map(([k, label]) => (
              <label key={k} class="check">
                <input
                  type="checkbox"
                  name="kinds"
                  value={k}
                  checked={form.kinds.includes(k)}
                  onChange={(e) => toggleKind(k, e.currentTarget.checked)}
                />
                {label}
              </label>
            ))}
          </div>
          {kindsError ? <small class="field-error">{kindsError}</small> : null}
        </fieldset>
        <button type="submit" class="primary" disabled={busy !== undefined || form.url.trim() === ''}>
          Register webhook
        </button>
      </form>

      {confirm?.what === 'delete' ? (
        <Confirm
          title="Delete this webhook?"
          confirmLabel="Delete webhook"
          onConfirm={() => remove(confirm.hook)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>
            <code>{confirm.hook.url}</code> will be sent nothing more, and its delivery records go with it.
          </p>
        </Confirm>
      ) : null}
      {confirm?.what === 'rotate' ? (
        <Confirm
          title="Make a new secret?"
          confirmLabel="Rotate secret"
          onConfirm={() => rotate(confirm.hook)}
          onCancel={() => setConfirm(undefined)}
        >
          <p>
            The new secret is shown once. Deliveries to <code>{confirm.hook.url}</code> are signed with both secrets for 24 hours, then with
            the new one only.
          </p>
        </Confirm>
      ) : null}
    </section>
  );
}

const DELIVERY_PAGE = 50;
/** Deliveries are not on the stream: while one is PENDING (retried with backoff), they are read again this often. */
const PENDING_REFRESH_MS = 3000;
/** A new event is fanned out to the webhooks shortly after it is recorded. */
const AFTER_EVENT_MS = 800;

/** One webhook and its deliveries: state, attempts, last status and error; refreshed as events happen. */
export function WebhookPage({ id }: { id: string }) {
  const [hook, setHook] = useState<Webhook | undefined>();
  const [deliveries, setDeliveries] = useState<WebhookDelivery[] | undefined>();
  const [state, setState] = useState('');
  const [more, setMore] = useState(false);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const shown = useRef(DELIVERY_PAGE);

  const load = useCallback(async () => {
    try {
      const [h, list] = await api((c) =>
        Promise.all([c.getWebhook(id), c.listWebhookDeliveries(id, { limit: shown.current, ...(state ? { states: [state] } : {}) })]),
      );
      setHook(h);
      setDeliveries(list);
      setMore(list.length === shown.current && shown.current < 500);
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  }, [id, state]);

  useEffect(() => {
    shown.current = DELIVERY_PAGE;
    setDeliveries(undefined);
    void load();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const soon = () => {
      clearTimeout(timer);
      timer = setTimeout(() => void load(), AFTER_EVENT_MS);
    };
    const unfollow = follow({ onResync: soon, onEvent: soon });
    return () => {
      clearTimeout(timer);
      unfollow();
    };
  }, [load]);

  const pending = deliveries?.some((d) => d.state === 'PENDING') ?? false;
  useEffect(() => {
    if (!pending) return;
    const t = setInterval(() => void load(), PENDING_REFRESH_MS);
    return () => clearInterval(t);
  }, [pending, load]);

  const refresh = async () => {
    setBusy(true);
    await load();
    setBusy(false);
  };

  return (
    <section aria-labelledby="page-title">
      <p class="crumbs">
        <a href={href('webhooks')}>Webhooks</a> /
      </p>
      <h1 id="page-title" tabIndex={-1}>
        Deliveries
      </h1>
      {hook ? (
        <p class="facts">
          To <code>{hook.url}</code> · {hook.kinds.join(', ')}
          {hook.description ? ` · ${hook.description}` : ''}
        </p>
      ) : null}
      <ErrorBox error={error} title="The deliveries could not be read" />
      <div class="filters">
        <label>
          State
          <select value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">Any state</option>
            <option value="PENDING">PENDING (to be tried again)</option>
            <option value="DELIVERED">DELIVERED</option>
            <option value="FAILED">FAILED (given up)</option>
          </select>
        </label>
        <button type="button" onClick={() => void refresh()} disabled={busy}>
          Refresh
        </button>
      </div>
      {deliveries === undefined && !error ? <Busy>Loading deliveries…</Busy> : null}
      {deliveries && deliveries.length === 0 ? (
        <p class="empty">
          No delivery{state ? ` in state ${state}` : ''} yet: they come with the next event of the kinds this webhook asks for.
        </p>
      ) : null}
      {deliveries && deliveries.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="Deliveries" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">State</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last status</th>
                <th scope="col">Last error</th>
                <th scope="col">Next attempt (UTC)</th>
                <th scope="col">Delivered (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((d) => (
                <tr key={d.id} data-delivery={d.id} data-event={d.event_id} data-state={d.state}>
                  <th scope="row">
                    {d.event_kind} <small class="hint">#{d.event_id}</small>
                  </th>
                  <td>
                    <span class={`badge ${d.state === 'DELIVERED' ? 'ok' : d.state === 'FAILED' ? 'bad' : 'busy'}`}>{d.state}</span>
                  </td>
                  <td data-field="attempts">{d.attempts}</td>
                  <td data-field="last_status">{d.last_status ?? '—'}</td>
                  <td data-field="last_error" class="wrap">
                    {d.last_error ?? ''}
                  </td>
                  <td>{d.next_attempt ? formatUtc(d.next_attempt.$date) : '—'}</td>
                  <td>{d.date_delivered ? formatUtc(d.date_delivered.$date) : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {more ? (
        <button
          type="button"
          onClick={() => {
            shown.current += DELIVERY_PAGE;
            void refresh();
          }}
        >
          More deliveries
        </button>
      ) : null}
    </section>
  );
}
