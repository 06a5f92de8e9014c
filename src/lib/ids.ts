import { randomBytes, randomUUID } from 'node:crypto';

const PROCESS_RANDOM = randomBytes(5);
let counter = randomBytes(3).readUIntBE(0, 3);

/**
 * A 24-hex object id in MongoDB's layout (4-byte seconds, 5 random bytes per process, 3-byte
 * counter), as the ObjectRocket API shows ids: sortable by creation and unique across processes.
 */
export function newObjectId(now: number = Date.now()): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.floor(now / 1000) >>> 0, 0);
  PROCESS_RANDOM.copy(buf, 4);
  counter = (counter + 1) % 0xffffff;
  buf.writeUIntBE(counter, 9, 3);
  return buf.toString('hex');
}

export function isObjectId(s: string): boolean {
  return /^[0-9a-f]{24}$/.test(s);
}

/** A random hex string of `bytes` random bytes. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export function newBuildId(): string {
  return randomUUID();
}
