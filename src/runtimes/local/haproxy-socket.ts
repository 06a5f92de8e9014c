import { connect } from 'node:net';
import { sleep } from '../../lib/time.js';

/** A word of an HAProxy CLI command: spaces, `;` and `\` escaped (paths may hold them). */
export function cliWord(word: string): string {
  return word.replace(/([\\; ])/g, '\\$1');
}

/** Where an HAProxy CLI listens: a unix socket's path, or a TCP address (an edge in a pod). */
export type CliSocket = string | { readonly host: string; readonly port: number };

/**
 * Sends one line (commands separated by `;`) to an HAProxy CLI socket (runtime API or master
 * CLI) and returns what it answers. The socket answers and closes: one connection per call.
 */
export function haproxyCommand(socket: CliSocket, line: string, timeoutMs = 3000, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const where = typeof socket === 'string' ? socket : `${socket.host}:${socket.port}`;
    const what = `"${line.split(' ').slice(0, 2).join(' ')}" on ${where}`;
    if (signal?.aborted) return reject(new Error(`cancelled before sending ${what}`));
    const conn = connect(typeof socket === 'string' ? { path: socket } : { host: socket.host, port: socket.port });
    const chunks: Buffer[] = [];
    const fail = (err: Error) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
      conn.destroy();
      reject(err);
    };
    const cancel = () => fail(new Error(`cancelled while waiting for HAProxy to answer ${what}`));
    const timer = setTimeout(() => fail(new Error(`HAProxy did not answer ${what} within ${timeoutMs} ms`)), timeoutMs);
    signal?.addEventListener('abort', cancel, { once: true });
    conn.on('connect', () => conn.end(`${line}\n`));
    conn.on('data', (c) => chunks.push(c));
    conn.on('error', fail);
    conn.on('close', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** Like haproxyCommand, retrying while the socket is missing, refuses or resets (the master re-executes on reload). */
export async function haproxyCommandRetrying(socketPath: string, line: string, deadlineMs: number, signal?: AbortSignal): Promise<string> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await haproxyCommand(socketPath, line, 3000, signal);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (signal?.aborted || !['ECONNREFUSED', 'ENOENT', 'EAGAIN', 'ECONNRESET', 'EPIPE'].includes(code ?? '') || Date.now() > until)
        throw err;
      await sleep(10, signal);
    }
  }
}

/** A process line of the master CLI's `show proc`. */
export interface HaproxyProcess {
  readonly pid: number;
  readonly type: 'master' | 'worker' | 'old-worker';
  readonly reloads: number;
  /** Failed reloads (master only). */
  readonly failed: number;
}

/** Parses `show proc` of the master CLI. */
export function parseShowProc(text: string): HaproxyProcess[] {
  const out: HaproxyProcess[] = [];
  let section: 'current' | 'old' | 'other' = 'current';
  for (const line of text.split('\n')) {
    if (line.startsWith('# old workers')) section = 'old';
    else if (line.startsWith('# workers')) section = 'current';
    else if (line.startsWith('# ')) section = 'other';
    const m = /^(\d+)\s+(master|worker)\s+(\d+)(?:\s+\[failed: (\d+)\])?/.exec(line);
    if (!m || section === 'other') continue;
    const type = m[2] === 'master' ? 'master' : section === 'old' ? 'old-worker' : 'worker';
    out.push({ pid: Number(m[1]), type, reloads: Number(m[3]), failed: Number(m[4] ?? 0) });
  }
  return out;
}

/** A client session of `show sess`. */
export interface HaproxySession {
  /** Pointer that `shutdown session` takes. */
  readonly id: string;
  readonly frontend: string;
  /** Source address, without the port. */
  readonly source: string;
}

/** Parses `show sess`: the client sessions (TCP and TCPv6 sources; CLI sessions are left out). */
export function parseShowSess(text: string): HaproxySession[] {
  const out: HaproxySession[] = [];
  for (const line of text.split('\n')) {
    const m = /^(0x[0-9a-f]+): proto=tcpv[46] src=(\S+) fe=(\S+)/.exec(line);
    if (!m) continue;
    const src = m[2]!;
    // `1.2.3.4:5678` or `::1:5678`: the port follows the last colon
    out.push({ id: m[1]!, frontend: m[3]!, source: src.slice(0, src.lastIndexOf(':')) });
  }
  return out;
}

/** Parses `show acl <file>`: entry reference and pattern. */
export function parseShowAcl(text: string): { ref: string; pattern: string }[] {
  const out: { ref: string; pattern: string }[] = [];
  for (const line of text.split('\n')) {
    const m = /^(0x[0-9a-f]+) (\S+)$/.exec(line.trim());
    if (m) out.push({ ref: m[1]!, pattern: m[2]! });
  }
  return out;
}

/**
 * Per frontend of `show stat`: connections admitted and refused. The ACL rule rejects at the
 * content stage, where a refused connection is a session (`stot`) with a denied request
 * (`dreq`); connections refused at the connection or session stage count in `dcon` and `dses`.
 */
export function parseShowStat(text: string): { frontend: string; admitted: number; refused: number }[] {
  const lines = text.split('\n').filter(Boolean);
  const header = lines[0]?.replace(/^# /, '').split(',') ?? [];
  const col = (name: string) => header.indexOf(name);
  const [px, sv, stot, dcon, dses, dreq] = [col('pxname'), col('svname'), col('stot'), col('dcon'), col('dses'), col('dreq')];
  if (px < 0 || sv < 0 || stot < 0 || dcon < 0) return [];
  const num = (f: string[], i: number) => (i < 0 ? 0 : Number(f[i] || 0));
  const out: { frontend: string; admitted: number; refused: number }[] = [];
  for (const line of lines.slice(1)) {
    const f = line.split(',');
    if (f[sv] !== 'FRONTEND') continue;
    out.push({ frontend: f[px]!, admitted: num(f, stot) - num(f, dreq), refused: num(f, dcon) + num(f, dses) + num(f, dreq) });
  }
  return out;
}

/** The lines of `show events <ring>`: what the ring holds, oldest first. */
export function parseShowEvents(text: string): string[] {
  return text.split('\n').filter((l) => l.includes('hangar-edge '));
}

/** The runtime API's word for a kind of TLS file (`set ssl <word> <file>`). */
export type TlsFileWord = 'cert' | 'ca-file' | 'crl-file';

/**
 * Hands a TLS file's new content to a running HAProxy through its runtime API (`send` one
 * command line, get the answer): one transaction, `set ssl <word>` then `commit ssl <word>`,
 * aborted when the commit fails. HAProxy uses it for new handshakes at once; connections open
 * keep theirs. The file itself is not written: HAProxy reads it again when it reloads.
 */
export async function replaceTlsFile(
  send: (line: string) => Promise<string>,
  word: TlsFileWord,
  path: string,
  content: string,
): Promise<void> {
  const file = cliWord(path);
  // a payload ends at its first empty line: PEM has none inside, and none is sent
  const payload = content
    .split('\n')
    .filter((l) => l.trim() !== '')
    .join('\n');
  const set = await send(`set ssl ${word} ${file} <<\n${payload}\n`);
  if (!/transaction (created|updated)/i.test(set)) throw new Error(`set ssl ${word}: ${set.trim()}`);
  const commit = await send(`commit ssl ${word} ${file}`);
  if (!/success/i.test(commit)) {
    await send(`abort ssl ${word} ${file}`).catch(() => {});
    throw new Error(`commit ssl ${word}: ${commit.trim()}`);
  }
}

/** The serial of the certificate `show ssl cert <file>` shows (hex, upper case), or undefined. */
export function parseCertSerial(text: string): string | undefined {
  return /^Serial:\s*([0-9A-Fa-f]+)\s*$/m.exec(text)?.[1]?.toUpperCase();
}
