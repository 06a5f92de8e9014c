import { useEffect, useRef, useState } from 'preact/hooks';
import type { Backup, CreateInstanceRequest, Zone } from '../../../client/index.js';
import { formErrors } from '../components/mutation.js';
import { Busy, ErrorBox, Field } from '../components/ui.js';
import { useEngines } from '../engines.js';
import { formatBytes, formatPlan, planRefusal, plansHolding, shortSha } from '../format.js';
import { href, navigate } from '../router.js';
import { api } from '../session.js';
import { useMyAddress } from './acls.js';

/** The labels of the form's fields, by their API names: a refusal naming one is said next to it, in these words. */
const LABELS = {
  name: 'Name',
  zone: 'Zone',
  service: 'Service',
  engine: 'Engine',
  type: 'Type',
  plan: 'Plan',
  version: 'Version',
  restore_from: 'Restore from backup',
};

/**
 * Create an instance. Every choice comes from `GET /v2/zones/`: the services each zone can run
 * now, their engines (a choice where a service has several, the zone's default first), types,
 * plans and the chosen engine's versions; plans the zone has no room for are offered disabled,
 * saying why, by the memory each plan promises (`GET /v2/engines/`). A 400 naming a field is
 * shown next to it, in the form's words. The browser's address is admitted from the start
 * unless unchecked. With `?restore_from=<backup id>&from=<instance>` (a backup's "New instance"
 * on the Backups page) the instance is restored from that backup once built: its service and
 * version are chosen, and the plans too small for what the backed-up instance used are not
 * offered.
 */
export function CreatePage({ query }: { query?: URLSearchParams }) {
  const restoreFrom = query?.get('restore_from') ?? '';
  const from = query?.get('from') ?? '';
  const [backup, setBackup] = useState<Backup | undefined>();
  const [backupError, setBackupError] = useState<unknown>();
  const applied = useRef<string | undefined>(undefined);
  const [zones, setZones] = useState<Zone[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const { engines, error: enginesError } = useEngines();
  const myIp = useMyAddress();
  const [form, setForm] = useState({ name: '', zone: '', service: '', engine: '', type: '', plan: '', version: '', admitMe: true });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    void api((c) => c.listZones()).then(setZones, setLoadError);
  }, []);

  useEffect(() => {
    setBackup(undefined);
    setBackupError(undefined);
    if (restoreFrom && from) void api((c) => c.getBackup(from, restoreFrom)).then(setBackup, setBackupError);
  }, [restoreFrom, from]);

  const zone = zones?.find((z) => z.name === form.zone);
  const offer = zone?.services.find((s) => s.service === form.service);
  const engineOffer = offer?.engines.find((e) => e.engine === form.engine);
  const product = engines?.named(form.engine) ?? engines?.of({ service: form.service });
  const unit = offer?.plan_unit ?? product?.plan_unit;
  /** Why a plan cannot be had here: the zone's room (the server's rule), or a backup's data that would not fit. */
  const refusal = (p: number): string | undefined =>
    planRefusal(product, form.type, p, zone?.free_mb ?? null) ??
    (backup !== undefined && backup.service === form.service && !plansHolding(unit, [p], backup.used_memory_bytes).includes(p)
      ? "smaller than the backup's data"
      : undefined);

  // Keep every choice valid as the ones before it change: the first offered value by default
  // (the zone's default engine; the backup's service and version, and the smallest plan that
  // holds its data, once it is read; the smallest plan the zone has room for).
  useEffect(() => {
    if (!zones || zones.length === 0 || !engines) return;
    const fresh = backup !== undefined && applied.current !== backup.id;
    const want = fresh ? { ...form, service: backup.service, version: backup.engine_version, plan: '' } : form;
    const offers = (x: Zone) => x.services.some((s) => s.available && (!fresh || s.service === want.service));
    const z =
      zones.find((x) => x.name === form.zone && offers(x)) ??
      // a backup to restore moves the form to a zone that offers its service
      (fresh ? undefined : zones.find((x) => x.name === form.zone)) ??
      zones.find(offers) ??
      zones.find((x) => x.services.some((s) => s.available)) ??
      zones[0]!;
    const s = z.services.find((x) => x.service === want.service && x.available) ?? z.services.find((x) => x.available);
    const usable = (s?.engines ?? []).filter((e) => e.available);
    const e =
      usable.find((x) => x.engine === want.engine) ??
      (fresh ? usable.find((x) => x.versions.includes(want.version)) : undefined) ??
      usable.find((x) => x.engine === s?.default_engine) ??
      usable[0];
    const versions = e?.versions ?? s?.versions ?? [];
    const p = engines.named(e?.engine) ?? (s ? engines.of({ service: s.service }) : undefined);
    const type = s?.types.includes(want.type) ? want.type : (s?.types[0] ?? '');
    const holds = s && backup ? plansHolding(s.plan_unit, s.plans, backup.used_memory_bytes) : (s?.plans ?? []);
    const fitting = holds.filter((x) => !planRefusal(p, type, x, z.free_mb));
    const next = {
      ...form,
      zone: z.name,
      service: s?.service ?? '',
      engine: e?.engine ?? '',
      type,
      plan: fitting.map(String).includes(want.plan) ? want.plan : String(fitting[0] ?? holds[0] ?? s?.plans[0] ?? ''),
      version: versions.includes(want.version) ? want.version : (versions[0] ?? ''),
    };
    if (fresh) applied.current = backup.id;
    if (JSON.stringify(next) !== JSON.stringify(form)) setForm(next);
  }, [zones, form, backup, engines]);

  const errors = formErrors(error, LABELS);
  const fieldError = (f: keyof typeof LABELS) => errors.of(f);

  const set = (k: keyof typeof form) => (e: Event) => {
    const t = e.currentTarget as HTMLInputElement;
    setForm({ ...form, [k]: t.type === 'checkbox' ? t.checked : t.value });
  };
  const label = (engine: string) => engines?.named(engine)?.label ?? engine;
  const planRule = product?.plans.find((x) => x.type === form.type && String(x.plan) === form.plan);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const body: CreateInstanceRequest = {
      name: form.name.trim(),
      zone: form.zone,
      service: form.service,
      type: form.type,
      plan: Number(form.plan),
      version: form.version,
      ...(form.engine ? { engine: form.engine } : {}),
      ...(form.admitMe && myIp ? { acls: [{ cidr_mask: myIp, description: 'added by the console at creation' }] } : {}),
      ...(restoreFrom ? { restore_from: restoreFrom } : {}),
    } as CreateInstanceRequest;
    try {
      let operation: string | undefined;
      await api((c) => c.createInstance(body, { onOperation: (id) => (operation = id) }));
      // the instance's page follows the build through its operation
      navigate(`/instances/${encodeURIComponent(body.name)}${operation ? `?operation=${encodeURIComponent(operation)}` : ''}`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="page-title">
      <p class="crumbs">
        <a href={href('instances')}>Instances</a> /
      </p>
      <h1 id="page-title" tabIndex={-1}>
        {restoreFrom ? 'Restore a backup into a new instance' : 'Create an instance'}
      </h1>
      {restoreFrom ? (
        <p class="hint">
          The instance is built, then restored from the backup (RESTORING, then ACTIVE) with a password of its own.{' '}
          <a href={href('instances', 'new')}>Create an empty instance instead</a>.
        </p>
      ) : null}
      <ErrorBox error={backupError} title="The backup could not be read" />
      {loadError ? <ErrorBox error={loadError} title="The offer of this hangar could not be read" /> : null}
      <ErrorBox error={enginesError} title="The engines of this hangar could not be read" />
      {(zones === undefined || !engines) && !loadError && !enginesError ? <Busy>Reading what this hangar offers…</Busy> : null}
      {zones !== undefined && engines ? (
        <form class="create" onSubmit={(e) => void submit(e)} noValidate>
          {restoreFrom ? (
            <Field
              label="Restore from backup"
              error={fieldError('restore_from')}
              hint={
                backup
                  ? `Taken of ${backup.instance_name} at ${backup.finished ?? backup.requested} UTC: ${backup.service} ${backup.engine_version}, ${backup.size_bytes !== null ? formatBytes(backup.size_bytes) : 'size unknown'}, SHA-256 ${shortSha(backup.sha256)}${backup.used_memory_bytes !== null ? `; the instance used ${formatBytes(backup.used_memory_bytes)}, so smaller plans are not offered` : ''}.`
                  : undefined
              }
            >
              {({ id, describedBy, invalid }) => (
                <input id={id} name="restore_from" value={restoreFrom} readOnly aria-describedby={describedBy} aria-invalid={invalid} />
              )}
            </Field>
          ) : null}
          <Field label="Name" error={fieldError('name')} hint="1 to 64 ASCII letters (A-Z, a-z), digits, - and _; unique in your account.">
            {({ id, describedBy, invalid }) => (
              <input
                id={id}
                name="name"
                required
                maxLength={64}
                pattern="[A-Za-z0-9_-]{1,64}"
                value={form.name}
                onInput={set('name')}
                aria-describedby={describedBy}
                aria-invalid={invalid}
              />
            )}
          </Field>
          <Field
            label="Zone"
            error={fieldError('zone')}
            hint={
              zone && zone.capacity_mb !== null
                ? `${(zone.free_mb ?? 0).toLocaleString('en-US')} MB free of ${zone.capacity_mb.toLocaleString('en-US')} MB (runtime: ${zone.runtime})`
                : zone
                  ? `runtime: ${zone.runtime}`
                  : undefined
            }
          >
            {({ id, describedBy, invalid }) => (
              <select id={id} name="zone" value={form.zone} onChange={set('zone')} aria-describedby={describedBy} aria-invalid={invalid}>
                {zones.map((z) => (
                  <option key={z.name} value={z.name}>
                    {z.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field
            label="Service"
            error={fieldError('service')}
            hint={
              zone?.services
                .filter((s) => !s.available)
                .map((s) => `${s.service} is not offered in this zone.`)
                .join(' ') || undefined
            }
          >
            {({ id, describedBy, invalid }) => (
              <select
                id={id}
                name="service"
                value={form.service}
                onChange={set('service')}
                aria-describedby={describedBy}
                aria-invalid={invalid}
              >
                {(zone?.services ?? []).map((s) => (
                  <option key={s.service} value={s.service} disabled={!s.available}>
                    {s.service}
                    {s.available ? '' : ' (not offered here)'}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {offer && offer.engines.length > 1 ? (
            <Field
              label="Engine"
              error={fieldError('engine')}
              hint={
                [
                  offer.default_engine ? `${label(offer.default_engine)} unless you choose another.` : '',
                  ...offer.engines.filter((e) => !e.available).map((e) => `${label(e.engine)} is not offered in this zone.`),
                ]
                  .filter(Boolean)
                  .join(' ') || undefined
              }
            >
              {({ id, describedBy, invalid }) => (
                <select
                  id={id}
                  name="engine"
                  value={form.engine}
                  onChange={set('engine')}
                  aria-describedby={describedBy}
                  aria-invalid={invalid}
                >
                  {offer.engines.map((e) => (
                    <option key={e.engine} value={e.engine} disabled={!e.available}>
                      {label(e.engine)}
                      {e.available ? '' : ' (not offered here)'}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          ) : null}
          <Field label="Type" error={fieldError('type')}>
            {({ id, describedBy, invalid }) => (
              <select id={id} name="type" value={form.type} onChange={set('type')} aria-describedby={describedBy} aria-invalid={invalid}>
                {(offer?.types ?? []).map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field
            label="Plan"
            error={fieldError('plan')}
            hint={
              planRule
                ? `In ${unit}. It takes ${planRule.promised_mb.toLocaleString('en-US')} MB of the zone's memory (${planRule.memory_rule}).`
                : undefined
            }
          >
            {({ id, describedBy, invalid }) => (
              <select id={id} name="plan" value={form.plan} onChange={set('plan')} aria-describedby={describedBy} aria-invalid={invalid}>
                {(offer?.plans ?? []).map((p) => {
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
          <Field label="Version" error={fieldError('version')}>
            {({ id, describedBy, invalid }) => (
              <select
                id={id}
                name="version"
                value={form.version}
                onChange={set('version')}
                aria-describedby={describedBy}
                aria-invalid={invalid}
              >
                {(engineOffer?.versions ?? offer?.versions ?? []).map((v) => (
                  <option key={v} value={v}>
                    {v}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <div class="field checkbox">
            <input id="admit-me" type="checkbox" checked={form.admitMe && myIp !== undefined} disabled={!myIp} onChange={set('admitMe')} />
            <label for="admit-me">Admit my address {myIp ? `${myIp} (as hangar sees it)` : '(reading it…)'} from the start</label>
          </div>
          {!form.admitMe ? <p class="hint">Without an ACL nobody can connect: add addresses on the instance's ACLs tab.</p> : null}
          <ErrorBox error={errors.general} />
          <div class="actions">
            <button type="submit" class="primary" disabled={busy || !offer}>
              Create
            </button>
            <a class="button" href={href('instances')}>
              Cancel
            </a>
          </div>
          {busy ? <Busy>Asking hangar for the instance…</Busy> : null}
        </form>
      ) : null}
    </section>
  );
}
