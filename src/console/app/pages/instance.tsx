import { useEffect, useRef, useState } from 'preact/hooks';
import type { Acl, EngineProduct, Instance, InstanceShell } from '../../../client/index.js';
import { InstanceOperations } from '../components/instance-operations.js';
import { MutationStatus, useMutation } from '../components/mutation.js';
import { RedisMetrics } from '../components/redis-metrics.js';
import { Busy, CopyValue, ErrorBox, StateBadge } from '../components/ui.js';
import { type Engines, useEngines } from '../engines.js';
import { BUSY_STATES, READY, formatPlan, operationFilterQuery } from '../format.js';
import { follow, reader, watchInstance } from '../live.js';
import { href, navigate } from '../router.js';
import { api } from '../session.js';
import { AclsTab, admit, useMyAddress } from './acls.js';
import { BackupsSummary } from './backups.js';
import { MongoUsersTab } from './mongo-users.js';
import { RedisConfigTab, RedisUsersTab } from './redis.js';
import { SettingsTab } from './settings.js';

/** The tabs, each shown where the instance's product offers what it is about (`features` of GET /v2/engines/). */
const TABS: readonly { id: string; label: string; shown?: (e: EngineProduct) => boolean }[] = [
  { id: 'overview', label: 'Overview' },
  { id: 'acls', label: 'ACLs' },
  { id: 'users', label: 'Users', shown: (e) => e.features.database_users || e.features.redis_api },
  { id: 'config', label: 'Configuration', shown: (e) => e.features.redis_api },
  { id: 'settings', label: 'Settings' },
];

/**
 * One instance: how to connect, its live figures, ACLs, users and settings, on tabs; above them
 * the operations under way, and those started from the console (`operation`: the one a create
 * started, from the create page) with their progress.
 */
export function InstancePage({ name, tab, operation }: { name: string; tab: string; operation?: string | null }) {
  const [instance, setInstance] = useState<Instance | undefined | null>(null);
  const [error, setError] = useState<unknown>();
  const [pinned, setPinned] = useState<readonly string[]>(operation ? [operation] : []);
  const { engines, error: enginesError } = useEngines();
  const deleting = useRef(false);
  const pin = (id: string) => setPinned((p) => (p.includes(id) ? p : [...p, id]));

  useEffect(() => {
    if (operation) pin(operation);
  }, [operation]);

  useEffect(() => {
    setInstance(null);
    return watchInstance(name, {
      onValue: (i) => {
        setError(undefined);
        if (i === undefined && deleting.current) {
          navigate(`/instances?deleted=${encodeURIComponent(name)}`, { replace: true });
          return;
        }
        if (i?.state === 'DELETING') deleting.current = true;
        setInstance(i);
      },
      onError: setError,
    });
  }, [name]);

  if (instance === null || (instance && !engines)) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          {name}
        </h1>
        {error || enginesError ? <ErrorBox error={error ?? enginesError} /> : <Busy>Loading the instance…</Busy>}
      </section>
    );
  }
  if (instance === undefined) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          {name}
        </h1>
        <div class="error-box" role="alert">
          There is no instance named “{name}” in your account. It may have been deleted or renamed:{' '}
          <a href={href('instances')}>go back to the list</a>.
        </div>
      </section>
    );
  }

  const product = engines!.of(instance);
  const tabs = TABS.filter((t) => !t.shown || (product !== undefined && t.shown(product)));
  const active = tabs.some((t) => t.id === tab) ? tab : 'overview';
  const busy = BUSY_STATES[instance.state];
  return (
    <section aria-labelledby="page-title">
      <p class="crumbs">
        <a href={href('instances')}>Instances</a> /
      </p>
      <div class="title-row">
        <h1 id="page-title" tabIndex={-1}>
          {instance.name}
        </h1>
        <StateBadge state={instance.state} />
      </div>
      <p class="facts">
        {instance.service}
        {product && product.engine !== instance.service ? ` (${product.label})` : ''} · {instance.type} ·{' '}
        {formatPlan(product?.plan_unit, instance.plan)} · {instance.zone} · version {instance.version} · created {instance.created} UTC ·{' '}
        <a href={`${href('operations')}${operationFilterQuery({ instance: instance.name, state: '', kind: '' })}`}>operations</a> ·{' '}
        <a href={href('backups', instance.name)}>backups</a>
      </p>
      <InstanceOperations instance={instance} pinned={pinned} />
      {busy ? (
        <div class="progress-line" role="status" aria-live="polite">
          <progress aria-label={busy} />
          <span>
            {busy}
            {instance.state_reason ? ` (${instance.state_reason})` : ''}
          </span>
        </div>
      ) : null}
      {instance.state === 'FAILED' ? (
        <div class="error-box" role="alert">
          This instance could not be built: {instance.state_reason ?? 'no reason given'}. Delete it (Settings) and create it again; if it
          fails again, tell your operator.
        </div>
      ) : null}
      <ErrorBox error={error} title="The instance could not be refreshed" />
      <nav class="tabs" aria-label="Instance sections">
        {tabs.map((t) => (
          <a key={t.id} href={href('instances', instance.name, t.id)} aria-current={t.id === active ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {active === 'overview' ? <Overview instance={instance} engines={engines!} /> : null}
      {active === 'acls' ? <AclsTab instance={instance} /> : null}
      {active === 'users' && product?.features.database_users ? <MongoUsersTab instance={instance} /> : null}
      {active === 'users' && product?.features.redis_api ? <RedisUsersTab instance={instance} /> : null}
      {active === 'config' ? <RedisConfigTab instance={instance} /> : null}
      {active === 'settings' ? <SettingsTab instance={instance} onDeleting={() => (deleting.current = true)} onOperation={pin} /> : null}
    </section>
  );
}

function Overview({ instance, engines }: { instance: Instance; engines: Engines }) {
  const product = engines.of(instance);
  const ready = READY.includes(instance.state) || instance.state === 'RESIZING';
  return (
    <>
      <NobodyAdmitted instance={instance} />
      <section aria-labelledby="connect-title">
        <h2 id="connect-title">Connect</h2>
        <Connect instance={instance} product={product} />
      </section>
      {product?.features.redis_api && ready ? <RedisMetrics instance={instance} planUnit={product.plan_unit} /> : null}
      {product?.features.redis_api && !ready ? <p class="hint">Live metrics appear once the instance is ACTIVE.</p> : null}
      <BackupsSummary instance={instance} />
    </>
  );
}

/** With no ACL nobody can connect: the overview says so, and admits the viewer's address in one click. */
function NobodyAdmitted({ instance }: { instance: Instance }) {
  const [acls, setAcls] = useState<Acl[] | undefined>();
  const myIp = useMyAddress();
  const m = useMutation();
  const { id, name } = instance;
  const refresh = useRef<() => void>(() => undefined);
  useEffect(() => {
    const r = reader(() => api((c) => c.listAcls(name)), { onValue: setAcls, onError: () => undefined });
    refresh.current = r.refresh;
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        const kind = (e.data as { kind?: unknown }).kind;
        if (e.instance_id === id && e.kind.startsWith('operation.') && typeof kind === 'string' && kind.startsWith('acl.')) r.refresh();
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [id, name]);
  if (acls === undefined || (acls.length > 0 && !m.notice && !m.error)) return null;
  return (
    <div class={acls.length === 0 ? 'warn-box' : ''} data-no-acl={acls.length === 0 ? '' : undefined}>
      {acls.length === 0 ? (
        <>
          <p>
            <strong>Nobody can connect:</strong> no address is admitted to {name}. Add yours, or others on the{' '}
            <a href={href('instances', name, 'acls')}>ACLs</a> tab.
          </p>
          <button
            type="button"
            class="primary"
            disabled={!myIp || m.busy !== undefined}
            onClick={() =>
              myIp &&
              void m.run(
                `Admitting ${myIp}…`,
                () => admit(name, { cidr_mask: myIp, description: 'my address (added by the console)' }),
                async () => {
                  setAcls(await api((c) => c.listAcls(name)));
                },
              )
            }
          >
            Add my address{myIp ? ` (${myIp})` : ''}
          </button>
        </>
      ) : null}
      <MutationStatus mutation={m} error={m.error} />
    </div>
  );
}

/** The addresses of an instance (whichever its record has), its password where its product has one, and the command of its shell. */
function Connect({ instance: i, product }: { instance: Instance; product: EngineProduct | undefined }) {
  const [shell, setShell] = useState<InstanceShell | undefined>();
  const [shellError, setShellError] = useState<unknown>();
  const users = product?.features.database_users === true;
  const hasShell = product?.shell != null;
  // the command carries the password: read again when it changes (a rotation)
  useEffect(() => {
    setShell(undefined);
    setShellError(undefined);
    if (!hasShell) return;
    void api((c) => c.instanceShell(i.name, users ? { user: 'USER', database: 'DATABASE' } : {})).then(setShell, setShellError);
  }, [i.name, i.password, hasShell, users]);

  const p = i.connection_strings?.public;
  const addresses: [string, string][] = [
    ...((i.public_connect_string ?? i.connect_string)
      ? [['Connect string', i.public_connect_string ?? i.connect_string!] as [string, string]]
      : []),
    ...(i.servicenet_connect_string ? [['Private network', i.servicenet_connect_string] as [string, string]] : []),
    ...(i.ssl_connect_string ? [['TLS connect string', i.ssl_connect_string] as [string, string]] : []),
    ...(p
      ? ([
          ['HTTP', p.http],
          ['HTTPS', p.https],
          ['Kibana', p.kibana_https],
          ['Transport', p.transport],
        ] as [string, string][])
      : []),
  ];
  if (addresses.length === 0) return <p class="hint">The addresses appear once the instance is built.</p>;
  return (
    <>
      <dl class="connect">
        {addresses.map(([label, value]) => (
          <CopyValue key={label} label={label} value={value} />
        ))}
        {product?.features.password && i.password ? <CopyValue label="Password" value={i.password} secret /> : null}
        {shell ? <CopyValue label={`${shell.program} command`} value={shell.line} secret={Object.keys(shell.env).length > 0} /> : null}
        {!hasShell && p ? <CopyValue label="curl command" value={`curl ${p.http.split(',')[0]}/`} /> : null}
      </dl>
      <ErrorBox error={shellError} title="The shell command could not be read" />
      {shell && users ? (
        <p class="hint">
          Replace USER and DATABASE with a user of the <a href={href('instances', i.name, 'users')}>Users</a> tab and its database;{' '}
          {shell.program} asks for the password.
        </p>
      ) : null}
      {shell ? <p class="hint">{`${shell.program}: ${shell.install}.`}</p> : null}
      <p class="hint">
        Clients are admitted only from the addresses in the <a href={href('instances', i.name, 'acls')}>ACLs</a>.
      </p>
    </>
  );
}
