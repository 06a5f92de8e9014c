import { createServer, type Server } from 'node:net';

/**
 * Ports of the tests: 10000-19999, below the local runtime's default range (20000-29999) and the
 * kernel's ephemeral ports (32768 and up), which outgoing connections take at any moment.
 */
const POOL_FIRST = 10_000;
const POOL_LAST = 19_999;
/** Claims are made of whole blocks of this many ports. */
const BLOCK = 100;

/** The claim sockets of this process: held open until it exits. */
const held: Server[] = [];

/** Listens on `port` (127.0.0.1) for as long as this process lives; false when someone else has it. */
function hold(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      s.unref();
      resolve(s);
    });
  });
}

const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

/**
 * A range of ports no other test process on this machine uses (other files of this run, or a
 * run of another checkout at the same time): its blocks of 100 are claimed by listening on the
 * first port of each, a socket this process keeps open until it exits. The kernel gives a port
 * to one listener only, so two processes can never claim one block; the claim is the bind
 * itself, with nothing to check first and use later. The first port of each block is the claim:
 * the range handed out begins after it (and skips the later blocks' first ports too when a
 * range spans blocks: they stay listening, so whoever is given the range finds them taken).
 */
export async function claimPortRange(size = BLOCK): Promise<{ first: number; last: number }> {
  const blocks = Math.ceil(size / BLOCK);
  const slots = Math.floor((POOL_LAST - POOL_FIRST + 1) / BLOCK) - blocks + 1;
  const start = Math.floor(Math.random() * slots);
  for (let i = 0; i < slots; i++) {
    const first = POOL_FIRST + ((start + i) % slots) * BLOCK;
    const claims: Server[] = [];
    for (let b = 0; b < blocks; b++) {
      const s = await hold(first + b * BLOCK);
      if (!s) break;
      claims.push(s);
    }
    if (claims.length === blocks) {
      held.push(...claims);
      return { first: first + 1, last: first + blocks * BLOCK - 1 };
    }
    await Promise.all(claims.map(close));
  }
  throw new Error(`no free block of ${size} ports left in ${POOL_FIRST}-${POOL_LAST}: too many test processes at once?`);
}

let pool: { next: number; last: number } | undefined;

/**
 * A port nothing listens on, for a test's own listener or a process it starts: from a range this
 * process claimed (never from the ephemeral ports, where any outgoing connection may take it
 * between the check and its use), and never the same one twice in this process.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    if (!pool || pool.next > pool.last) {
      const range = await claimPortRange();
      pool = { next: range.first, last: range.last };
    }
    const port = pool.next++;
    const s = await hold(port);
    if (s) {
      await close(s);
      return port;
    }
  }
}
