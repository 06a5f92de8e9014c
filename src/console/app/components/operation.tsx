import { useEffect, useState } from 'preact/hooks';
import type { Operation } from '../../../client/index.js';
import { formatDuration, formatUtc, isOpen, offersCancel, operationSummary, stepLabel } from '../format.js';
import { watchOperation } from '../live.js';
import { href } from '../router.js';
import { api } from '../session.js';
import { Busy, ErrorBox } from './ui.js';

/** The state of an operation as a badge. */
export function OperationStateBadge({ state }: { state: string }) {
  const kind = state === 'SUCCEEDED' ? 'ok' : state === 'FAILED' ? 'bad' : state === 'CANCELLED' ? 'warn' : 'busy';
  return <span class={`badge ${kind}`}>{state}</span>;
}

/** How far it is: a bar with the percent where hangar knows it, an indeterminate one otherwise while open. */
export function OperationProgress({ op }: { op: Operation }) {
  const label = `Progress of the ${op.kind}`;
  // a finished operation has its outcome instead
  if (!isOpen(op)) return null;
  if (op.progress !== null) {
    return (
      <span class="op-progress">
        <progress max={100} value={op.progress} aria-label={label} />
        <span>{op.progress} %</span>
      </span>
    );
  }
  return (
    <span class="op-progress">
      <progress aria-label={label} />
      <span>under way</span>
    </span>
  );
}

/** The steps it went through, with their times (UTC) and the time since it was recorded. */
export function OperationSteps({ op }: { op: Operation }) {
  const t0 = op.steps[0]?.at.$date ?? op.date_created.$date;
  return (
    <ol class="op-steps">
      {op.steps.map((s, i) => (
        <li key={i} data-step={s.name}>
          <time dateTime={new Date(s.at.$date).toISOString()}>{formatUtc(s.at.$date).slice(11)}</time>
          <span class="offset">+{formatDuration(s.at.$date - t0)}</span>
          <span class="step-name">{stepLabel(s.name)}</span>
          {s.message ? <span class="step-message">{s.message}</span> : null}
        </li>
      ))}
    </ol>
  );
}

/** The Cancel button of an open operation; the API's refusal (409) is shown with what to do. */
export function CancelOperation({ op, onCancelled }: { op: Operation; onCancelled?: (op: Operation) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  if (!offersCancel(op) && error === undefined) return null;
  const cancel = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onCancelled?.(await api((c) => c.cancelOperation(op.id)));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="op-cancel">
      {offersCancel(op) ? (
        <button type="button" class="small danger" onClick={() => void cancel()} disabled={busy}>
          Cancel {op.kind}
          <span class="visually-hidden"> {op.id}</span>
        </button>
      ) : null}
      {busy ? <Busy>Cancelling…</Busy> : null}
      <ErrorBox error={error} title="Not cancelled" />
    </div>
  );
}

/** An operation's heading line: kind, instance, what it changes (`planUnit`: of the plans it names). */
export function operationTitle(op: Operation, planUnit?: string): string {
  const summary = operationSummary(op, planUnit);
  return `${op.kind}${op.instance_name ? ` of ${op.instance_name}` : ''}${summary ? `: ${summary}` : ''}`;
}

/**
 * One operation, compact: state, progress, its latest step, its error, its steps on demand,
 * Cancel where that may work. `data-operation` and `data-state` name it for scripts and tests.
 */
export function OperationCard({
  op,
  onCancelled,
  heading = 'h3',
  planUnit,
}: {
  op: Operation;
  onCancelled?: (op: Operation) => void;
  heading?: 'h2' | 'h3';
  planUnit?: string | undefined;
}) {
  const H = heading;
  const last = op.steps.at(-1);
  const took = operationTook(op);
  return (
    <article class={`op-card ${op.state.toLowerCase()}`} data-operation={op.id} data-state={op.state} aria-labelledby={`op-${op.id}`}>
      <div class="op-head">
        <H id={`op-${op.id}`}>
          <a class="op-what" href={href('operations', op.id)}>
            {operationTitle(op, planUnit)}
          </a>
        </H>
        <OperationStateBadge state={op.state} />
        <OperationProgress op={op} />
      </div>
      <p class="op-meta">
        {op.created} UTC{op.requested_by ? ` · asked by ${op.requested_by.login}` : ''}
      </p>
      <p class="op-last" aria-live="polite">
        {last ? `${stepLabel(last.name)}${last.message ? `: ${last.message}` : ''}` : ''}
        {took !== undefined ? ` (took ${formatDuration(took)})` : ''}
      </p>
      {op.error ? (
        <div class="error-box" role="alert">
          <strong>{op.error.code}: </strong>
          {op.error.message}
        </div>
      ) : null}
      <details>
        <summary>Steps ({op.steps.length})</summary>
        <OperationSteps op={op} />
      </details>
      {onCancelled ? <CancelOperation op={op} onCancelled={onCancelled} /> : null}
    </article>
  );
}

/** How long a finished operation took, from its record to its end. */
export function operationTook(op: Operation): number | undefined {
  return op.date_finished ? op.date_finished.$date - op.date_created.$date : undefined;
}

/**
 * A finished operation as a row of a table of class "cards": what, its outcome (and error), when,
 * how long. `data-operation` and `data-state` name it for scripts and tests.
 */
export function OperationRow({ op, planUnit }: { op: Operation; planUnit?: string | undefined }) {
  const took = operationTook(op);
  return (
    <tr data-operation={op.id} data-state={op.state}>
      <th scope="row">
        <a class="op-what" href={href('operations', op.id)}>
          {operationTitle(op, planUnit)}
        </a>
      </th>
      <td data-label="Outcome" class="op-outcome">
        <OperationStateBadge state={op.state} />
        {op.error ? <span class="op-error"> {op.error.message}</span> : null}
      </td>
      <td data-label="When">
        <time dateTime={new Date(op.date_created.$date).toISOString()}>{op.created}</time>
      </td>
      <td data-label="Took">{took !== undefined ? formatDuration(took) : '—'}</td>
    </tr>
  );
}

/** An operation followed live by its id; undefined until read (and for no id). */
export function useOperation(id: string | undefined): { op: Operation | undefined; error: unknown } {
  const [op, setOp] = useState<Operation | undefined>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    setOp(undefined);
    setError(undefined);
    if (id === undefined) return;
    return watchOperation(id, {
      onValue: (o) => {
        setOp(o);
        setError(undefined);
      },
      onError: setError,
    });
  }, [id]);
  return { op, error };
}
