#!/usr/bin/env node
// Runs before `npm start`: the local runtime needs redis-server and haproxy, and offers Valkey
// when valkey-server is there. On Debian and Ubuntu, installs what is missing with apt-get (as
// root, or through sudo); elsewhere, says what to install. Skipped when hangar runs on the
// emulated runtime. When everything is there it runs no apt and takes a few milliseconds.
//
// Valkey is optional: where it cannot be installed, this warns and goes on (and does not try
// again for a day, so that a machine without it does not pay an apt run at every start). Debian
// 12 has it in bookworm-backports only: a source for it is added (the archive and keyring of the
// system's bookworm entry) and valkey is installed from it with -t bookworm-backports; Debian 13
// and Ubuntu 24.04 have it as an ordinary package.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Where the bookworm-backports source goes (a file of hangar's own, beside the system's). */
export const BACKPORTS_FILE = '/etc/apt/sources.list.d/hangar-backports.sources';
const DEBIAN_KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';

/** KEY=value lines of an os-release file. */
export function parseOsRelease(text) {
  return Object.fromEntries(
    text
      .split('\n')
      .map((l) => l.match(/^([A-Z_]+)=("?)(.*)\2$/))
      .filter(Boolean)
      .map((m) => [m[1], m[3]]),
  );
}

/**
 * A bookworm-backports source (deb822) with the archive (URIs), components and keyring
 * (Signed-By) of the system's `bookworm` entry: `deb822` is the text of a .sources file,
 * `list` the text of a one-line sources.list. Undefined when neither has a bookworm entry.
 */
export function backportsSource({ deb822 = '', list = '' }) {
  for (const stanza of deb822.split(/\n\s*\n/)) {
    const field = (name) => stanza.match(new RegExp(`^${name}:[ \\t]*(.+)$`, 'mi'))?.[1]?.trim();
    if (!(field('Suites') ?? '').split(/\s+/).includes('bookworm')) continue;
    const uris = field('URIs');
    if (!uris) continue;
    return stanzaOf(uris, field('Components') ?? 'main', field('Signed-By') ?? DEBIAN_KEYRING);
  }
  const m = list.match(/^deb[ \t]+(?:\[([^\]]*)\][ \t]+)?(\S+)[ \t]+bookworm[ \t]+(.+)$/m);
  if (m) return stanzaOf(m[2], m[3].trim(), m[1]?.match(/signed-by=(\S+)/)?.[1] ?? DEBIAN_KEYRING);
  return undefined;
}

const stanzaOf = (uris, components, signedBy) =>
  `Types: deb\nURIs: ${uris}\nSuites: bookworm-backports\nComponents: ${components}\nSigned-By: ${signedBy}\n`;

/**
 * How Valkey comes on a release (os-release fields): `backports` (Debian 12), `release` (an
 * ordinary package: Debian 13 and later, Ubuntu 24.04 and later), or not at all (`why`).
 */
export function valkeyPlan(os) {
  const version = Number.parseFloat(os.VERSION_ID ?? '');
  if (os.ID === 'debian' && (os.VERSION_CODENAME === 'bookworm' || version === 12)) return { from: 'backports' };
  if (os.ID === 'debian' && (version >= 13 || (!os.VERSION_ID && /^(trixie|forky|sid)$/.test(os.VERSION_CODENAME ?? '')))) {
    return { from: 'release' };
  }
  if (os.ID === 'ubuntu' && version >= 24.04) return { from: 'release' };
  return { why: `${os.PRETTY_NAME ?? 'this system'} has no valkey-server package` };
}

/** The apt-get command that installs Valkey by a plan. */
export const valkeyInstallCommand = (plan) =>
  `apt-get update && apt-get install -y --no-install-recommends ${plan.from === 'backports' ? '-t bookworm-backports ' : ''}valkey-server valkey-tools`;

const readOr = (path, fallback) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
};

function main() {
  const runtime =
    process.env.HANGAR_RUNTIME ?? (process.argv.includes('--runtime') ? process.argv[process.argv.indexOf('--runtime') + 1] : 'local');
  if (runtime === 'emulated') return 0;

  const onPath = (bin) =>
    bin.includes('/')
      ? existsSync(bin)
      : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':').some((dir) => dir && existsSync(join(dir, bin)));
  const required = [
    { bin: process.env.HANGAR_REDIS_SERVER_BIN ?? 'redis-server', pkg: 'redis-server' },
    { bin: process.env.HANGAR_HAPROXY_BIN ?? 'haproxy', pkg: 'haproxy' },
  ];
  const missing = required.filter((w) => !onPath(w.bin)).map((w) => w.pkg);
  const cache = join(dirname(dirname(fileURLToPath(import.meta.url))), 'node_modules', '.cache', 'hangar');
  const failedMark = join(cache, 'valkey-install-failed');
  const triedLately = Date.now() - Number(readOr(failedMark, '0')) < 24 * 3600 * 1000;
  const wantValkey = !onPath('valkey-server') && !triedLately;
  // the common case: everything is there, no apt
  if (missing.length === 0 && !wantValkey) return 0;

  const warnValkey = (why) => {
    console.error(`hangar: Valkey is not installed (${why}); hangar offers Redis without it`);
    try {
      mkdirSync(cache, { recursive: true });
      writeFileSync(failedMark, String(Date.now()));
    } catch {
      /* not remembered: tried again at the next start */
    }
  };
  const isRoot = process.getuid?.() === 0;
  if (!existsSync('/usr/bin/apt-get') || (!isRoot && !onPath('sudo'))) {
    const how = existsSync('/usr/bin/apt-get') ? 'run as root: apt-get install' : 'install with your package manager:';
    if (wantValkey) warnValkey(`${how} valkey-server`);
    if (missing.length === 0) return 0;
    console.error(
      `hangar's local runtime needs ${missing.join(' and ')}; ${how} ${missing.join(' ')} (or start with HANGAR_RUNTIME=emulated)`,
    );
    return 1;
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  /** Runs a shell command as root (directly or through sudo); returns whether it succeeded. */
  const asRoot = (command) =>
    (isRoot
      ? spawnSync('sh', ['-c', command], { stdio: 'inherit', env })
      : spawnSync('sudo', ['-E', 'sh', '-c', command], { stdio: 'inherit', env })
    ).status === 0;

  let failed = false;
  if (missing.length > 0) {
    const command = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
    console.error(`installing ${missing.join(' and ')} for hangar's local runtime: ${command}`);
    failed = !asRoot(command);
  }
  if (wantValkey) installValkey(asRoot, warnValkey, cache);
  return failed ? 1 : 0;
}

/** PIDs of the valkey-server processes running now. */
const valkeyPids = () =>
  new Set((spawnSync('pgrep', ['-x', 'valkey-server'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter(Boolean).map(Number));

function installValkey(asRoot, warnValkey, cache) {
  const plan = valkeyPlan(parseOsRelease(readOr('/etc/os-release', '')));
  if (!plan.from) return warnValkey(plan.why);
  if (plan.from === 'backports' && !existsSync(BACKPORTS_FILE)) {
    const source = backportsSource({
      deb822: readOr('/etc/apt/sources.list.d/debian.sources', ''),
      list: readOr('/etc/apt/sources.list', ''),
    });
    if (!source) return warnValkey('no bookworm entry in the apt sources to add bookworm-backports beside');
    console.error(`adding ${BACKPORTS_FILE} (Debian 12 has Valkey in bookworm-backports)`);
    mkdirSync(cache, { recursive: true });
    const tmp = join(cache, 'hangar-backports.sources');
    writeFileSync(tmp, source);
    const added = asRoot(`install -m 0644 '${tmp}' ${BACKPORTS_FILE}`);
    rmSync(tmp, { force: true });
    if (!added) return warnValkey(`could not write ${BACKPORTS_FILE}`);
  }
  const before = valkeyPids();
  const command = valkeyInstallCommand(plan);
  console.error(`installing valkey-server and valkey-tools (optional, for Valkey instances): ${command}`);
  if (!asRoot(command)) return warnValkey('apt-get could not install it');
  // The package may start a system-wide valkey-server (hangar runs its own): stop what the install started.
  const started = [...valkeyPids()].filter((pid) => !before.has(pid));
  if (started.length > 0 && existsSync('/run/systemd/system')) asRoot('systemctl disable --now valkey-server >/dev/null 2>&1 || true');
  else {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exit(main());
