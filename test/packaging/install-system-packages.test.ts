import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

interface Plan {
  from?: 'backports' | 'release';
  why?: string;
}
const SCRIPT = resolve('scripts/install-system-packages.mjs');
const script = (await import(pathToFileURL(SCRIPT).href)) as {
  parseOsRelease(text: string): Record<string, string>;
  backportsSource(sources: { deb822?: string; list?: string }): string | undefined;
  valkeyPlan(os: Record<string, string>): Plan;
  valkeyInstallCommand(plan: Plan): string;
};

// /etc/apt/sources.list.d/debian.sources of a Debian 12 image
const BOOKWORM_SOURCES = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`;

describe('the system packages of npm start (scripts/install-system-packages.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-syspkg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('Valkey on Debian 12 comes from a bookworm-backports source with the archive and keyring of the bookworm entry', () => {
    expect(script.backportsSource({ deb822: BOOKWORM_SOURCES })).toBe(
      'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n',
    );
    expect(script.backportsSource({ list: 'deb [signed-by=/etc/apt/k.gpg] http://mirror.example/debian bookworm main contrib\n' })).toBe(
      'Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm-backports\nComponents: main contrib\nSigned-By: /etc/apt/k.gpg\n',
    );
    expect(script.backportsSource({ deb822: 'Types: deb\nURIs: http://x/ubuntu\nSuites: noble\n' })).toBeUndefined();

    const bookworm = script.parseOsRelease(
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n',
    );
    expect(script.valkeyPlan(bookworm)).toEqual({ from: 'backports' });
    expect(script.valkeyInstallCommand({ from: 'backports' })).toBe(
      'apt-get update && apt-get install -y --no-install-recommends -t bookworm-backports valkey-server valkey-tools',
    );
  });

  it('an ordinary package on Debian 13 and Ubuntu 24.04; elsewhere a reason (and hangar goes on without it)', () => {
    expect(script.valkeyPlan({ ID: 'debian', VERSION_ID: '13', VERSION_CODENAME: 'trixie' })).toEqual({ from: 'release' });
    expect(script.valkeyPlan({ ID: 'debian', VERSION_CODENAME: 'sid' })).toEqual({ from: 'release' });
    expect(script.valkeyPlan({ ID: 'ubuntu', VERSION_ID: '24.04' })).toEqual({ from: 'release' });
    expect(script.valkeyInstallCommand({ from: 'release' })).toBe(
      'apt-get update && apt-get install -y --no-install-recommends valkey-server valkey-tools',
    );
    expect(script.valkeyPlan({ ID: 'ubuntu', VERSION_ID: '22.04', PRETTY_NAME: 'Ubuntu 22.04.5 LTS' })).toEqual({
      why: 'Ubuntu 22.04.5 LTS has no valkey-server package',
    });
    expect(script.valkeyPlan({ ID: 'debian', VERSION_ID: '11', PRETTY_NAME: 'Debian GNU/Linux 11 (bullseye)' }).from).toBeUndefined();
  });

  it('with redis-server, haproxy and valkey-server there, it runs no apt and answers at once', () => {
    const bin = join(dir, 'bin');
    const aptRan = join(dir, 'apt-ran');
    spawnSync('mkdir', ['-p', bin]);
    for (const b of ['redis-server', 'haproxy', 'valkey-server']) writeFileSync(join(bin, b), '#!/bin/sh\n');
    writeFileSync(join(bin, 'apt-get'), `#!/bin/sh\ntouch '${aptRan}'\n`);
    writeFileSync(join(bin, 'sudo'), `#!/bin/sh\ntouch '${aptRan}'\n`);
    for (const b of ['redis-server', 'haproxy', 'valkey-server', 'apt-get', 'sudo']) chmodSync(join(bin, b), 0o755);
    const started = Date.now();
    const r = spawnSync(process.execPath, [SCRIPT], { env: { PATH: `${bin}:/usr/bin:/bin` }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(existsSync(aptRan)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
