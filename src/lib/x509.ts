import { execFile } from 'node:child_process';
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Certificates made with the openssl program: node:crypto reads X.509 but cannot issue it. Every
 * key is EC P-256 (see README, "TLS on instance connections": small, fast to make and to
 * handshake with, and taken by HAProxy, OpenSSL, Java 8+, Go, .NET and the drivers hangar's
 * engines have). Each call works in a temp directory of its own (mode 0700), removed at its end:
 * the CA's key is on disk only while openssl runs.
 */

const OPENSSL_TIMEOUT_MS = 30_000;

/** The openssl program cannot be run (not installed, not executable). */
export class OpensslMissingError extends Error {
  override name = 'OpensslMissingError';
}

/** What hangar reads from a certificate. */
export interface ParsedCertificate {
  /** Hex, upper case, as X509Certificate shows it. */
  readonly serial: string;
  readonly fingerprint256: string;
  readonly subject: string;
  readonly issuer: string;
  readonly notBefore: number;
  readonly notAfter: number;
  /** subjectAltName as node:crypto shows it (`IP Address:127.0.0.1, DNS:db.example.com`), or ''. */
  readonly subjectAltName: string;
  readonly isCa: boolean;
}

export function parseCertificate(pem: string): ParsedCertificate {
  const c = new X509Certificate(pem);
  return {
    serial: c.serialNumber.toUpperCase(),
    fingerprint256: c.fingerprint256,
    subject: c.subject,
    issuer: c.issuer,
    notBefore: Date.parse(c.validFrom),
    notAfter: Date.parse(c.validTo),
    subjectAltName: c.subjectAltName ?? '',
    isCa: c.ca,
  };
}

/**
 * A serial number: 128 bits, 126 of them random (RFC 5280 wants a positive integer of at most
 * 20 octets; the CA/Browser Forum at least 64 random bits). Its first octet is 0x40-0x7f, so
 * the integer is positive without a leading zero and its hex is always 32 digits, the same in
 * hangar's store, in openssl's output and in X509Certificate's.
 */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = 0x40 | (b[0]! & 0x3f);
  return b.toString('hex').toUpperCase();
}

const DNS_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i;

/** Whether `name` can be a subjectAltName entry: an IP address, or a DNS name (`*.` first allowed). */
export function isCertificateName(name: string): boolean {
  if (isIP(name)) return true;
  if (name.length > 253) return false;
  const labels = name.split('.');
  if (labels[0] === '*') labels.shift();
  return labels.length > 0 && labels.every((l) => DNS_LABEL.test(l));
}

/** `IP:...` for an address, `DNS:...` for a name. */
function sanEntry(name: string): string {
  if (!isCertificateName(name)) throw new Error(`not an IP address or DNS name: ${JSON.stringify(name)}`);
  return isIP(name) ? `IP:${name}` : `DNS:${name}`;
}

/** A value put in a subject: what `-subj` and openssl's configuration take without escapes. */
export function subjectValue(s: string): string {
  const clean = s.replace(/[^A-Za-z0-9 ._:@*-]/g, '-').trim();
  return (clean === '' ? '-' : clean).slice(0, 64);
}

/** openssl's time format: UTCTime up to 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
function asn1Time(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-12-07T21:02:29.123Z
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return Number(iso.slice(0, 4)) < 2050 ? digits.slice(2) : digits;
}

/** The issuing side of a certificate: the CA's certificate and key, PEM. */
export interface Issuer {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface IssueRequest {
  /** `server`: serverAuth, the names in subjectAltName; `client`: clientAuth. */
  readonly kind: 'server' | 'client';
  /** Subject: O=hangar, OU (when given), CN; values pass through subjectValue. */
  readonly organizationalUnit?: string;
  readonly commonName: string;
  /** subjectAltName entries (server certificates): IP addresses and DNS names. */
  readonly names?: readonly string[];
  readonly serial: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

export interface RevokedEntry {
  readonly serial: string;
  readonly revokedAt: number;
  readonly notAfter: number;
}

/** openssl's `ca` configuration: signs requests and renders CRLs from an index in the work dir. */
const CA_CONFIG = `
[req]
distinguished_name = dn
prompt = no
[dn]
O = hangar
[ca_extensions]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[ca]
default_ca = hangar
[hangar]
database = index.txt
new_certs_dir = .
certificate = ca.crt
private_key = ca.key
serial = serial
crlnumber = crlnumber
default_md = sha256
policy = any_subject
unique_subject = no
copy_extensions = none
default_crl_days = 30
[any_subject]
organizationName = optional
organizationalUnitName = optional
commonName = supplied
[client]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

const serverExtensions = (names: readonly string[]) => `
[server]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${names.map(sanEntry).join(',')}
`;

/** The openssl program, run in throwaway directories under `workDir`. */
export class Openssl {
  private readonly bin: string;
  private readonly workDir: string;

  constructor(opts: { bin?: string; workDir?: string } = {}) {
    this.bin = opts.bin ?? 'openssl';
    this.workDir = opts.workDir ?? tmpdir();
  }

  /** A self-signed CA: EC P-256, basicConstraints CA:TRUE, keyUsage keyCertSign and cRLSign. */
  async makeCa(commonName: string, days: number): Promise<{ certPem: string; keyPem: string }> {
    return this.inWorkDir(async (dir) => {
      await writeFile(join(dir, 'ca.cnf'), CA_CONFIG);
      await this.run(dir, [
        'req',
        '-x509',
        '-new',
        ...newKey('ca.key'),
        '-out',
        'ca.crt',
        '-days',
        String(days),
        '-sha256',
        '-config',
        'ca.cnf',
        '-extensions',
        'ca_extensions',
        '-set_serial',
        `0x${randomSerial()}`,
        '-subj',
        `/O=hangar/CN=${subjectValue(commonName)}`,
      ]);
      return { certPem: await readFile(join(dir, 'ca.crt'), 'utf8'), keyPem: await readFile(join(dir, 'ca.key'), 'utf8') };
    });
  }

  /** A new key and a certificate for it signed by `ca`, with the serial and validity asked for. */
  async issue(ca: Issuer, r: IssueRequest): Promise<{ certPem: string; keyPem: string }> {
    if (r.kind === 'server' && (r.names ?? []).length === 0) throw new Error('a server certificate needs at least one name');
    return this.inWorkDir(async (dir) => {
      await this.prepareCa(dir, ca, r.kind === 'server' ? serverExtensions(r.names ?? []) : '');
      await writeFile(join(dir, 'serial'), `${r.serial}\n`);
      const ou = r.organizationalUnit === undefined ? '' : `/OU=${subjectValue(r.organizationalUnit)}`;
      await this.run(dir, [
        'req',
        '-new',
        ...newKey('leaf.key'),
        '-out',
        'leaf.csr',
        '-config',
        'ca.cnf',
        '-subj',
        `/O=hangar${ou}/CN=${subjectValue(r.commonName)}`,
      ]);
      await this.run(dir, [
        'ca',
        '-batch',
        '-config',
        'ca.cnf',
        '-in',
        'leaf.csr',
        '-out',
        'leaf.crt',
        '-notext',
        '-preserveDN',
        '-startdate',
        asn1Time(r.notBefore),
        '-enddate',
        asn1Time(r.notAfter),
        '-extfile',
        'ca.cnf',
        '-extensions',
        r.kind,
      ]);
      return { certPem: await readFile(join(dir, 'leaf.crt'), 'utf8'), keyPem: await readFile(join(dir, 'leaf.key'), 'utf8') };
    });
  }

  /** A CRL signed by `ca` listing `revoked`, valid from now for `days` (PEM). */
  async crl(ca: Issuer, revoked: readonly RevokedEntry[], now: number, days: number): Promise<string> {
    return this.inWorkDir(async (dir) => {
      await this.prepareCa(dir, ca, '');
      const index = revoked
        .map((r) => `R\t${asn1Time(r.notAfter)}\t${asn1Time(r.revokedAt)}\t${r.serial}\tunknown\t/CN=revoked\n`)
        .join('');
      await writeFile(join(dir, 'index.txt'), index);
      // CRL numbers must grow: the time in seconds does, across replicas too.
      const n = Math.floor(now / 1000).toString(16);
      await writeFile(join(dir, 'crlnumber'), `${n.length % 2 === 0 ? n : `0${n}`}\n`);
      await this.run(dir, ['ca', '-gencrl', '-config', 'ca.cnf', '-out', 'crl.pem', '-crldays', String(days)]);
      return readFile(join(dir, 'crl.pem'), 'utf8');
    });
  }

  /**
   * The key usages of a certificate, as openssl names them (`Certificate Sign`, `CRL Sign`...),
   * or undefined when it has no keyUsage extension (every usage then).
   */
  async keyUsage(certPem: string): Promise<string[] | undefined> {
    return this.inWorkDir(async (dir) => {
      await writeFile(join(dir, 'cert.pem'), certPem);
      const out = await this.run(dir, ['x509', '-in', 'cert.pem', '-noout', '-ext', 'keyUsage']);
      const line = out.split('\n').find((l, i) => i > 0 && l.trim() !== '');
      return line === undefined ? undefined : line.split(',').map((s) => s.trim());
    });
  }

  private async prepareCa(dir: string, ca: Issuer, extra: string): Promise<void> {
    await writeFile(join(dir, 'ca.cnf'), CA_CONFIG + extra);
    await writeFile(join(dir, 'ca.crt'), ca.certPem);
    await writeFile(join(dir, 'ca.key'), ca.keyPem, { mode: 0o600 });
    await writeFile(join(dir, 'index.txt'), '');
    await writeFile(join(dir, 'index.txt.attr'), 'unique_subject = no\n');
  }

  private async inWorkDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(this.workDir, 'hangar-tls-'));
    try {
      return await work(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private run(cwd: string, args: readonly string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(this.bin, args, { cwd, timeout: OPENSSL_TIMEOUT_MS }, (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EACCES') {
          reject(new OpensslMissingError(`cannot run ${this.bin}: install openssl (Debian: apt-get install openssl)`, { cause: err }));
        } else {
          reject(new Error(`openssl ${args[0]} failed: ${stderr.trim().split('\n').slice(-2).join(' | ') || err.message}`, { cause: err }));
        }
      });
    });
  }
}

/** The arguments of a new EC P-256 key, unencrypted, written to `file`. */
function newKey(file: string): string[] {
  return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', file];
}

/** Whether `keyPem` is the private key of the certificate `certPem`. */
export function keyMatches(certPem: string, keyPem: string): boolean {
  return new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem));
}
