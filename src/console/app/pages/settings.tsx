import { useEffect, useState } from 'preact/hooks';
import { HangarApiError, type Instance } from '../../../client/index.js';
import { Busy, ErrorBox, Field, Notice } from '../components/ui.js';
import { READY, formatPlan } from '../format.js';
import { navigate } from '../router.js';
import { api } from '../session.js';

/** Resize (redis, to a larger plan), rename, delete (the name typed to confirm). */
export function SettingsTab({ instance, onDeleting }: { instance: Instance; onDeleting: () => void }) {
  return (
    <>
      {instance.service === 'redis' ? <Resize instance={instance} /> : null}
      <Rename instance={instance} />
      <Delete instance={instance} onDeleting={onDeleting} />
    </>
  );
}

function Resize({ instance }: { instance: Instance }) {
  const [plans, setPlans] = useState<number[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [plan, setPlan] = useState('');
  const [target, setTarget] = useState<number | undefined>();
  const [error, setError] = useState<unknown>();
  const [sending, setSending] = useState(false);

  useEffect(() => {
    void api((c) => c.listZones()).then((zones) => {
      const offer = zones.find((z) => z.name === instance.zone)?.services.find((s) => s.service === instance.service);
      setPlans([...(offer?.plans ?? [])].filter((p) => p > instance.plan).sort((a, b) => a - b));
    }, setLoadError);
  }, [instance.zone, instance.service, instance.plan]);

  useEffect(() => {
    if (plans && !plans.map(String).includes(plan)) setPlan(plans[0] !== undefined ? String(plans[0]) : '');
  }, [plans, plan]);

  const done = target !== undefined && instance.plan >= target && READY.includes(instance.state);
  const running = target !== undefined && !done;
  useEffect(() => {
    if (done) setTarget(undefined);
  }, [done]);
  const [finished, setFinished] = useState<number | undefined>();
  useEffect(() => {
    if (done && target !== undefined) setFinished(target);
  }, [done, target]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setFinished(undefined);
    setSending(true);
    try {
      await api((c) => c.resizeRedis(instance.name, Number(plan)));
      setTarget(Number(plan));
    } catch (err) {
      setError(err);
    } finally {
      setSending(false);
    }
  };

  const planError = error instanceof HangarApiError && error.status === 400 && error.field === 'new_plan' ? error.message : undefined;
  return (
    <section aria-labelledby="resize-title">
      <h2 id="resize-title">Resize</h2>
      <p class="hint">
        Now {formatPlan(instance.service, instance.plan)}. A resize grows maxmemory on the primary and the replica, live, keeping the data; plans only grow.
      </p>
      <ErrorBox error={loadError} title="The plans could not be read" />
      {plans && plans.length === 0 ? <p>This instance has the largest plan offered.</p> : null}
      {plans && plans.length > 0 ? (
        <form class="inline" onSubmit={(e) => void submit(e)}>
          <Field label="New plan" error={planError}>
            {({ id, describedBy, invalid }) => (
              <select id={id} name="new_plan" value={plan} onChange={(e) => setPlan(e.currentTarget.value)} aria-describedby={describedBy} aria-invalid={invalid}>
                {plans.map((p) => (
                  <option key={p} value={String(p)}>
                    {formatPlan(instance.service, p)}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" class="primary" disabled={sending || running || !READY.includes(instance.state)}>
            Resize
          </button>
        </form>
      ) : null}
      {!READY.includes(instance.state) && !running ? <p class="hint">A resize can start once the instance is ACTIVE.</p> : null}
      <ErrorBox error={planError ? undefined : error} />
      {sending ? <Busy>Asking for the resize…</Busy> : null}
      {running ? <Busy>Resizing to {formatPlan(instance.service, target)}: {instance.state}…</Busy> : null}
      {finished !== undefined ? <Notice>Resized: the instance now has {formatPlan(instance.service, finished)}.</Notice> : null}
    </section>
  );
}

function Rename({ instance }: { instance: Instance }) {
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const to = name.trim();
    try {
      await api((c) => c.renameInstance(instance.name, to));
      navigate(`/instances/${encodeURIComponent(to)}/settings?renamed=${encodeURIComponent(instance.name)}`, { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const nameError = error instanceof HangarApiError && error.status === 400 && error.field === 'name' ? error.message : undefined;
  return (
    <section aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <p class="hint">The ACLs, users and addresses stay; clients that use the API with the old name must use the new one.</p>
      <form class="inline" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="New name" error={nameError}>
          {({ id, describedBy, invalid }) => (
            <input id={id} name="new_name" maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby={describedBy} aria-invalid={invalid} />
          )}
        </Field>
        <button type="submit" disabled={busy || name.trim() === '' || name.trim() === instance.name}>
          Rename
        </button>
      </form>
      <ErrorBox error={nameError ? undefined : error} />
      {busy ? <Busy>Renaming…</Busy> : null}
    </section>
  );
}

function Delete({ instance, onDeleting }: { instance: Instance; onDeleting: () => void }) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    if (typed !== instance.name) return;
    setBusy(true);
    setError(undefined);
    try {
      onDeleting();
      await api((c) => c.deleteInstance(instance.name));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  const deleting = busy || instance.state === 'DELETING';
  return (
    <section aria-labelledby="delete-title" class="danger-zone">
      <h2 id="delete-title">Delete</h2>
      <p>Deleting stops the engines and removes the data, ACLs and users of {instance.name}. It cannot be undone.</p>
      <form class="inline" onSubmit={(e) => void submit(e)} noValidate>
        <Field label={`Type ${instance.name} to confirm`}>
          {({ id, describedBy }) => (
            <input id={id} name="confirm_name" autocomplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} aria-describedby={describedBy} />
          )}
        </Field>
        <button type="submit" class="danger" disabled={deleting || typed !== instance.name}>
          Delete instance
        </button>
      </form>
      <ErrorBox error={error} />
      {deleting ? <Busy>Deleting {instance.name}: the page goes back to the list once it is gone…</Busy> : null}
    </section>
  );
}
