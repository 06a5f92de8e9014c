import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Hears of bytes as they arrive: how many so far, and of how many when the size is known. */
export type OnBytes = (done: number, total: number | undefined) => void;

export interface Digests {
  readonly sha1: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** A download or a file whose checksum is not the one published. */
export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError';
}

/** Seconds without a byte after which a download is given up. */
const STALL_MS = 60_000;

/** SHA-1 and SHA-256 of what passes through, counted. */
function digester(onBytes: OnBytes | undefined, total: number | undefined) {
  const sha1 = createHash('sha1');
  const sha256 = createHash('sha256');
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sha1.update(chunk);
      sha256.update(chunk);
      bytes += chunk.length;
      onBytes?.(bytes, total);
      done(null, chunk);
    },
  });
  return { stream, digests: (): Digests => ({ sha1: sha1.digest('hex'), sha256: sha256.digest('hex'), bytes }) };
}

async function get(url: string, signal: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { signal, redirect: 'follow' });
  } catch (err) {
    const cause = (err as { cause?: { message?: string; code?: string } }).cause;
    throw new Error(`cannot fetch ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`cannot fetch ${url}: HTTP ${res.status}${res.status === 404 ? ' (not found)' : ''}`);
  }
  return res;
}

/**
 * Downloads `url` to the file `dest`, computing its SHA-1 and SHA-256 on the way. Gives up
 * when no byte arrives for a minute, or when the body is shorter than announced.
 */
export async function download(url: string, dest: string, onBytes?: OnBytes): Promise<Digests> {
  const abort = new AbortController();
  let timer = setTimeout(() => abort.abort(), STALL_MS);
  const alive = () => {
    clearTimeout(timer);
    timer = setTimeout(() => abort.abort(), STALL_MS);
  };
  try {
    const res = await get(url, abort.signal);
    const length = Number(res.headers.get('content-length'));
    const total = Number.isFinite(length) && length > 0 ? length : undefined;
    const d = digester((done, t) => {
      alive();
      onBytes?.(done, t);
    }, total);
    try {
      await pipeline(
        Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
        d.stream,
        createWriteStream(dest, { mode: 0o644 }),
      );
    } catch (err) {
      if (abort.signal.aborted) throw new Error(`download of ${url} stalled: no data for ${STALL_MS / 1000} s`);
      throw new Error(`download of ${url} failed: ${(err as Error).message}`);
    }
    const digests = d.digests();
    if (total !== undefined && digests.bytes !== total)
      throw new Error(`download of ${url} ended early: ${digests.bytes} of ${total} bytes`);
    return digests;
  } finally {
    clearTimeout(timer);
  }
}

/** A small text file over HTTP (a `.sha1`). */
export async function fetchText(url: string): Promise<string> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), STALL_MS);
  try {
    return await (await get(url, abort.signal)).text();
  } finally {
    clearTimeout(timer);
  }
}

/** SHA-1 and SHA-256 of a local file. */
export async function hashFile(path: string, onBytes?: OnBytes): Promise<Digests> {
  const d = digester(onBytes, undefined);
  // the digests are taken on the way through; the bytes go nowhere
  const sink = new Writable({ write: (_chunk, _enc, done) => done() });
  await pipeline(createReadStream(path), d.stream, sink);
  return d.digests();
}

/** The SHA-1 in a `.sha1` file's text: the first 40 hex digits (some add the file name after). */
export function parseSha1(text: string, from: string): string {
  const m = /^\s*([0-9a-fA-F]{40})\b/.exec(text);
  if (!m) throw new Error(`${from} holds no SHA-1 (40 hex digits): "${text.trim().slice(0, 80)}"`);
  return m[1]!.toLowerCase();
}

/** The SHA-1 published for `url`: its `.sha1` beside it. */
export async function publishedSha1(url: string): Promise<{ sha1: string; from: string }> {
  const from = `${url}.sha1`;
  return { sha1: parseSha1(await fetchText(from), from), from };
}

/** The SHA-1 kept beside a local file (`<file>.sha1`), when there is one. */
export async function sha1Beside(file: string): Promise<{ sha1: string; from: string } | undefined> {
  const from = `${file}.sha1`;
  let text: string;
  try {
    text = await readFile(from, 'utf8');
  } catch {
    return undefined;
  }
  return { sha1: parseSha1(text, from), from };
}

/** Refuses bytes whose SHA-1 is not the one published, naming both. */
export function assertSha1(what: string, actual: string, expected: { sha1: string; from: string }): void {
  if (actual !== expected.sha1) {
    throw new ChecksumMismatchError(
      `checksum mismatch for ${what}: its SHA-1 is ${actual}, but ${expected.from} says ${expected.sha1}; nothing was installed`,
    );
  }
}
