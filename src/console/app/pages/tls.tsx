import { useEffect, useState } from 'preact/hooks';
import type { Instance, InstanceTls } from '../../../client/index.js';
import { MutationStatus, useMutation } from '../components/mutation.js';
import { ErrorBox } from '../components/ui.js';
import { READY } from '../format.js';
import { follow, reader } from '../live.js';
import { api } from '../session.js';

/** The CA certificate (GET /v2/tls/ca, no credentials), under the name the shell commands give it. */
export const CA_FILE = 'hangar-ca.pem';

/** A link that downloads the deployment's CA certificate, which clients verify instances against. */
export function CaDownload() {
  return (
    <a href="/v2/tls/ca" download={CA_FILE}>
      Download the CA certificate ({CA_FILE})
    </a>
  );
}

type Mode = InstanceTls['mode'];

const MODES: readonly { mode: Mode; label: string; hint: string }[] = [
  { mode: 'off', label: 'Off', hint: 'plain connections only; no TLS address' },
  { mode: 'preferred', label: 'Preferred', hint: 'plain and TLS addresses both serve; the connect string stays the plain one' },
  {
    mode: 'required',
    label: 'Required',
    hint: 'only the TLS addresses serve: the plain ones refuse clients and close those connected; the connect string is rediss://',
  },
];

/**
 * How clients reach a Redis-family instance over TLS: the mode (off, preferred, required) and
 * mutual TLS, changed as an operation that leaves the connections of a listener that stays; the
 * certificate the edge presents, and its rotation (connections open keep theirs).
 */
export function TlsTab({ instance, onOperation }: { instance: Instance; onOperation: (id: string) => void }) {
  const [tls, setTls] = useState<InstanceTls | undefined>();
  const [loadError, setLoadError] = useState<unknown>();
  const [mode, setMode] = useState<Mode>(instance.tls ?? 'preferred');
  const [clientAuth, setClientAuth] = useState(instance.tls_client_auth === true);
  const change = useMutation();
  const rotation = useMutation();
  const { name } = instance;

  const { id } = instance;
  // read again when a TLS operation of the instance starts or ends (a rotation from elsewhere too)
  useEffect(() => {
    const r = reader(() => api((c) => c.instanceTls(name)), {
      onValue: (t) => {
        setTls(t);
        setLoadError(undefined);
      },
      onError: setLoadError,
    });
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        const kind = (e.data as { kind?: unknown }).kind;
        if (e.instance_id === id && e.kind.startsWith('operation.') && typeof kind === 'string' && kind.startsWith('tls.')) r.refresh();
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [id, name]);
  // what the record says now (a change from elsewhere, or this one done)
  useEffect(() => {
    setMode(instance.tls ?? 'preferred');
    setClientAuth(instance.tls_client_auth === true);
  }, [instance.tls, instance.tls_client_auth]);

  const ready = READY.includes(instance.state);
  const unchanged = mode === instance.tls && (mode === 'off' ? true : clientAuth === (instance.tls_client_auth === true));
  const apply = (e: Event) => {
    e.preventDefault();
    void change.run(`Changing TLS to ${mode}…`, async () => {
      const t = await api((c) => c.setTlsMode(name, { mode, ...(mode === 'off' ? {} : { tls_client_auth: clientAuth }) }, { onOperation }));
      setTls(t);
      return `TLS is ${t.mode}${t.tls_client_auth ? ', with client certificates' : ''}: its operation, above, shows when the edge serves it.`;
    });
  };
  const rotate = () =>
    void rotation.run('Giving the instance a new certificate…', async () => {
      const before = tls?.serial;
      const t = await api((c) => c.rotateTlsCertificate(name, { onOperation }));
      setTls(t);
      return `New certificate ${t.serial}${before ? ` (was ${before})` : ''}: connections open keep theirs, new ones get it.`;
    });

  return (
    <>
      <section aria-labelledby="tls-mode-title">
        <h2 id="tls-mode-title">TLS mode</h2>
        <p class="hint">
          Clients verify the instance against the deployment's CA: <CaDownload />. Going from off to preferred, then to required, interrupts
          no client of the address that stays.
        </p>
        <form onSubmit={apply}>
          <fieldset class="kinds">
            <legend>Mode</legend>
            {MODES.map((m) => (
              <label key={m.mode} class="check">
                <input type="radio" name="tls_mode" value={m.mode} checked={mode === m.mode} onChange={() => setMode(m.mode)} />
                <span>
                  <strong>{m.label}</strong>: {m.hint}
                </span>
              </label>
            ))}
          </fieldset>
          <label class="check">
            <input
              type="checkbox"
              name="tls_client_auth"
              checked={mode !== 'off' && clientAuth}
              disabled={mode === 'off'}
              onChange={(e) => setClientAuth(e.currentTarget.checked)}
            />
            Ask clients for a certificate (mutual TLS: issued with hangar tls client-cert)
          </label>
          <p>
            <button type="submit" class="primary" disabled={!ready || unchanged || change.busy !== undefined}>
              Apply
            </button>
          </p>
        </form>
        {!ready ? <p class="hint">The mode can change once the instance is ACTIVE.</p> : null}
        <MutationStatus mutation={change} error={change.error} />
      </section>
      <section aria-labelledby="tls-cert-title">
        <h2 id="tls-cert-title">Certificate</h2>
        <ErrorBox error={loadError} title="The certificate could not be read" />
        {tls ? (
          <dl class="facts-list">
            <dt>Serial</dt>
            <dd>
              <code data-serial>{tls.serial}</code>
            </dd>
            <dt>Valid</dt>
            <dd>
              {tls.not_before} to {tls.not_after}
            </dd>
            <dt>SHA-256</dt>
            <dd>
              <code>{tls.fingerprint_sha256}</code>
            </dd>
            <dt>CA SHA-256</dt>
            <dd>
              <code>{tls.ca_fingerprint_sha256}</code>
            </dd>
          </dl>
        ) : null}
        <p class="hint">hangar renews it well before its end. A rotation gives a new one now, without closing a connection.</p>
        <button type="button" disabled={!ready || rotation.busy !== undefined} onClick={rotate}>
          Rotate the certificate
        </button>
        <MutationStatus mutation={rotation} error={rotation.error} />
      </section>
    </>
  );
}
