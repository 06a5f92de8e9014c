import { useEffect, useRef, useState } from 'preact/hooks';
import type { Instance } from '../../../client/index.js';
import { InstanceOperations } from '../components/instance-operations.js';
import { RedisMetrics } from '../components/redis-metrics.js';
import { Busy, CopyValue, ErrorBox, StateBadge } from '../components/ui.js';
import { BUSY_STATES, READY, formatPlan, mongoshCommand, operationFilterQuery, redisCliCommand } from '../format.js';
import { watchInstance } from '../live.js';
import { href, navigate } from '../router.js';
import { AclsTab } from './acls.js';
import { BackupsSummary } from './backups.js';
import { MongoUsersTab } from './mongo-users.js';
import { SettingsTab } from './settings.js';

const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'acls', label: 'ACLs' },
  { id: 'users', label: 'Users', service: 'mongodb' },
  { id: 'settings', label: 'Settings' },
] as const;

/**
 * One instance: how to connect, its live figures, ACLs, users and settings, on tabs; above them
 * the operations under way, and those started from the console (`operation`: the one a create
 * started, from the create page) with their progress.
 */
export function InstancePage({ name, tab, operation }: { name: string; tab: string; operation?: string | null }) {
  const [instance, setInstance] = useState<Instance | undefined | null>(null);
  const [error, setError] = useState<unknown>();
  const [pinned, setPinned] = useState<readonly string[]>(operation ? [operation] : []);
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

  if (instance === null) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          {name}
        </h1>
        {error ? <ErrorBox error={error} /> : <Busy>Loading the instance…</Busy>}
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

  const tabs = TABS.filter((t) => !('service' in t) || t.service === instance.service);
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
        {instance.service} · {instance.type} · {formatPlan(instance.service, instance.plan)} · {instance.zone} · version {instance.version}{' '}
        · created {instance.created} UTC ·{' '}
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
      {active === 'overview' ? <Overview instance={instance} /> : null}
      {active === 'acls' ? <AclsTab instance={instance} /> : null}
      {active === 'users' ? <MongoUsersTab instance={instance} /> : null}
      {active === 'settings' ? <SettingsTab instance={instance} onDeleting={() => (deleting.current = true)} onOperation={pin} /> : null}
    </section>
  );
}

function Overview({ instance }: { instance: Instance }) {
  const ready = READY.includes(instance.state) || instance.state === 'RESIZING';
  return (
    <>
      <section aria-labelledby="connect-title">
        <h2 id="connect-title">Connect</h2>
        <Connect instance={instance} />
      </section>
      {instance.service === 'redis' && ready ? <RedisMetrics instance={instance} /> : null}
      {instance.service === 'redis' && !ready ? <p class="hint">Live metrics appear once the instance is ACTIVE.</p> : null}
      <BackupsSummary instance={instance} />
    </>
  );
}

function Connect({ instance: i }: { instance: Instance }) {
  const needAcl = (
    <p class="hint">
      Clients are admitted only from the addresses in the <a href={href('instances', i.name, 'acls')}>ACLs</a>.
    </p>
  );
  if (i.service === 'redis' && i.connect_string && i.password !== undefined) {
    return (
      <>
        <dl class="connect">
          <CopyValue label="Connect string" value={i.public_connect_string ?? i.connect_string} />
          {i.servicenet_connect_string ? <CopyValue label="Private network" value={i.servicenet_connect_string} /> : null}
          <CopyValue label="Password" value={i.password} secret />
          <CopyValue label="redis-cli command" value={redisCliCommand(i.public_connect_string ?? i.connect_string, i.password)} secret />
        </dl>
        {needAcl}
      </>
    );
  }
  if (i.service === 'mongodb' && i.connect_string) {
    return (
      <>
        <dl class="connect">
          <CopyValue label="Connect string" value={i.connect_string} />
          {i.ssl_connect_string ? <CopyValue label="TLS connect string" value={i.ssl_connect_string} /> : null}
          <CopyValue label="mongosh command" value={mongoshCommand(i.connect_string, 'USER', 'DATABASE')} />
        </dl>
        <p class="hint">
          Replace USER and DATABASE with a user of the <a href={href('instances', i.name, 'users')}>Users</a> tab and its database; mongosh
          asks for the password.
        </p>
        {needAcl}
      </>
    );
  }
  if (i.connection_strings) {
    const p = i.connection_strings.public;
    return (
      <>
        <dl class="connect">
          <CopyValue label="HTTP" value={p.http} />
          <CopyValue label="HTTPS" value={p.https} />
          <CopyValue label="Kibana" value={p.kibana_https} />
          <CopyValue label="Transport" value={p.transport} />
          <CopyValue label="curl command" value={`curl ${p.http.split(',')[0]}/_cluster/health`} />
        </dl>
        {needAcl}
      </>
    );
  }
  return <p class="hint">The addresses appear once the instance is built.</p>;
}
