import { useEffect, useRef, useState } from 'preact/hooks';
import type { Operation } from '../../../client/index.js';
import { OPERATION_KINDS } from '../../../domain/operations.js';
import {
  CancelOperation,
  OperationCard,
  OperationProgress,
  OperationRow,
  OperationStateBadge,
  OperationSteps,
  operationTitle,
} from '../components/operation.js';
import { Busy, ErrorBox, Notice } from '../components/ui.js';
import {
  type OperationFilter,
  formatUtc,
  isOpen,
  operationFilterOf,
  operationFilterQuery,
  operationMatches,
  upsertOperation,
} from '../format.js';
import { useEngines } from '../engines.js';
import { follow, reader, watchOperation } from '../live.js';
import { href, navigate } from '../router.js';
import { api } from '../session.js';

const PAGE = 20;

const STATE_CHOICES: readonly [string, string][] = [
  ['', 'Any state'],
  ['PENDING,RUNNING', 'Open (PENDING or RUNNING)'],
  ['PENDING', 'PENDING'],
  ['RUNNING', 'RUNNING'],
  ['SUCCEEDED', 'SUCCEEDED'],
  ['FAILED', 'FAILED'],
  ['CANCELLED', 'CANCELLED'],
];

function listOptions(f: OperationFilter) {
  return {
    ...(f.instance ? { instance: f.instance } : {}),
    ...(f.state ? { states: f.state.split(',') } : {}),
    ...(f.kind ? { kinds: [f.kind] } : {}),
    limit: PAGE,
  };
}

/**
 * The account's operations, newest first, filtered by instance, state and kind (kept in the
 * URL), a page at a time. Live: a new operation appears and each one moves as the stream tells;
 * while the stream is down the first page and the open operations are read again.
 */
export function OperationsPage({ query }: { query: URLSearchParams }) {
  const filter = operationFilterOf(query);
  const key = operationFilterQuery(filter);
  const [ops, setOps] = useState<readonly Operation[] | undefined>();
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const [more, setMore] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const [instance, setInstance] = useState(filter.instance);
  const shown = useRef<readonly Operation[]>([]);
  shown.current = ops ?? [];

  useEffect(() => setInstance(filter.instance), [filter.instance]);

  useEffect(() => {
    setOps(undefined);
    setNext(null);
    setError(undefined);
    let first = true;
    const merge = (list: readonly Operation[]) => setOps((cur) => list.reduce((l, op) => upsertOperation(l, op, true), cur ?? []));
    const r = reader(
      async () => {
        const page = await api((c) => c.listOperations(listOptions(filter)));
        // open operations further down than the first page are read one by one
        const inPage = new Set(page.operations.map((o) => o.id));
        const older = shown.current.filter((o) => isOpen(o) && !inPage.has(o.id));
        const refreshed = await Promise.all(older.map((o) => api((c) => c.getOperation(o.id)).catch(() => o)));
        return { ...page, operations: [...page.operations, ...refreshed] };
      },
      {
        onValue: (page) => {
          merge(page.operations);
          if (first) setNext(page.nextCursor);
          first = false;
          setError(undefined);
        },
        onError: setError,
      },
    );
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        if (!e.kind.startsWith('operation.')) return;
        const op = e.data as unknown as Operation;
        setOps((cur) => (cur === undefined ? cur : upsertOperation(cur, op, operationMatches(op, filter))));
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [key]);

  const loadMore = async () => {
    if (next === null) return;
    setMore({ busy: true });
    try {
      const page = await api((c) => c.listOperations({ ...listOptions(filter), cursor: next }));
      setOps((cur) => page.operations.reduce((l, op) => upsertOperation(l, op, true), cur ?? []));
      setNext(page.nextCursor);
      setMore({ busy: false });
    } catch (err) {
      setMore({ busy: false, error: err });
    }
  };

  const apply = (f: OperationFilter) => navigate(`/operations${operationFilterQuery(f)}`);
  const filtered = key !== '';
  const { engines } = useEngines();
  const unit = (op: Operation) => engines?.operationPlanUnit(op);
  const running = (ops ?? []).filter(isOpen);
  const finished = (ops ?? []).filter((o) => !isOpen(o));

  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Operations
      </h1>
      <p class="hint">
        Every long action on your instances (create, resize, rename, delete, ACL and user changes) with its steps and outcome, newest first.
        They change here as they run; an open create can be cancelled until its build starts.
      </p>
      {/* biome-ignore lint/a11y/useSemanticElements: role=search is the search landmark in every browser; the <search> element (2023) has no role in older ones */}
      <form
        class="filters"
        role="search"
        aria-label="Filter operations"
        onSubmit={(e) => {
          e.preventDefault();
          apply({ ...filter, instance: instance.trim() });
        }}
      >
        <label>
          Instance
          <input
            type="search"
            name="instance"
            value={instance}
            placeholder="name or id"
            onInput={(e) => setInstance(e.currentTarget.value)}
          />
        </label>
        <label>
          State
          <select
            name="state"
            value={filter.state}
            onChange={(e) => apply({ ...filter, instance: instance.trim(), state: e.currentTarget.value })}
          >
            {STATE_CHOICES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <select
            name="kind"
            value={filter.kind}
            onChange={(e) => apply({ ...filter, instance: instance.trim(), kind: e.currentTarget.value })}
          >
            <option value="">Any kind</option>
            {OPERATION_KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <div class="filter-actions">
          <button type="submit">Apply</button>
          {filtered ? (
            <a class="button" href={href('operations')}>
              Clear filters
            </a>
          ) : null}
        </div>
      </form>
      <ErrorBox error={error} title="The operations could not be read" />
      {ops === undefined && !error ? <Busy>Loading operations…</Busy> : null}
      {ops !== undefined && ops.length === 0 ? (
        <p class="empty">
          {filtered ? 'No operation matches the filters.' : 'No operation yet: they appear when you create, change or delete an instance.'}
        </p>
      ) : null}
      {running.length > 0 ? (
        <>
          <h2 id="running-title">Under way</h2>
          <ul class="op-list" aria-labelledby="running-title">
            {running.map((op) => (
              <li key={op.id}>
                <OperationCard op={op} planUnit={unit(op)} onCancelled={(o) => setOps((cur) => upsertOperation(cur ?? [], o, true))} />
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {finished.length > 0 ? (
        <>
          <h2 id="finished-title">Finished</h2>
          {/* biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable) */}
          <div class="table-wrap" role="region" aria-labelledby="finished-title" tabIndex={0}>
            <table class="op-table cards">
              <thead>
                <tr>
                  <th scope="col">What</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">When (UTC)</th>
                  <th scope="col">Took</th>
                </tr>
              </thead>
              <tbody>
                {finished.map((op) => (
                  <OperationRow key={op.id} op={op} planUnit={unit(op)} />
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
      {more.busy ? <Busy>Loading older operations…</Busy> : null}
      <ErrorBox error={more.error} title="Older operations could not be read" />
      {next !== null && ops !== undefined && !more.busy ? (
        <button type="button" onClick={() => void loadMore()}>
          Older operations
        </button>
      ) : null}
    </section>
  );
}

/** One operation in full: its facts, every step with its time, its error, Cancel where it may work. Live. */
export function OperationPage({ id }: { id: string }) {
  const { engines } = useEngines();
  const [op, setOp] = useState<Operation | undefined>();
  const [error, setError] = useState<unknown>();
  const [cancelled, setCancelled] = useState(false);
  useEffect(() => {
    setOp(undefined);
    return watchOperation(id, {
      onValue: (o) => {
        setOp(o);
        setError(undefined);
      },
      onError: setError,
    });
  }, [id]);

  const crumbs = (
    <p class="crumbs">
      <a href={href('operations')}>Operations</a> /
    </p>
  );
  if (!op) {
    return (
      <section aria-labelledby="page-title">
        {crumbs}
        <h1 id="page-title" tabIndex={-1}>
          Operation {id}
        </h1>
        {error ? <ErrorBox error={error} /> : <Busy>Loading the operation…</Busy>}
      </section>
    );
  }
  const d = (ms: { $date: number } | null) => (ms ? `${formatUtc(ms.$date)} UTC` : '—');
  return (
    <section aria-labelledby="page-title" data-operation={op.id} data-state={op.state}>
      {crumbs}
      <div class="title-row">
        <h1 id="page-title" tabIndex={-1}>
          {operationTitle(op, engines?.operationPlanUnit(op))}
        </h1>
        <OperationStateBadge state={op.state} />
        <OperationProgress op={op} />
      </div>
      {op.error ? (
        <div class="error-box" role="alert">
          <strong>{op.error.code}: </strong>
          {op.error.message}
        </div>
      ) : null}
      {cancelled && op.state === 'CANCELLED' ? <Notice>The {op.kind} is cancelled.</Notice> : null}
      <CancelOperation
        op={op}
        onCancelled={(o) => {
          setOp(o);
          setCancelled(true);
        }}
      />
      <ErrorBox error={error} title="The operation could not be refreshed" />
      <h2>Steps</h2>
      <OperationSteps op={op} />
      <h2>Facts</h2>
      <dl class="facts-list">
        <dt>Id</dt>
        <dd>
          <code>{op.id}</code>
        </dd>
        <dt>Instance</dt>
        <dd>{op.instance_name ? <a href={href('instances', op.instance_name)}>{op.instance_name}</a> : '—'}</dd>
        <dt>Asked by</dt>
        <dd>
          {op.requested_by
            ? `${op.requested_by.login} (${op.requested_by.credential}${op.requested_by.id ? ` ${op.requested_by.id}` : ''})`
            : '—'}
        </dd>
        <dt>Request id</dt>
        <dd>
          <code>{op.request_id ?? '—'}</code>
        </dd>
        <dt>Recorded</dt>
        <dd>{d(op.date_created)}</dd>
        <dt>Started</dt>
        <dd>{d(op.date_started)}</dd>
        <dt>Finished</dt>
        <dd>{d(op.date_finished)}</dd>
        <dt>Deadline</dt>
        <dd>{isOpen(op) ? `${d(op.deadline)}: FAILED if not done by then` : d(op.deadline)}</dd>
        {Object.entries(op.detail).map(([k, v]) => [
          <dt key={`k-${k}`}>{k.replace(/_/g, ' ')}</dt>,
          <dd key={`v-${k}`}>{typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v)}</dd>,
        ])}
      </dl>
      <p>
        <a
          href={`${href('operations')}${op.instance_name ? operationFilterQuery({ instance: op.instance_name, state: '', kind: '' }) : ''}`}
        >
          {op.instance_name ? `Every operation of ${op.instance_name}` : 'Every operation'}
        </a>
      </p>
    </section>
  );
}
