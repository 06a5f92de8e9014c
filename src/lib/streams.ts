import type { Readable, Transform } from 'node:stream';

/**
 * `source` piped through `transforms`, a failure anywhere failing what comes after it (a plain
 * `pipe` does not pass errors on): the last stream ends in error when any of them does.
 */
export function chain(source: Readable, ...transforms: Transform[]): Readable {
  let last: Readable = source;
  for (const t of transforms) {
    last.once('error', (err) => t.destroy(err));
    last = last.pipe(t);
  }
  return last;
}

/** Reads a stream to its end, dropping the bytes; rejects with its error. */
export async function drain(stream: Readable): Promise<void> {
  for await (const _ of stream) {
    /* only the end, or the error, matters */
  }
}
