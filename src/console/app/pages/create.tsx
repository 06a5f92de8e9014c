import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { HangarApiError, type Backup, type CreateInstanceRequest, type Zone } from '../../../client/index.js';
import { Busy, ErrorBox, Field } from '../components/ui.js';
import { formatBytes, formatPlan, plansHolding, shortSha } from '../format.js';
import { href, navigate } from '../router.js';
import { api } from '../session.js';

const FIELDS = ['name', 'zone', 'service', 'type', 'plan', 'version', 'restore_from'] as const;
type FieldName = (typeof FIELDS)[number];

/**
 * Create an instance. Every choice comes from `GET /v2/zones/`: the services each zone can run
 * now, with their types, plans and versions. A 400 naming a field is shown next to it. With
 * `?restore_from=<backup id>&from=<instance>` (a backup's "New instance" on the Backups page) the
 * instance is restored from that backup once built: its service and version are chosen, and the
 * plans too small for what the backed-up instance used are not offered.
 */
export function CreatePage({ query }: { query?: URLSearchParams }) {
  const restoreFrom = query?.get('restore_from') ?? '';
  const from = query?.get('from') ?? '';
  const [backup, setBackup] = useState<Backup | undefined>();
  const [backupError, setBackupError] = useState<unknown>();
  const applied = useRef<string | undefined>(undefined);
  const [zones, setZones] = useState<Zone[] | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [myIp, setMyIp] = useState<string | undefined>();
  const [form, setForm] = useState({ name: '', zone: '', service: '', type: '', plan: '', version: '', admitMe: false });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    void api((c) => c.listZones()).then(setZones, setLoadError);
    void api((c) => c.whoami()).then(
      (w) => setMyIp(w.source_ip),
      () => undefined,
    );
  }, []);

  useEffect(() => {
    setBackup(undefined);
    setBackupError(undefined);
    if (restoreFrom && from) void api((c) => c.getBackup(from, restoreFrom)).then(setBackup, setBackupError);
  }, [restoreFrom, from]);

  const zone = zones?.find((z) => z.name === form.zone);
  const offer = zone?.services.find((s) => s.service === form.service);

  // Keep every choice valid as the ones before it change: the first offered value by default
  // (the backup's service and version, and the smallest plan that holds its data, once it is read).
  useEffect(() => {
    if (!zones || zones.length === 0) return;
    const fresh = backup !== undefined && applied.current !== backup.id;
    const want = fresh ? { ...form, service: backup.service, version: backup.engine_version, plan: '' } : form;
    const offers = (x: Zone) => x.services.some((s) => s.available && (!fresh || s.service === want.service));
    const z =
      zones.find((x) => x.name === form.zone && offers(x)) ??
      zones.find((x) => x.name === form.zone) ??
      zones.find(offers) ??
      zones.find((x) => x.services.some((s) => s.available)) ??
      zones[0]!;
    const s = z.services.find((x) => x.service === want.service && x.available) ?? z.services.find((x) => x.available);
    const fitting = s && backup ? plansHolding(s.service, s.plans, backup.used_memory_bytes) : (s?.plans ?? []);
    const next = {
      ...form,
      zone: z.name,
      service: s?.service ?? '',
      type: s?.types.includes(want.type) ? want.type : (s?.types[0] ?? ''),
      plan: fitting.map(String).includes(want.plan) ? want.plan : String(fitting[0] ?? s?.plans[0] ?? ''),
      version: s?.versions.includes(want.version) ? want.version : (s?.versions[0] ?? ''),
    };
    if (fresh) applied.current = backup.id;
    if (JSON.stringify(next) !== JSON.stringify(form)) setForm(next);
  }, [zones, form, backup]);

  const fieldError = (f: FieldName): string | undefined =>
    error instanceof HangarApiError && error.status === 400 && error.field === f ? error.message : undefined;
  const generalError = useMemo(
    () =>
      error instanceof HangarApiError && error.status === 400 && (FIELDS as readonly string[]).includes(error.field ?? '')
        ? undefined
        : error,
    [error],
  );

  const set = (k: keyof typeof form) => (e: Event) => {
    const t = e.currentTarget as HTMLInputElement;
    setForm({ ...form, [k]: t.type === 'checkbox' ? t.checked : t.value });
  };

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
      {zones === undefined && !loadError ? <Busy>Reading what this hangar offers…</Busy> : null}
      {zones !== undefined ? (
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
                .map((s) => `${s.service}: ${s.reason ?? 'not available'}`)
                .join(' · ') || undefined
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
                    {s.available ? '' : ' (not available here)'}
                  </option>
                ))}
              </select>
            )}
          </Field>
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
            hint={form.service === 'redis' ? 'Memory of the instance (maxmemory).' : 'Size of the instance.'}
          >
            {({ id, describedBy, invalid }) => (
              <select id={id} name="plan" value={form.plan} onChange={set('plan')} aria-describedby={describedBy} aria-invalid={invalid}>
                {(offer?.plans ?? []).map((p) => {
                  // redis plans are MB of memory: one larger than the zone's free memory cannot be promised
                  const tooBig = form.service === 'redis' && zone?.free_mb != null && p > zone.free_mb;
                  // a backup's data must fit: the API refuses smaller plans
                  const tooSmall =
                    backup !== undefined &&
                    backup.service === form.service &&
                    !plansHolding(form.service, [p], backup.used_memory_bytes).includes(p);
                  return (
                    <option key={p} value={String(p)} disabled={tooBig || tooSmall}>
                      {formatPlan(form.service, p)}
                      {tooBig ? ' (more than the zone has free)' : tooSmall ? " (smaller than the backup's data)" : ''}
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
                {(offer?.versions ?? []).map((v) => (
                  <option key={v} value={v}>
                    {v}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <div class="field checkbox">
            <input id="admit-me" type="checkbox" checked={form.admitMe} disabled={!myIp} onChange={set('admitMe')} />
            <label for="admit-me">Admit my address{myIp ? ` (${myIp}, as hangar sees it)` : ''} from the start</label>
          </div>
          <ErrorBox error={generalError} />
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
