import { useEffect, useState } from 'preact/hooks';
import type { AuditEvent } from '../../../client/index.js';
import { Busy, ErrorBox } from '../components/ui.js';
import { api } from '../session.js';

const PAGE = 50;

/** The account's audit log: every change and login, newest first, 50 at a time. */
export function EventsPage() {
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [more, setMore] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const loadMore = async (before?: number) => {
    setBusy(true);
    setError(undefined);
    try {
      const page = await api((c) => c.listEvents({ limit: PAGE, ...(before !== undefined ? { before } : {}) }));
      setEvents((e) => (before === undefined ? page : [...e, ...page]));
      setMore(page.length === PAGE);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => void loadMore(), []);

  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Audit log
      </h1>
      <p class="hint">Every change made with this account, and every login to it (failed ones too), newest first.</p>
      <ErrorBox error={error} title="The audit log could not be read" />
      {events.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="Audit events" tabIndex={0}>
          <table class="cards">
            <thead>
              <tr>
                <th scope="col">When (UTC)</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Outcome</th>
                <th scope="col">From</th>
                <th scope="col">Request id</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id}>
                  <td data-label="When">{e.created}</td>
                  <th scope="row">{e.action}</th>
                  <td data-label="Target">{e.target ?? ''}</td>
                  <td data-label="Outcome">
                    <span class={`badge ${e.outcome === 'success' ? 'ok' : 'bad'}`}>{e.outcome}</span> {e.status ?? ''}
                  </td>
                  <td data-label="From">{e.source_ip ?? ''}</td>
                  <td data-label="Request id">
                    <code class="small">{e.request_id ?? ''}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : !busy && !error ? (
        <p class="empty">No event yet.</p>
      ) : null}
      {busy ? <Busy>Loading events…</Busy> : null}
      {more && events.length > 0 && !busy ? (
        <button type="button" onClick={() => void loadMore(events[events.length - 1]!.id)}>
          Older events
        </button>
      ) : null}
    </section>
  );
}
