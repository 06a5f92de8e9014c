import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { describeError } from '../format.js';

/** A failure: what happened and what to do (announced to screen readers). */
export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (error === undefined || error === null) return null;
  const p = describeError(error);
  return (
    <div class="error-box" role="alert">
      {title ? <strong>{title}: </strong> : null}
      <span class="what">{p.what}</span> <span class="remedy">{p.remedy}</span>
      {p.requestId ? <small class="request-id"> (request id {p.requestId})</small> : null}
    </div>
  );
}

/** Something under way: a spinner and a sentence (announced politely). */
export function Busy({ children }: { children: ComponentChildren }) {
  return (
    <p class="busy" role="status">
      <span class="spinner" aria-hidden="true" />
      {children}
    </p>
  );
}

/** A notice that something went well (announced politely). */
export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

interface FieldProps {
  readonly label: string;
  /** The API field this input carries: a 400 naming it is shown here. */
  readonly error?: string | undefined;
  readonly hint?: string | undefined;
  readonly children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => JSX.Element;
}

/** A labelled control with its hint and its error next to it. */
export function Field({ label, error, hint, children }: FieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : '', error ? errorId : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children({ id, describedBy, invalid: Boolean(error) })}
      {hint ? (
        <small id={hintId} class="hint">
          {hint}
        </small>
      ) : null}
      {error ? (
        <small id={errorId} class="field-error">
          {error}
        </small>
      ) : null}
    </div>
  );
}

/**
 * Puts text on the clipboard. The Clipboard API exists only in secure contexts (https, or
 * localhost); a hangar served over plain http on another name gets the older way.
 */
async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* refused: try the older way */
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'visually-hidden';
  const focused = document.activeElement as HTMLElement | null;
  document.body.append(area);
  area.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  } finally {
    area.remove();
    focused?.focus();
  }
}

/** Copies a value; says so where the click was. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const t = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(t);
  }, [state]);
  const copy = async () => setState((await copyText(value)) ? 'copied' : 'failed');
  return (
    <button type="button" class="small" onClick={() => void copy()} aria-label={`Copy ${label}`}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select and copy by hand' : 'Copy'}
    </button>
  );
}

/** A value with a copy button; `secret` values are masked until asked for. */
export function CopyValue({ label, value, secret = false }: { label: string; value: string; secret?: boolean }) {
  const [shown, setShown] = useState(!secret);
  return (
    <div class="copy-value">
      <dt>{label}</dt>
      <dd>
        <code class={shown ? '' : 'masked'}>{shown ? value : '••••••••••••'}</code>
        {secret ? (
          <button type="button" class="small" aria-pressed={shown} onClick={() => setShown(!shown)}>
            {shown ? `Hide ${label.toLowerCase()}` : `Show ${label.toLowerCase()}`}
          </button>
        ) : null}
        <CopyButton value={value} label={label.toLowerCase()} />
      </dd>
    </div>
  );
}

interface ConfirmProps {
  readonly title: string;
  readonly children: ComponentChildren;
  readonly confirmLabel: string;
  /** The confirm button stays disabled while this is true (a name not typed yet). */
  readonly confirmDisabled?: boolean;
  readonly onConfirm: () => void;
  readonly onCancel: () => void;
}

/** A modal question (the native dialog: focus kept inside, Escape cancels). */
export function Confirm({ title, children, confirmLabel, confirmDisabled = false, onConfirm, onCancel }: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      <div>{children}</div>
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm} disabled={confirmDisabled}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** The state of an instance as a badge. */
export function StateBadge({ state }: { state: string }) {
  const kind = ['ACTIVE', 'COMPLETED'].includes(state) ? 'ok' : state === 'FAILED' ? 'bad' : state === 'DEGRADED' ? 'warn' : 'busy';
  return <span class={`badge ${kind}`}>{state}</span>;
}
