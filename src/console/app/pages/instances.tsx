import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Instance } from '../../../client/index.js';
import { ErrorBox, StateBadge } from '../components/ui.js';
import { useEngines } from '../engines.js';
import { type SortKey, filterInstances, formatPlan, sortInstances } from '../format.js';
import { liveText, useLiveMode, watchInstances } from '../live.js';
import { href } from '../router.js';

const COLUMNS: readonly { key: SortKey; label: string }[] = [
  { key: 'name', label: 'Name' },
  { key: 'state', label: 'State' },
  { key: 'service', label: 'Service' },
  { key: 'type', label: 'Type' },
  { key: 'plan', label: 'Plan' },
  { key: 'zone', label: 'Zone' },
  { key: 'version', label: 'Version' },
  { key: 'created', label: 'Created (UTC)' },
];

/** The account's instances, live: states change on the page as they change in hangar. */
export function InstancesPage({ notice }: { notice?: string | null }) {
  const [list, setList] = useState<Instance[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [text, setText] = useState('');
  const [service, setService] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; dir: 'asc' | 'desc' }>({ key: 'name', dir: 'asc' });
  const mode = useLiveMode();
  const { engines } = useEngines();

  useEffect(
    () =>
      watchInstances({
        onValue: (l) => {
          setList(l);
          setError(undefined);
        },
        onError: setError,
      }),
    [],
  );

  const services = useMemo(() => [...new Set((list ?? []).map((i) => i.service))].sort(), [list]);
  const shown = useMemo(() => sortInstances(filterInstances(list ?? [], text, service), sort.key, sort.dir), [list, text, service, sort]);
  const toggle = (key: SortKey) => setSort((s) => ({ key, dir: s.key === key && s.dir === 'asc' ? 'desc' : 'asc' }));

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          Instances
        </h1>
        <a class="button primary" href={href('instances', 'new')}>
          Create instance
        </a>
      </div>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <ErrorBox error={error} title="The list could not be refreshed" />
      {/* biome-ignore lint/a11y/useSemanticElements: role=search is the search landmark in every browser; the <search> element (2023) has no role in older ones */}
      <div class="filters" role="search">
        <label>
          Filter
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="name, state, zone…" />
        </label>
        <label>
          Service
          <select value={service} onChange={(e) => setService(e.currentTarget.value)}>
            <option value="">All services</option>
            {services.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {list === undefined && !error ? (
        <p role="status">Loading instances…</p>
      ) : list !== undefined && list.length === 0 ? (
        <p class="empty">
          No instances yet. <a href={href('instances', 'new')}>Create the first one</a>.
        </p>
      ) : (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-label="Instances" tabIndex={0}>
          <table class="instances cards">
            <caption class="visually-hidden">
              {shown.length} of {list?.length ?? 0} instances, sorted by {sort.key} {sort.dir === 'asc' ? 'ascending' : 'descending'};{' '}
              {liveText(mode)}
            </caption>
            <thead>
              <tr>
                {COLUMNS.map((c) => (
                  <th key={c.key} scope="col" aria-sort={sort.key === c.key ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'}>
                    <button type="button" class="sort" onClick={() => toggle(c.key)}>
                      {c.label}
                      <span aria-hidden="true">{sort.key === c.key ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                    </button>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {shown.map((i) => (
                <tr key={i.id} data-instance={i.name}>
                  <th scope="row">
                    <a href={href('instances', i.name)}>{i.name}</a>
                  </th>
                  <td data-label="State">
                    <StateBadge state={i.state} />
                  </td>
                  <td data-label="Service">{i.service}</td>
                  <td data-label="Type">{i.type}</td>
                  <td data-label="Plan">{formatPlan(engines?.of(i)?.plan_unit, i.plan)}</td>
                  <td data-label="Zone">{i.zone}</td>
                  <td data-label="Version">{i.version}</td>
                  <td data-label="Created">{i.created}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {shown.length === 0 && list && list.length > 0 ? <p class="empty">No instance matches the filter.</p> : null}
        </div>
      )}
    </section>
  );
}
