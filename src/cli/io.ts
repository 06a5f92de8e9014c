/** Where a command writes and reads: tests pass buffers, the binary passes the process's streams. */
export interface Io {
  /** A line to stdout (results: tables, JSON). */
  out(text: string): void;
  /** A line to stderr (progress, warnings, failures). */
  err(text: string): void;
  /** stderr is a terminal: progress lines are rewritten in place. */
  readonly errIsTty?: boolean;
  /** Writes to stderr as is, without adding a newline (a progress line being rewritten). */
  errRaw?(text: string): void;
  /** stdin is a terminal: questions can be asked. */
  readonly inIsTty?: boolean;
  /** Asks on the terminal; a secret is not echoed. */
  prompt?(question: string, opts?: { secret?: boolean }): Promise<string>;
  /** stdin, read to its end (for --password-stdin). */
  readStdin?(): Promise<string>;
}

/** A count and its noun, singular for one: `1 command`, `2 commands`. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Reads a line from the terminal in raw mode, echoing nothing when `secret`. */
function ask(question: string, secret: boolean): Promise<string> {
  const { stdin, stderr } = process;
  return new Promise((resolve, reject) => {
    let answer = '';
    const wasRaw = stdin.isRaw;
    // Raw before the question shows: what is typed after it is never echoed by the terminal.
    stdin.setRawMode(true);
    stderr.write(question);
    stdin.resume();
    stdin.setEncoding('utf8');
    const finish = (err?: Error) => {
      stdin.setRawMode(wasRaw);
      stdin.pause();
      stdin.off('data', onData);
      stderr.write('\n');
      if (err) reject(err);
      else resolve(answer);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new UsageError('interrupted'));
        if (ch === '\u0004' && answer === '') return finish(new UsageError('no answer'));
        if (ch === '\u007f' || ch === '\b') {
          if (answer.length > 0) {
            answer = answer.slice(0, -1);
            if (!secret) stderr.write('\b \b');
          }
          continue;
        }
        if (ch < ' ') continue;
        answer += ch;
        if (!secret) stderr.write(ch);
      }
    };
    stdin.on('data', onData);
  });
}

export const processIo: Io = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
  errIsTty: process.stderr.isTTY === true,
  errRaw: (t) => process.stderr.write(t),
  inIsTty: process.stdin.isTTY === true,
  prompt: (question, opts) => ask(question, opts?.secret === true),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  },
};

/** A wrong command line: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** No session to talk to hangar with (or it was refused): exit code 4. */
export class NotLoggedInError extends Error {
  override name = 'NotLoggedInError';
}

/**
 * Exit codes. 0 success; 1 failure; 2 wrong usage; 3 not found (the instance, ACL or user does
 * not exist); 4 not logged in, or the credentials or token were refused; 5 gave up waiting
 * (--timeout) while hangar keeps working.
 */
export const EXIT = { OK: 0, FAILURE: 1, USAGE: 2, NOT_FOUND: 3, AUTH: 4, TIMEOUT: 5 } as const;

export const json = (v: unknown): string => JSON.stringify(v, null, 2);
