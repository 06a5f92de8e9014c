/** One Server-Sent Events message. */
export interface SseMessage {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/**
 * The messages of an SSE body as they arrive (the WHATWG rules: `field: value` lines, a blank
 * line ends a message, `:` starts a comment, `data` lines join with newlines). `onChunk` is
 * called for every chunk read, comments (heartbeats) included.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, onChunk: () => void = () => {}): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk();
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        if (!m) break;
        // a lone \r at the end may be the first half of \r\n: wait for more
        if (m[0] === '\r' && m.index === buffer.length - 1) break;
        const line = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length > 0 || event !== undefined) {
            yield { ...(id !== undefined ? { id } : {}), ...(event !== undefined ? { event } : {}), data: data.join('\n') };
          }
          event = undefined;
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
