import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientAuthRule, edgeTlsContents, edgeTlsDir, edgeTlsFiles, removeEdgeTls, tlsBindOptions } from './edge-tls.js';

const ID = '65a1b2c3d4e5f60718293a4b';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('tlsBindOptions', () => {
  it("names the instance's PEM, quoted for HAProxy", () => {
    expect(tlsBindOptions('/data/edge', ID)).toBe(`ssl crt "/data/edge/tls/${ID}.pem"`);
    expect(tlsBindOptions('/data dir/"e"', ID)).toBe(`ssl crt "/data dir/\\"e\\"/tls/${ID}.pem"`);
  });

  it('asks mutual-TLS listeners for a client certificate of the CA file, checked against the CRL', () => {
    expect(tlsBindOptions('/data/edge', ID, true)).toBe(
      `ssl crt "/data/edge/tls/${ID}.pem" verify required ca-file "/data/edge/tls/${ID}.ca.pem" crl-file "/data/edge/tls/${ID}.crl.pem"`,
    );
    expect(clientAuthRule(ID)).toBe(`tcp-request session reject unless { ssl_c_s_dn(OU) -m str ${ID} }`);
  });
});

describe('the TLS files of an instance', () => {
  it('hold the certificate bundle, and with mutual TLS the CA and the CRL', () => {
    expect(edgeTlsContents({ serial: 'AB', pem: 'bundle' })).toEqual({ cert: 'bundle', ca: undefined, crl: undefined });
    expect(edgeTlsContents({ serial: 'AB', pem: 'bundle', clientAuth: { caPem: 'ca', crlPem: 'crl', organizationalUnit: ID } })).toEqual({
      cert: 'bundle',
      ca: 'ca',
      crl: 'crl',
    });
  });

  it("are removed with the instance, and so are an older hangar's self-signed ones; another instance's stay", () => {
    const edgeDir = mkdtempSync(join(tmpdir(), 'hangar-edge-tls-'));
    dirs.push(edgeDir);
    mkdirSync(edgeTlsDir(edgeDir));
    const other = '65a1b2c3d4e5f60718293a4c';
    for (const f of [
      ...Object.values(edgeTlsFiles(edgeDir, ID)),
      join(edgeTlsDir(edgeDir), `${ID}.crt`),
      edgeTlsFiles(edgeDir, other).cert,
    ])
      writeFileSync(f, 'x');
    removeEdgeTls(edgeDir, ID);
    removeEdgeTls(edgeDir, ID);
    expect(readdirSync(edgeTlsDir(edgeDir))).toEqual([`${other}.pem`]);
    // no directory is no error
    removeEdgeTls(join(edgeDir, 'none'), ID);
  });
});
