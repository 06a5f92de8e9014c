import { errors } from '../domain/errors.js';
import type { Instance } from '../domain/model.js';
import type { Operation } from '../domain/operations.js';
import {
  BACKDATE_MS,
  CLIENT_MAX_VALID_DAYS,
  CLIENT_VALID_DAYS,
  CRL_REFRESH_DAYS,
  CRL_VALID_DAYS,
  type CertificateAuthority,
  type ClientCertificate,
  type IssuedClientCertificate,
  SERVER_VALID_DAYS,
  type ServerCertificate,
  type TlsMode,
  mustRenew,
  validUntil,
} from '../domain/tls.js';
import type { EdgeTls } from '../domain/units.js';
import { productNamed } from '../engines/products.js';
import { type IssueRequest, type Openssl, OpensslMissingError, parseCertificate, randomSerial } from '../lib/x509.js';
import { setInstanceTls } from '../store/instance-repository.js';
import {
  findClientCertificate,
  findCurrentServerCertificate,
  insertClientCertificate,
  insertServerCertificate,
  listClientCertificates,
  markServerCertificateServed,
  revokeClientCertificate,
  revokedClientCertificates,
} from '../store/tls-repository.js';
import { type Caller, NO_ORIGIN, type Origin, type ServiceDeps } from './deps.js';
import type { InstanceService, Started } from './instances.js';
import { recordAndApply } from './redis-users.js';
import type { TlsAuthority } from './tls-authority.js';
import { assertTlsChoice } from './validate.js';

const DAY_MS = 86_400_000;

/** What a client is told of an instance's TLS. */
export interface InstanceTls {
  readonly mode: TlsMode;
  /** Its TLS listeners ask for client certificates. */
  readonly clientAuth: boolean;
  readonly certificate: ServerCertificate;
  readonly caFingerprint256: string;
}

/** A change of how clients reach an instance over TLS. */
export interface TlsModeChange {
  readonly mode: string;
  /** Mutual TLS; absent: as it is (off with mode `off`). */
  readonly clientAuth?: boolean;
}

/** An answer that started an operation, or none when nothing had to change. */
export interface MaybeStarted<T> {
  readonly result: T;
  readonly operation?: Operation;
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
  /** The CRL each instance's edge is given, and what it lists: made again when that changes, or after CRL_REFRESH_DAYS. */
  private readonly crls = new Map<string, { readonly lists: string; readonly pem: string; readonly at: number }>();
  /** Certificates an edge was said to serve (`<instance>/<serial>`), so that each is recorded once per process. */
  private readonly served = new Set<string>();

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
    return this.describe(await this.instances.get(caller, name));
  }

  private async describe(inst: Instance, certificate?: ServerCertificate): Promise<InstanceTls> {
    const cert = certificate ?? (await this.ensureServerCertificate(inst));
    return { mode: tlsModeOf(inst), clientAuth: inst.tlsClientAuth, certificate: cert, caFingerprint256: cert.caFingerprint256 };
  }

  /**
   * Changes how clients reach the instance over TLS, as an operation that succeeds once its edge
   * serves the new mode: listeners that stay keep their connections; those a mode leaves out (the
   * plain ones with `required`, the TLS ones with `off`) refuse new clients and close the open ones.
   * Nothing is recorded (no operation) when the instance is already so.
   */
  async setMode(caller: Caller, name: string, change: TlsModeChange, origin: Origin = NO_ORIGIN): Promise<MaybeStarted<InstanceTls>> {
    const inst = await this.instances.get(caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const clientAuth = change.clientAuth ?? (change.mode === 'off' ? false : inst.tlsClientAuth);
    const want = assertTlsChoice(productNamed(inst.engine), { tls: change.mode, clientAuth }, inst.tlsMode, 'mode');
    if (want.mode === inst.tlsMode && want.clientAuth === inst.tlsClientAuth) return { result: await this.describe(inst) };
    // the certificate first: the pass that opens TLS listeners serves it (a missing openssl is a 503 here, not a stuck pass)
    const certificate = await this.ensureServerCertificate(inst);
    const detail = { from: inst.tlsMode, to: want.mode, tls_client_auth: want.clientAuth };
    const { operation } = await recordAndApply(this.deps, inst, { kind: 'tls.mode', caller, origin, detail }, async (trx) => {
      if (!(await setInstanceTls(trx, inst.id, want.mode, want.clientAuth))) throw errors.instanceDeleting(name);
    });
    return { result: await this.describe({ ...inst, tlsMode: want.mode, tlsClientAuth: want.clientAuth }, certificate), operation };
  }

  /**
   * Gives the instance a new server certificate now, as an operation that succeeds once its edge
   * presents it: connections open before keep theirs (the edge swaps it in memory, without a
   * reload), new ones get the new one. The one it replaces is retired once the new one is served.
   */
  async rotate(caller: Caller, name: string, origin: Origin = NO_ORIGIN): Promise<Started<InstanceTls>> {
    const inst = await this.instances.get(caller, name);
    if (inst.deleting) throw errors.instanceDeleting(name);
    const previous = await this.ensureServerCertificate(inst);
    const certificate = await this.renewNow(inst);
    const detail = { previous_serial: previous.serial, serial: certificate.serial };
    const { operation } = await recordAndApply(this.deps, inst, { kind: 'tls.rotate', caller, origin, detail }, async () => {});
    return { result: await this.describe(inst, certificate), operation };
  }

  /**
   * What the instance's TLS listeners present and check (`spec.tls`): its current certificate
   * (renewed first when due), and with mutual TLS the CA file, the CRL and the OU its clients'
   * certificates carry.
   */
  async edgeTls(inst: Instance): Promise<EdgeTls> {
    const { serial, pem } = await this.serverPemBundle(inst);
    if (!inst.tlsClientAuth) return { serial, pem };
    const clientAuth = { caPem: await this.authority.trustPem(), crlPem: await this.servedCrl(inst.id), organizationalUnit: inst.id };
    return { serial, pem, clientAuth };
  }

  /**
   * The CRL an edge is given for the instance: the one made last, unless the certificates it must
   * list changed or it is CRL_REFRESH_DAYS old (it is valid CRL_VALID_DAYS; the periodic passes
   * hand the newer one to the edge long before the old one expires).
   */
  private async servedCrl(instanceId: string): Promise<string> {
    const now = this.deps.now();
    const ca = await this.authority.get();
    const revoked = await revokedClientCertificates(this.deps.db, instanceId, now);
    const lists = [ca.fingerprint256, ...revoked.map((c) => c.serial)].join(',');
    const known = this.crls.get(instanceId);
    if (known && known.lists === lists && now - known.at < CRL_REFRESH_DAYS * DAY_MS) return known.pem;
    const pem = await this.crlPem(instanceId);
    this.crls.set(instanceId, { lists, pem, at: now });
    return pem;
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
    const work = this.renew(inst, false).finally(() => this.renewing.delete(inst.id));
    this.renewing.set(inst.id, work);
    return work;
  }

  /** A new server certificate for the instance, whether the current one is due or not (a rotation). */
  private async renewNow(inst: Instance): Promise<ServerCertificate> {
    await this.renewing.get(inst.id)?.catch(() => {});
    const work = this.renew(inst, true).finally(() => this.renewing.delete(inst.id));
    this.renewing.set(inst.id, work);
    return work;
  }

  private async renew(inst: Instance, force: boolean): Promise<ServerCertificate> {
    const { db, keyring } = this.deps;
    const ca = await this.authority.get();
    const names = this.namesOf(inst);
    const now = this.deps.now();
    const current = await findCurrentServerCertificate(db, keyring, inst.id);
    if (!force && current && !mustRenew(current, { names, caFingerprint256: ca.fingerprint256 }, now)) return current;
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
    const key = `${instanceId}/${serial}`;
    if (this.served.has(key)) return true;
    const marked = await markServerCertificateServed(this.deps.db, instanceId, serial, this.deps.now());
    if (marked) this.served.add(key);
    return marked;
  }

  /** Forgets what this process keeps of a deleted instance. */
  forget(instanceId: string): void {
    this.crls.delete(instanceId);
    for (const key of [...this.served]) if (key.startsWith(`${instanceId}/`)) this.served.delete(key);
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

  /**
   * Revokes a client certificate: the instance's CRL lists it from then on (until it expires),
   * as an operation that succeeds once the edge refuses it. Revoking a revoked one answers it again
   * (the first time kept), with no operation.
   */
  async revokeClientCertificate(
    caller: Caller,
    name: string,
    serial: string,
    origin: Origin = NO_ORIGIN,
  ): Promise<MaybeStarted<ClientCertificate>> {
    const inst = await this.instances.get(caller, name);
    const known = await findClientCertificate(this.deps.db, inst.id, serial.toUpperCase());
    if (!known) throw errors.clientCertificateNotFound(serial, name);
    if (known.revokedAt !== null) return { result: known };
    const detail = { serial: known.serial, common_name: known.commonName };
    const { result, operation } = await recordAndApply(this.deps, inst, { kind: 'tls.revoke', caller, origin, detail }, (trx) =>
      revokeClientCertificate(trx, inst.id, known.serial, this.deps.now()),
    );
    if (!result) throw errors.clientCertificateNotFound(serial, name);
    return { result, operation };
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
 * The instance's TLS mode: its own where its product offers a choice; `preferred` elsewhere (a
 * mongodb_sharded's `ssl` and Elasticsearch's `https` listeners serve beside the plain ones).
 */
export function tlsModeOf(inst: Pick<Instance, 'engine' | 'tlsMode'>): TlsMode {
  return productNamed(inst.engine).features.tlsModes ? inst.tlsMode : 'preferred';
}
