import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Backup, BackupPolicy, BackupPolicyRequest, Instance } from '../../../client/index.js';
import { InstanceOperations } from '../components/instance-operations.js';
import { formErrors } from '../components/mutation.js';
import { useOperation } from '../components/operation.js';
import { Busy, Confirm, ErrorBox, Field, Notice, StateBadge } from '../components/ui.js';
import {
  BUSY_STATES,
  READY,
  describePolicy,
  formatBytes,
  formatPlan,
  isOpen,
  operationFilterQuery,
  policyBody,
  shortSha,
  stepLabel,
} from '../format.js';
import { useEngines } from '../engines.js';
import { follow, reader, watchInstance, watchInstances } from '../live.js';
import { href, navigate } from '../router.js';
import { api } from '../session.js';

/**
 * The backups of an instance (`#/backups/<name>`), chosen from a select: listed newest first
 * and live (a backup moves PENDING, RUNNING, COMPLETED as its operation tells the stream); take
 * one now, download one (fetched with the session's token, saved from a blob), delete one after
 * asking, restore one in place (the instance's name typed to confirm) or into a new instance
 * (the create form with `restore_from`), and the backup policy. Backups of a deleted instance are
 * listed under the name it had, for a restore into a new instance.
 */
export function BackupsPage({ name }: { name: string | undefined }) {
  const [instances, setInstances] = useState<Instance[] | undefined>();
  const [listError, setListError] = useState<unknown>();
  useEffect(
    () =>
      watchInstances({
        onValue: (l) => {
          setInstances(l);
          setListError(undefined);
        },
        onError: setListError,
      }),
    [],
  );
  const names = (instances ?? []).map((i) => i.name).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const chooser = (
    <form class="filters" onSubmit={(e) => e.preventDefault()}>
      <label>
        Instance
        <select
          name="instance"
          value={name ?? ''}
          onChange={(e) => navigate(e.currentTarget.value ? `/backups/${encodeURIComponent(e.currentTarget.value)}` : '/backups')}
        >
          <option value="">Choose an instance…</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
          {/* the page's instance is shown chosen while the list is still being read */}
          {name && !instances ? <option value={name}>{name}</option> : null}
          {name && instances && !names.includes(name) ? <option value={name}>{name} (no instance has this name now)</option> : null}
        </select>
      </label>
    </form>
  );
  if (!name) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          Backups
        </h1>
        <p class="hint">
          Choose an instance to take, download and restore its backups and to set when they are taken. Backups are encrypted snapshots kept
          by hangar; a deleted instance's stay until their retention ends, under the name it had.
        </p>
        {chooser}
        <ErrorBox error={listError} title="The instances could not be read" />
        {instances === undefined && !listError ? <Busy>Loading instances…</Busy> : null}
        {instances && instances.length === 0 ? (
          <p class="empty">
            No instance yet: <a href={href('instances', 'new')}>create one</a>.
          </p>
        ) : null}
      </section>
    );
  }
  return <InstanceBackups key={name} name={name} chooser={chooser} />;
}

/** What a button of a row is doing now. */
interface Doing {
  readonly text: string;
  /** A download's bytes so far and in all. */
  readonly received?: number;
  readonly total?: number;
}

function InstanceBackups({ name, chooser }: { name: string; chooser: JSX.Element }) {
  const [instance, setInstance] = useState<Instance | undefined | null>(null);
  const [instanceError, setInstanceError] = useState<unknown>();
  const [backups, setBackups] = useState<Backup[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [pinned, setPinned] = useState<readonly string[]>([]);
  const [doing, setDoing] = useState<Doing | undefined>();
  const [error, setError] = useState<unknown>();
  const [notice, setNotice] = useState<string | undefined>();
  const [taken, setTaken] = useState<string | undefined>();
  const [restoring, setRestoring] = useState<{ op: string; backup: Backup } | undefined>();
  const { engines } = useEngines();
  const [toDelete, setToDelete] = useState<Backup | undefined>();
  const [toRestore, setToRestore] = useState<Backup | undefined>();
  const [typed, setTyped] = useState('');
  const backupOp = useOperation(taken).op;
  const restoreOp = useOperation(restoring?.op).op;
  const pin = (id: string) => setPinned((p) => (p.includes(id) ? p : [...p, id]));

  useEffect(
    () =>
      watchInstance(name, {
        onValue: (i) => {
          setInstance(i);
          setInstanceError(undefined);
        },
        onError: setInstanceError,
      }),
    [name],
  );

  // the list, read again whenever an operation or the state of this instance moves (a backup's steps, a scheduled one, a restore)
  const instanceId = instance?.id;
  const reread = useRef<() => void>(() => undefined);
  const refresh = () => reread.current();
  useEffect(() => {
    const r = reader(() => api((c) => c.listBackups(name)), {
      onValue: (l) => {
        setBackups(l);
        setLoadError(undefined);
      },
      onError: setLoadError,
    });
    reread.current = r.refresh;
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        const ours = e.instance_name === name || (instanceId !== undefined && e.instance_id === instanceId);
        if (ours && (e.kind.startsWith('operation.') || e.kind.startsWith('instance.'))) r.refresh();
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [name, instanceId]);

  const start = (text: string) => {
    setDoing({ text });
    setError(undefined);
    setNotice(undefined);
  };

  const backUp = async () => {
    start('Asking for a backup…');
    try {
      const b = await api((c) => c.createBackup(name, { onOperation: pin }));
      setTaken(b.id);
      refresh();
    } catch (err) {
      setError(err);
    } finally {
      setDoing(undefined);
    }
  };

  const download = async (b: Backup) => {
    start(`Downloading the backup of ${b.finished ?? b.requested} UTC…`);
    try {
      const d = await api((c) => c.downloadBackup(name, b.id));
      const chunks: Uint8Array[] = [];
      let received = 0;
      const stream = d.body.getReader();
      for (;;) {
        const { done, value } = await stream.read();
        if (done) break;
        chunks.push(value);
        received += value.byteLength;
        setDoing({ text: `Downloading ${d.fileName}`, received, total: d.sizeBytes });
      }
      if (received !== d.sizeBytes)
        throw new Error(
          `The download was cut short: ${received} of ${d.sizeBytes} bytes arrived (a backup that no longer matches its SHA-256 is never sent whole). Try again; if it happens again, restore from another backup.`,
        );
      const blob = new Blob(chunks as BlobPart[], { type: 'application/octet-stream' });
      // where the browser has WebCrypto (https, localhost), what arrived is checked against the SHA-256 recorded when it was taken
      let checked = false;
      if (globalThis.crypto?.subtle && d.sha256) {
        const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer()));
        const hex = Array.from(digest, (x) => x.toString(16).padStart(2, '0')).join('');
        if (hex !== d.sha256)
          throw new Error(
            `The file received does not match the backup's SHA-256 (${shortSha(hex)} instead of ${shortSha(d.sha256)}): it was not saved. Try again.`,
          );
        checked = true;
      }
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = d.fileName;
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      setNotice(`Saved ${d.fileName} (${formatBytes(received)}${checked ? ', SHA-256 checked' : ''}).`);
    } catch (err) {
      setError(err);
    } finally {
      setDoing(undefined);
    }
  };

  const remove = async (b: Backup) => {
    setToDelete(undefined);
    start('Deleting the backup…');
    try {
      await api((c) => c.deleteBackup(name, b.id));
      setNotice(`The backup of ${b.finished ?? b.requested} UTC is deleted.`);
      refresh();
    } catch (err) {
      setError(err);
    } finally {
      setDoing(undefined);
    }
  };

  const restore = async (b: Backup) => {
    setToRestore(undefined);
    setTyped('');
    start('Asking for the restore…');
    try {
      await api((c) =>
        c.restoreInstance(name, b.id, {
          onOperation: (id) => {
            pin(id);
            setRestoring({ op: id, backup: b });
          },
        }),
      );
    } catch (err) {
      setError(err);
    } finally {
      setDoing(undefined);
    }
  };

  const ready = instance ? READY.includes(instance.state) : false;
  const open = backups?.find((b) => b.state === 'PENDING' || b.state === 'RUNNING');
  const busyState = instance ? BUSY_STATES[instance.state] : undefined;
  const actionsOff = doing !== undefined;
  const when = (b: Backup) => `${b.finished ?? b.started ?? b.requested} UTC`;

  return (
    <section aria-labelledby="page-title">
      <p class="crumbs">
        <a href={href('backups')}>Backups</a> /
      </p>
      <div class="title-row">
        <h1 id="page-title" tabIndex={-1}>
          Backups of {name}
        </h1>
        {instance ? <StateBadge state={instance.state} /> : null}
      </div>
      {instance ? (
        <p class="facts">
          {instance.service} · {formatPlan(engines?.of(instance)?.plan_unit, instance.plan)} · {instance.zone} · version {instance.version}{' '}
          · <a href={href('instances', instance.name)}>instance page</a> ·{' '}
          <a href={`${href('operations')}${operationFilterQuery({ instance: instance.name, state: '', kind: '' })}`}>operations</a>
        </p>
      ) : null}
      {instance === undefined ? (
        <p class="hint">
          No instance is named {name} now: these backups are of one that was deleted (or renamed). They can be downloaded, or restored into
          a new instance.
        </p>
      ) : null}
      {chooser}
      <ErrorBox error={instanceError} title="The instance could not be read" />
      {instance ? <InstanceOperations instance={instance} pinned={pinned} /> : null}
      {busyState ? (
        <div class="progress-line" role="status" aria-live="polite">
          <progress aria-label={busyState} />
          <span>
            {busyState}
            {instance?.state_reason ? ` (${instance.state_reason})` : ''}
          </span>
        </div>
      ) : null}
      {instance ? (
        <div class="actions">
          <button type="button" class="primary" onClick={() => void backUp()} disabled={actionsOff || !ready || open !== undefined}>
            Back up now
          </button>
          {!ready ? <span class="hint">A backup or a restore can start once the instance is ACTIVE.</span> : null}
          {ready && open ? <span class="hint">A backup is under way: the next can start once it ends.</span> : null}
        </div>
      ) : null}
      {doing ? (
        <div class="busy" role="status">
          <span class="spinner" aria-hidden="true" />
          <span>
            {doing.text}
            {doing.total !== undefined && doing.received !== undefined
              ? `: ${formatBytes(doing.received)} of ${formatBytes(doing.total)}`
              : ''}
          </span>
          {doing.total ? <progress max={doing.total} value={doing.received ?? 0} aria-label="Downloaded" /> : null}
        </div>
      ) : null}
      <ErrorBox error={error} />
      {notice ? <Notice>{notice}</Notice> : null}
      {taken && backupOp?.state === 'SUCCEEDED' ? (
        <Notice>
          The backup is COMPLETED{typeof backupOp.detail.size_bytes === 'number' ? ` (${formatBytes(backupOp.detail.size_bytes)})` : ''}.
        </Notice>
      ) : null}
      {taken && backupOp && (backupOp.state === 'FAILED' || backupOp.state === 'CANCELLED') ? (
        <div class="error-box" role="alert">
          The backup {backupOp.state === 'FAILED' ? 'failed' : 'was cancelled'}: {backupOp.error?.message ?? 'no reason given'}.{' '}
          <span class="remedy">The instance is untouched; try again, and if it fails again tell your operator.</span>
        </div>
      ) : null}
      {restoring && restoreOp && isOpen(restoreOp) ? (
        <Busy>
          Restoring {name} from the backup of {when(restoring.backup)}
          {restoreOp.steps.at(-1) ? `: ${stepLabel(restoreOp.steps.at(-1)!.name)}` : ''}… (its operation, above, shows every step)
        </Busy>
      ) : null}
      {restoring && restoreOp?.state === 'SUCCEEDED' ? (
        <Notice>
          {name} is restored from the backup of {when(restoring.backup)} and ACTIVE again.
        </Notice>
      ) : null}
      {restoring && restoreOp?.state === 'FAILED' ? (
        <div class="error-box" role="alert">
          The restore failed: {restoreOp.error?.message ?? 'no reason given'}.{' '}
          <span class="remedy">
            Its operation above says at which step; a restore refused before the data was replaced leaves the instance as it was.
          </span>
        </div>
      ) : null}

      <h2 id="backups-title">Backups</h2>
      <ErrorBox error={loadError} title="The backups could not be read" />
      {backups === undefined && !loadError ? <Busy>Loading backups…</Busy> : null}
      {backups && backups.length === 0 ? (
        <p class="empty">No backup yet{instance ? ': take one now, or set a policy below to take them on a schedule.' : '.'}</p>
      ) : null}
      {backups && backups.length > 0 ? (
        // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table is a named region, as axe-core asks (scrollable-region-focusable); the role is the one a <section> has
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the wrapper scrolls: keyboard users focus it to scroll the table (axe-core scrollable-region-focusable)
        <div class="table-wrap" role="region" aria-labelledby="backups-title" tabIndex={0}>
          <table class="backups cards">
            <thead>
              <tr>
                <th scope="col">Started (UTC)</th>
                <th scope="col">Finished (UTC)</th>
                <th scope="col">State</th>
                <th scope="col">Taken</th>
                <th scope="col">Size</th>
                <th scope="col">SHA-256</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {backups.map((b) => {
                const label = `the backup of ${when(b)}`;
                const done = b.state === 'COMPLETED';
                return (
                  <tr key={b.id} data-backup={b.id} data-state={b.state}>
                    <th scope="row" data-label="Started">
                      {b.started ?? `${b.requested} (asked)`}
                    </th>
                    <td data-label="Finished">{b.finished ?? '—'}</td>
                    <td data-label="State" class="state">
                      <StateBadge state={b.state} />
                      {b.step && !done ? <span class="hint"> {stepLabel(b.step)}</span> : null}
                      {b.state_reason ? <span class="hint"> {b.state_reason}</span> : null}
                    </td>
                    <td data-label="Taken">{b.scheduled ? 'scheduled' : 'on demand'}</td>
                    <td data-label="Size" data-size={b.size_bytes ?? ''}>
                      {b.size_bytes !== null ? formatBytes(b.size_bytes) : '—'}
                    </td>
                    <td data-label="SHA-256">{b.sha256 ? <code title={b.sha256}>{shortSha(b.sha256)}</code> : '—'}</td>
                    <td>
                      <div class="row-buttons">
                        {done ? (
                          <button type="button" class="small" onClick={() => void download(b)} disabled={actionsOff}>
                            Download <span class="visually-hidden">{label}</span>
                          </button>
                        ) : null}
                        {done && instance ? (
                          <button
                            type="button"
                            class="small"
                            onClick={() => setToRestore(b)}
                            disabled={actionsOff || !ready || open !== undefined}
                          >
                            Restore{' '}
                            <span class="visually-hidden">
                              {label} into {name}
                            </span>
                          </button>
                        ) : null}
                        {done ? (
                          <a
                            class="button small"
                            href={`${href('instances', 'new')}?restore_from=${encodeURIComponent(b.id)}&from=${encodeURIComponent(name)}`}
                          >
                            New instance <span class="visually-hidden">from {label}</span>
                          </a>
                        ) : null}
                        {b.state === 'COMPLETED' || b.state === 'FAILED' ? (
                          <button type="button" class="small danger" onClick={() => setToDelete(b)} disabled={actionsOff}>
                            Delete <span class="visually-hidden">{label}</span>
                          </button>
                        ) : null}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}

      {instance ? <PolicyForm name={name} /> : null}

      {toDelete ? (
        <Confirm
          title="Delete this backup?"
          confirmLabel="Delete backup"
          onConfirm={() => void remove(toDelete)}
          onCancel={() => setToDelete(undefined)}
        >
          <p>
            The backup of {when(toDelete)}
            {toDelete.size_bytes !== null ? ` (${formatBytes(toDelete.size_bytes)})` : ''} is removed from the storage: it can no longer be
            downloaded or restored.
          </p>
        </Confirm>
      ) : null}
      {toRestore ? (
        <Confirm
          title={`Restore ${name} from this backup?`}
          confirmLabel={`Restore ${name}`}
          confirmDisabled={typed !== name}
          onConfirm={() => {
            if (typed === name) void restore(toRestore);
          }}
          onCancel={() => {
            setToRestore(undefined);
            setTyped('');
          }}
        >
          <p>
            The data of {name} is replaced by the backup of {when(toRestore)}: what was written since is lost. Clients are cut off while the
            engines restart; the addresses, password, users and settings stay. The instance is RESTORING until it is ACTIVE again.
          </p>
          <Field label={`Type ${name} to confirm`}>
            {({ id, describedBy }) => (
              <input
                id={id}
                name="confirm_name"
                autocomplete="off"
                value={typed}
                onInput={(e) => setTyped(e.currentTarget.value)}
                aria-describedby={describedBy}
              />
            )}
          </Field>
        </Confirm>
      ) : null}
    </section>
  );
}

type PolicyField = 'schedule' | 'every_hours' | 'daily_at' | 'keep_last' | 'keep_days';
/** The labels of the policy's fields, by their API names: a refusal naming one is said next to it, in these words. */
const POLICY_LABELS: Readonly<Record<PolicyField, string>> = {
  schedule: 'Schedule',
  every_hours: 'Hours between backups',
  daily_at: 'Time of day (UTC)',
  keep_last: 'Keep the last N backups',
  keep_days: 'Keep the backups of the last N days',
};

/** The instance's backup policy: when backups are taken (off, every N hours, daily at HH:MM UTC) and which are kept. */
function PolicyForm({ name }: { name: string }) {
  const [policy, setPolicy] = useState<BackupPolicy | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [form, setForm] = useState({ schedule: 'off', every_hours: '', daily_at: '', keep_last: '', keep_days: '' });
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<unknown>();

  const fill = (p: BackupPolicy) => {
    setPolicy(p);
    setForm({
      schedule: p.schedule,
      every_hours: p.every_hours !== null ? String(p.every_hours) : '',
      daily_at: p.daily_at ?? '',
      keep_last: p.keep_last !== null ? String(p.keep_last) : '',
      keep_days: p.keep_days !== null ? String(p.keep_days) : '',
    });
  };
  useEffect(() => {
    void api((c) => c.getBackupPolicy(name)).then(fill, setLoadError);
  }, [name]);

  const set = (k: keyof typeof form) => (e: Event) => {
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
    setSaved(false);
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    setSaved(false);
    setError(undefined);
    try {
      // what was typed is sent as it is: the API's 400 names the field it refuses
      fill(await api((c) => c.setBackupPolicy(name, policyBody(form) as BackupPolicyRequest)));
      setSaved(true);
    } catch (err) {
      setError(err);
    } finally {
      setSaving(false);
    }
  };
  const errors = formErrors(error, POLICY_LABELS);
  const fieldError = (f: PolicyField): string | undefined => errors.of(f);
  const general = errors.general;
  const text = (f: PolicyField, label: string, hint: string, placeholder?: string) => (
    <Field label={label} error={fieldError(f)} hint={hint}>
      {({ id, describedBy, invalid }) => (
        <input
          id={id}
          name={f}
          inputMode={f === 'daily_at' ? 'text' : 'numeric'}
          autocomplete="off"
          placeholder={placeholder}
          value={form[f]}
          onInput={set(f)}
          aria-describedby={describedBy}
          aria-invalid={invalid}
        />
      )}
    </Field>
  );

  return (
    <section aria-labelledby="policy-title">
      <h2 id="policy-title">Backup policy</h2>
      <ErrorBox error={loadError} title="The policy could not be read" />
      {policy === undefined && !loadError ? <Busy>Loading the policy…</Busy> : null}
      {policy ? (
        <>
          <p class="hint" data-policy={policy.schedule}>
            Now: {describePolicy(policy)}.{policy.next_run ? ` Next backup at ${policy.next_run} UTC.` : ''}
          </p>
          <form class="policy" onSubmit={(e) => void submit(e)} noValidate>
            <Field label="Schedule" error={fieldError('schedule')}>
              {({ id, describedBy, invalid }) => (
                <select
                  id={id}
                  name="schedule"
                  value={form.schedule}
                  onChange={set('schedule')}
                  aria-describedby={describedBy}
                  aria-invalid={invalid}
                >
                  <option value="off">Off: no scheduled backups</option>
                  <option value="every">Every N hours</option>
                  <option value="daily">Daily at a time (UTC)</option>
                </select>
              )}
            </Field>
            {form.schedule === 'every'
              ? text('every_hours', 'Hours between backups', 'A whole number from 1 to 8760; the first is taken that long after saving.')
              : null}
            {form.schedule === 'daily' ? text('daily_at', 'Time of day (UTC)', 'HH:MM, 00:00 to 23:59, in UTC.', 'HH:MM') : null}
            {text('keep_last', 'Keep the last N backups', 'Empty: no limit on their number.')}
            {text(
              'keep_days',
              'Keep the backups of the last N days',
              'Empty: no limit on their age. A backup either rule keeps is kept; both empty: every backup is kept.',
            )}
            <ErrorBox error={general} />
            <div class="actions">
              <button type="submit" disabled={saving}>
                Save policy
              </button>
            </div>
            {saving ? <Busy>Saving the policy…</Busy> : null}
            {saved ? <Notice>Policy saved: {describePolicy(policy)}.</Notice> : null}
          </form>
        </>
      ) : null}
    </section>
  );
}

/** On an instance's page: its last backup and policy, and the way to its Backups page. Read again as its backups run. */
export function BackupsSummary({ instance }: { instance: Instance }) {
  const [last, setLast] = useState<{ backups: Backup[]; policy: BackupPolicy | undefined } | undefined>();
  const [error, setError] = useState<unknown>();
  const { id, name } = instance;
  useEffect(() => {
    const r = reader(
      async () => {
        const [backups, policy] = await Promise.all([
          api((c) => c.listBackups(name)),
          api((c) => c.getBackupPolicy(name)).catch(() => undefined),
        ]);
        return { backups, policy };
      },
      {
        onValue: (v) => {
          setLast(v);
          setError(undefined);
        },
        onError: setError,
      },
    );
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        const kind = (e.data as { kind?: unknown }).kind;
        if (e.instance_id === id && e.kind.startsWith('operation.') && (kind === 'backup' || kind === 'restore')) r.refresh();
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [id, name]);
  const latest = last?.backups.find((b) => b.state === 'COMPLETED');
  return (
    <section aria-labelledby="backups-summary-title">
      <h2 id="backups-summary-title">Backups</h2>
      <ErrorBox error={error} title="The backups could not be read" />
      {last ? (
        <p data-last-backup={latest?.id ?? ''}>
          {latest
            ? `Last completed backup: ${latest.finished} UTC (${latest.size_bytes !== null ? formatBytes(latest.size_bytes) : 'size unknown'}).`
            : 'No completed backup yet.'}
          {last.policy ? ` ${describePolicy(last.policy)}.` : ''}
        </p>
      ) : null}
      <p>
        <a href={href('backups', name)}>Back up, download, restore and schedule the backups of {name}</a>
      </p>
    </section>
  );
}
