import { errors } from '../domain/errors.js';
import type { Instance } from '../domain/model.js';
import {
  BACKDATE_MS,
  CLIENT_MAX_VALID_DAYS,
  CLIENT_VALID_DAYS,
  CRL_VALID_DAYS,
  type CertificateAuthority,
  type ClientCertificate,
  type IssuedClientCertificate,
  SERVER_VALID_DAYS,
  type ServerCertificate,
  mustRenew,
  validUntil,
} from '../domain/tls.js';
import { type IssueRequest, type Openssl, OpensslMissingError, parseCertificate, randomSerial } from '../lib/x509.js';
import {
  findCurrentServerCertificate,
  insertClientCertificate,
  insertServerCertificate,
  listClientCertificates,
  markServerCertificateServed,
  revokeClientCertificate,
  revokedClientCertificates,
} from '../store/tls-repository.js';
import type { Caller, ServiceDeps } from './deps.js';
import type { InstanceService } from './instances.js';
import type { TlsAuthority } from './tls-authority.js';

/** How clients reach an instance over TLS. */
export type TlsMode = 'preferred';

/** What a client is told of an instance's TLS. */
export interface InstanceTls {
  readonly mode: TlsMode;
  readonly certificate: ServerCertificate;
  readonly caFingerprint256: string;
}

export interface ClientCertificateInput {
  readonly commonName: string;
  readonly validDays?: number;
}

/** A client certificate's common name: what openssl's subject takes as is, and people read. */
const COMMON_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,63}$/;

/**
 * Certificates of instance connections: each instance's server certificate, signed by the
 * deployment's CA and renewed before its end, and client certificates of mutual TLS, listed and
 * revocable, with the CRL that lists the revoked ones.
 *
 * For the edge (no caller): `ensureServerCertificate` and `serverPemBundle` give what a TLS
 * listener of the instance serves, `markServed` retires the certificates it replaced,
 * `authority.trustPem()` is the CA file of mutual TLS and `crlPem` its CRL.
 */
export class TlsService {
  /** Renewals in flight in this process, by instance: concurrent reads wait for one openssl run. */
  private readonly renewing = new Map<string, Promise<ServerCertificate>>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly instances: InstanceService,
    readonly authority: TlsAuthority,
    private readonly openssl: Openssl,
  ) {}

  /** What clients trust: the CA certificate (PEM). */
  caCertificatePem(): Promise<string> {
    return this.authority.trustPem();
  }

  /** The instance's TLS: its mode and current certificate, made on the first read. */
  async instanceTls(caller: Caller, name: string): Promise<InstanceTls> {
    const inst = await this.instances.get(caller, name);
    const certificate = await this.ensureServerCertificate(inst);
    return { mode: tlsModeOf(inst), certificate, caFingerprint256: certificate.caFingerprint256 };
  }

  /**
   * The names clients reach the instance by, which its server certificate must hold: the
   * address its runtime gave it, or the advertised host. The one list every caller uses, so
   * that two of them never renew the certificate back and forth.
   */
  namesOf(inst: Instance): string[] {
    return [inst.address ?? this.deps.config.advertiseHost];
  }

  /**
   * The instance's current server certificate, made (or renewed) first when `mustRenew` says
   * so. Of replicas renewing at once, one certificate is kept: the others read it back.
   */
  async ensureServerCertificate(inst: Instance): Promise<ServerCertificate> {
    const running = this.renewing.get(inst.id);
    if (running) return running;
    const work = this.renew(inst).finally(() => this.renewing.delete(inst.id));
    this.renewing.set(inst.id, work);
    return work;
  }

  private async renew(inst: Instance): Promise<ServerCertificate> {
    const { db, keyring } = this.deps;
    const ca = await this.authority.get();
    const names = this.namesOf(inst);
    const now = this.deps.now();
    const current = await findCurrentServerCertificate(db, keyring, inst.id);
    if (current && !mustRenew(current, { names, caFingerprint256: ca.fingerprint256 }, now)) return current;
    if (inst.deleting) {
      if (current) return current;
      throw errors.instanceDeleting(inst.name);
    }
    const made = await this.issue(ca, {
      kind: 'server',
      organizationalUnit: inst.id,
      commonName: names[0]!,
      names,
      serial: randomSerial(),
      notBefore: now - BACKDATE_MS,
      notAfter: validUntil(now, SERVER_VALID_DAYS, ca.notAfter),
    });
    const parsed = parseCertificate(made.certPem);
    const cert: ServerCertificate = {
      instanceId: inst.id,
      generation: (current?.generation ?? 0) + 1,
      serial: parsed.serial,
      fingerprint256: parsed.fingerprint256,
      caFingerprint256: ca.fingerprint256,
      names,
      certPem: made.certPem,
      keyPem: made.keyPem,
      notBefore: parsed.notBefore,
      notAfter: parsed.notAfter,
      createdAt: now,
      servedAt: null,
      retiredAt: null,
    };
    const outcome = await insertServerCertificate(db, keyring, cert);
    if (outcome === 'gone') throw errors.instanceNotFound(inst.name);
    if (outcome === 'taken') {
      const winner = await findCurrentServerCertificate(db, keyring, inst.id);
      if (!winner) throw errors.instanceNotFound(inst.name);
      return winner;
    }
    return cert;
  }

  /**
   * What an edge's TLS listener of the instance serves (HAProxy's `crt`): the current
   * certificate, the operator CA's intermediates when it has some, then the private key.
   */
  async serverPemBundle(inst: Instance): Promise<{ serial: string; pem: string }> {
    const cert = await this.ensureServerCertificate(inst);
    return { serial: cert.serial, pem: `${cert.certPem.trimEnd()}\n${this.authority.chainPem()}${cert.keyPem.trimEnd()}\n` };
  }

  /** An edge serves the instance's certificate `serial` now: the ones it replaced are retired. */
  async markServed(instanceId: string, serial: string): Promise<boolean> {
    return markServerCertificateServed(this.deps.db, instanceId, serial, this.deps.now());
  }

  /** Issues a client certificate (clientAuth, CN given, OU the instance id); its private key is in this answer only. */
  async issueClientCertificate(caller: Caller, name: string, input: ClientCertificateInput): Promise<IssuedClientCertificate> {
    if (!COMMON_NAME.test(input.commonName)) {
      throw errors.invalidValue(
        'common_name',
        '"common_name" must be 1 to 64 letters, digits, spaces, ".", "_", "@", ":" or "-", starting with a letter or digit',
      );
    }
    const days = input.validDays ?? CLIENT_VALID_DAYS;
    if (!Number.isInteger(days) || days < 1 || days > CLIENT_MAX_VALID_DAYS) {
      throw errors.invalidValue('valid_days', `"valid_days" must be a whole number of days from 1 to ${CLIENT_MAX_VALID_DAYS}`);
    }
    const inst = await this.instances.get(caller, name);
    if (inst.deleting) throw errors.instanceDeleting(inst.name);
    const ca = await this.authority.get();
    const now = this.deps.now();
    const made = await this.issue(ca, {
      kind: 'client',
      organizationalUnit: inst.id,
      commonName: input.commonName,
      serial: randomSerial(),
      notBefore: now - BACKDATE_MS,
      notAfter: validUntil(now, days, ca.notAfter),
    });
    const parsed = parseCertificate(made.certPem);
    const cert: ClientCertificate = {
      instanceId: inst.id,
      serial: parsed.serial,
      commonName: input.commonName,
      fingerprint256: parsed.fingerprint256,
      caFingerprint256: ca.fingerprint256,
      certPem: made.certPem,
      notBefore: parsed.notBefore,
      notAfter: parsed.notAfter,
      createdAt: now,
      revokedAt: null,
    };
    if ((await insertClientCertificate(this.deps.db, cert)) === 'gone') throw errors.instanceNotFound(inst.name);
    return { ...cert, keyPem: made.keyPem };
  }

  /** The instance's client certificates, oldest first, revoked ones included. */
  async listClientCertificates(caller: Caller, name: string): Promise<ClientCertificate[]> {
    const inst = await this.instances.get(caller, name);
    return listClientCertificates(this.deps.db, inst.id);
  }

  /** Revokes a client certificate: the instance's CRL lists it from then on (until it expires). */
  async revokeClientCertificate(caller: Caller, name: string, serial: string): Promise<ClientCertificate> {
    const inst = await this.instances.get(caller, name);
    const revoked = await revokeClientCertificate(this.deps.db, inst.id, serial.toUpperCase(), this.deps.now());
    if (!revoked) throw errors.clientCertificateNotFound(serial, name);
    return revoked;
  }

  /**
   * The instance's CRL (PEM, HAProxy's `crl-file`), signed by the CA: its revoked client
   * certificates that have not expired. Valid CRL_VALID_DAYS: render it again before then (an
   * edge that checks CRLs refuses every client once its CRL has expired), and after each
   * revocation.
   */
  async crlPem(instanceId: string): Promise<string> {
    const ca = await this.authority.get();
    const now = this.deps.now();
    const revoked = await revokedClientCertificates(this.deps.db, instanceId, now);
    return this.withOpenssl(() =>
      this.openssl.crl(
        ca,
        revoked.map((c) => ({ serial: c.serial, revokedAt: c.revokedAt!, notAfter: c.notAfter })),
        now,
        CRL_VALID_DAYS,
      ),
    );
  }

  private issue(ca: CertificateAuthority, request: IssueRequest): Promise<{ certPem: string; keyPem: string }> {
    return this.withOpenssl(() => this.openssl.issue(ca, request));
  }

  /** A missing openssl program is a 503 that says so, not a 500. */
  private async withOpenssl<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof OpensslMissingError) throw errors.tlsUnavailable(err.message);
      throw err;
    }
  }
}

/**
 * The instance's TLS mode. Instances carry no mode of their own yet (a later change adds it):
 * until then every instance reads as `preferred`.
 */
export function tlsModeOf(_inst: Instance): TlsMode {
  return 'preferred';
}
