import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EdgeTls } from '../../domain/units.js';

/**
 * The files of the edge's TLS listeners: hangar hands each instance's certificate (signed by
 * the deployment's CA) in its spec, and the edge keeps it where HAProxy's configuration names it.
 * HAProxy reads them when it loads; in between, a changed one goes through its runtime API
 * (`set ssl cert`, `set ssl crl-file`, ...), so that no reload is needed and no connection drops.
 */

/** Directory of the edge's certificates (0700). */
export const edgeTlsDir = (edgeDir: string): string => join(edgeDir, 'tls');

/** What one instance's TLS listeners read, by purpose. */
export interface EdgeTlsFiles {
  /** Its certificate, the CA's intermediates, and its private key, in one PEM (HAProxy's `crt`); mode 0600. */
  readonly cert: string;
  /** Mutual TLS: the CA a client certificate must be signed by (`ca-file`). */
  readonly ca: string;
  /** Mutual TLS: the CA's revoked client certificates (`crl-file`). */
  readonly crl: string;
}

export function edgeTlsFiles(edgeDir: string, instanceId: string): EdgeTlsFiles {
  const dir = edgeTlsDir(edgeDir);
  return { cert: join(dir, `${instanceId}.pem`), ca: join(dir, `${instanceId}.ca.pem`), crl: join(dir, `${instanceId}.crl.pem`) };
}

/** What each file of an instance's TLS listeners must hold for `tls`; undefined: the file is not used. */
export function edgeTlsContents(tls: EdgeTls): Record<keyof EdgeTlsFiles, string | undefined> {
  return { cert: tls.pem, ca: tls.clientAuth?.caPem, crl: tls.clientAuth?.crlPem };
}

/** A path as HAProxy's configuration parser reads it: double quotes, `\` and `"` escaped. */
function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * What follows `bind <address>:<port>` on a listener where the edge terminates TLS with the
 * instance's certificate; with mutual TLS, a client must present a certificate of the CA that
 * is not in its CRL (the OU check is a rule of its own, `clientAuthRule`).
 */
export function tlsBindOptions(edgeDir: string, instanceId: string, clientAuth = false): string {
  const files = edgeTlsFiles(edgeDir, instanceId);
  const verify = clientAuth ? ` verify required ca-file ${quote(files.ca)} crl-file ${quote(files.crl)}` : '';
  return `ssl crt ${quote(files.cert)}${verify}`;
}

/**
 * The rule of a mutual-TLS listener that takes only the instance's own client certificates: one
 * CA signs those of every instance, and each carries its instance's id as its subject's OU. A
 * session rule (after the handshake, before any byte reaches the engine): HAProxy logs it as a
 * connection error, not as a refusal of the ACLs.
 */
export function clientAuthRule(organizationalUnit: string): string {
  return `tcp-request session reject unless { ssl_c_s_dn(OU) -m str ${organizationalUnit} }`;
}

/** Removes an instance's TLS files (none left is fine), and what an older hangar left for it there. */
export function removeEdgeTls(edgeDir: string, instanceId: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(edgeTlsDir(edgeDir));
  } catch {
    return;
  }
  // `<id>.pem`, `<id>.ca.pem`, `<id>.crl.pem`, and `<id>.crt` of the self-signed certificates before the deployment CA
  for (const name of names) if (name.startsWith(`${instanceId}.`)) rmSync(join(edgeTlsDir(edgeDir), name), { force: true });
}
