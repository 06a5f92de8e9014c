import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { HangarApiError } from '../../../client/index.js';
import { fieldMessage } from '../format.js';
import { Busy, ErrorBox, Notice } from './ui.js';

/**
 * A page's changes, one at a time: what is under way (its sentence), the failure of the last one,
 * and what went well. `run` clears the previous outcome, then says the new one.
 */
export interface Mutation {
  readonly busy: string | undefined;
  readonly error: unknown;
  readonly notice: ComponentChildren;
  /**
   * Runs `action` with `what` shown meanwhile; its result (a sentence) becomes the notice once
   * `after` (reading the list again) is done. Resolves to whether it succeeded.
   */
  run(what: string, action: () => Promise<ComponentChildren | undefined>, after?: () => Promise<void>): Promise<boolean>;
  /** Adds to the notice (a warning of the answer, say). */
  say(notice: ComponentChildren): void;
}

export function useMutation(): Mutation {
  const [busy, setBusy] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const [notice, setNotice] = useState<ComponentChildren>();
  const run: Mutation['run'] = async (what, action, after) => {
    setBusy(what);
    setError(undefined);
    setNotice(undefined);
    try {
      const done = await action();
      await after?.();
      if (done !== undefined && done !== null && done !== '') setNotice(done);
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      setBusy(undefined);
    }
  };
  return { busy, error, notice, run, say: setNotice };
}

/**
 * The errors of a form: the API's 400 naming one of `labels`' fields goes next to that field, in
 * the form's words; any other failure is `general`.
 */
export function formErrors(
  error: unknown,
  labels: Readonly<Record<string, string>>,
): { of: (field: string) => string | undefined; general: unknown } {
  const fieldOf = error instanceof HangarApiError && error.status === 400 && error.field ? error.field.replace(/^.*\./, '') : undefined;
  const own = fieldOf !== undefined && fieldOf in labels;
  return {
    of: (field) => (own && fieldOf === field ? fieldMessage((error as HangarApiError).message, labels) : undefined),
    general: own ? undefined : error,
  };
}

/** What a mutation says: `error` (its failure, unless a field shows it), what is under way, what went well. */
export function MutationStatus({ mutation, error }: { mutation: Mutation; error: unknown }) {
  return (
    <>
      <ErrorBox error={error} />
      {mutation.busy ? <Busy>{mutation.busy}</Busy> : null}
      {mutation.notice ? <Notice>{mutation.notice}</Notice> : null}
    </>
  );
}
