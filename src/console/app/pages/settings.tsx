import { useEffect, useState } from 'preact/hooks';
import type { Instance, Zone } from '../../../client/index.js';
import { formErrors } from '../components/mutation.js';
import { Busy, ErrorBox, Field, Notice } from '../components/ui.js';
import { useOperation } from '../components/operation.js';
import { useEngines } from '../engines.js';
import { READY, formatPlan, isOpen, planRefusal, stepLabel } from '../format.js';
import { navigate } from '../router.js';
import { api } from '../session.js';

/** Resize (where the product has the Redis routes: to a larger plan), rename, delete (the name typed to confirm). */
export function SettingsTab({
  instance,
  onDeleting,
  onOperation,
}: {
  instance: Instance;
  onDeleting: () => void;
  onOperation: (id: string) => void;
}) {
  const { engines } = useEngines();
  return (
    <>
      {engines?.of(instance)?.features.redis_api ? <Resize instance={instance} onOperation={onOperation} /> : null}
      <Rename instance={instance} />
      <Delete instance={instance} onDeleting={onDeleting} onOperation={onOperation} />
    </>
  );
}

function Resize({ instance, onOperation }: { instance: Instance; onOperation: (id: string) => void }) {
  const { engines } = useEngines();
  const product = engines?.of(instance);
  const unit = product?.plan_unit;
  const [plans, setPlans] = useState<number[] | undefined>();
  const [zone, setZone] = useState<Zone | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [plan, setPlan] = useState('');
  const [started, setStarted] = useState<{ id: string; plan: number } | undefined>();
  const [error, setError] = useState<unknown>();
  const [sending, setSending] = useState(false);
  const { op } = useOperation(started?.id);

  useEffect(() => {
    void api((c) => c.listZones()).then((zones) => {
      const z = zones.find((x) => x.name === instance.zone);
      setZone(z);
      setPlans(
        [...(z?.services.find((s) => s.service === instance.service)?.plans ?? [])].filter((p) => p > instance.plan).sort((a, b) => a - b),
      );
    }, setLoadError);
  }, [instance.zone, instance.service, instance.plan]);

  // a larger plan promises more memory: the zone must have the difference free (the server's own rule)
  const refusal = (p: number) => planRefusal(product, instance.type, p, zone?.free_mb ?? null, instance.plan);
  useEffect(() => {
    if (!plans) return;
    const fits = plans.filter((p) => !refusal(p));
    if (!fits.map(String).includes(plan)) setPlan(fits[0] !== undefined ? String(fits[0]) : '');
  }, [plans, plan, zone, product]);

  // the resize is followed through its operation: done when it SUCCEEDED, with its error when not
  const running = started !== undefined && (op === undefined || isOpen(op));
  const last = op?.steps.at(-1);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setStarted(undefined);
    setSending(true);
    const to = Number(plan);
    try {
      await api((c) =>
        c.resizeRedis(instance.name, to, {
          onOperation: (id) => {
            setStarted({ id, plan: to });
            onOperation(id);
          },
        }),
      );
    } catch (err) {
      setError(err);
    } finally {
      setSending(false);
    }
  };

  const errors = formErrors(error, { new_plan: 'New plan' });
  const planError = errors.of('new_plan');
  const fitting = (plans ?? []).filter((p) => !refusal(p));
  return (
    <section aria-labelledby="resize-title">
      <h2 id="resize-title">Resize</h2>
      <p class="hint">
        Now {formatPlan(unit, instance.plan)}. A resize grows maxmemory on the primary and the replica, live, keeping the data; plans only
        grow.
      </p>
      <ErrorBox error={loadError} title="The plans could not be read" />
      {plans && plans.length === 0 && !running ? <p>This instance has the largest plan offered.</p> : null}
      {plans && plans.length > 0 ? (
        <form class="inline" onSubmit={(e) => void submit(e)}>
          <Field label="New plan" error={planError}>
            {({ id, describedBy, invalid }) => (
              <select
                id={id}
                name="new_plan"
                value={plan}
                onChange={(e) => setPlan(e.currentTarget.value)}
                aria-describedby={describedBy}
                aria-invalid={invalid}
              >
                {plans.map((p) => {
                  const why = refusal(p);
                  return (
                    <option key={p} value={String(p)} disabled={why !== undefined}>
                      {formatPlan(unit, p)}
                      {why ? ` (${why})` : ''}
                    </option>
                  );
                })}
              </select>
            )}
          </Field>
          <button type="submit" class="primary" disabled={sending || running || !READY.includes(instance.state) || fitting.length === 0}>
            Resize
          </button>
        </form>
      ) : null}
      {plans && plans.length > 0 && fitting.length === 0 ? (
        <p class="hint">
          No larger plan fits in {instance.zone} now: the zone has {zone?.free_mb?.toLocaleString('en-US')} MB free.
        </p>
      ) : null}
      {!READY.includes(instance.state) && !running ? <p class="hint">A resize can start once the instance is ACTIVE.</p> : null}
      <ErrorBox error={errors.general} />
      {sending && !started ? <Busy>Asking for the resize…</Busy> : null}
      {running && started ? (
        <Busy>
          Resizing to {formatPlan(unit, started.plan)}
          {last ? `: ${stepLabel(last.name)}` : ''}… (its operation, above, shows every step)
        </Busy>
      ) : null}
      {started && op?.state === 'SUCCEEDED' ? <Notice>Resized: the instance now has {formatPlan(unit, started.plan)}.</Notice> : null}
      {started && op && (op.state === 'FAILED' || op.state === 'CANCELLED') ? (
        <div class="error-box" role="alert">
          The resize {op.state === 'FAILED' ? 'failed' : 'was cancelled'}:{' '}
          {op.error?.message ?? op.steps.at(-1)?.message ?? 'no reason given'}.{' '}
          <span class="remedy">hangar keeps converging the instance to the plan it records; if it stays DEGRADED, tell your operator.</span>
        </div>
      ) : null}
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
  const errors = formErrors(error, { name: 'New name' });
  const nameError = errors.of('name');
  return (
    <section aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <p class="hint">The ACLs, users and addresses stay; clients that use the API with the old name must use the new one.</p>
      <form class="inline" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="New name" error={nameError}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              name="new_name"
              maxLength={64}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              aria-describedby={describedBy}
              aria-invalid={invalid}
            />
          )}
        </Field>
        <button type="submit" disabled={busy || name.trim() === '' || name.trim() === instance.name}>
          Rename
        </button>
      </form>
      <ErrorBox error={errors.general} />
      {busy ? <Busy>Renaming…</Busy> : null}
    </section>
  );
}

function Delete({ instance, onDeleting, onOperation }: { instance: Instance; onDeleting: () => void; onOperation: (id: string) => void }) {
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
      await api((c) => c.deleteInstance(instance.name, { onOperation }));
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
        <button type="submit" class="danger" disabled={deleting || typed !== instance.name}>
          Delete instance
        </button>
      </form>
      <ErrorBox error={error} />
      {deleting ? (
        <Busy>Deleting {instance.name} (its operation, above, shows every step): the page goes back to the list once it is gone…</Busy>
      ) : null}
    </section>
  );
}
