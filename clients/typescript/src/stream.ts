/**
 * Reading streamed answers: lines of a body as they arrive, and server-sent events parsed
 * as the WHATWG HTML standard says (`event:`, `data:` joined with newlines, comments such
 * as the server's keep-alives skipped, an event dispatched at a blank line, a half-sent
 * event at the end dropped). No dependency: `ReadableStream.getReader` and `TextDecoder`
 * exist in Node 18+, Deno, Bun and browsers.
 *
 * @module
 */

/**
 * The lines of `body` as they arrive, without their terminators. A line ends at `\n`, `\r\n`
 * or a lone `\r` (SSE allows all three). `onChunk` is called for every piece read, so a
 * caller can reset an idle timer. A last line without a terminator is yielded too.
 */
export async function* lines(body: ReadableStream<Uint8Array>, onChunk: () => void = () => {}): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  // A `\r` at the end of one piece may be the first half of a `\r\n` split across two.
  let skipLeadingLf = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onChunk();
      buffer += decoder.decode(value, { stream: true });
      if (skipLeadingLf && buffer.startsWith('\n')) buffer = buffer.slice(1);
      skipLeadingLf = false;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer.charCodeAt(i);
        if (ch !== 10 && ch !== 13) continue;
        yield buffer.slice(start, i);
        if (ch === 13) {
          if (i + 1 < buffer.length) {
            if (buffer.charCodeAt(i + 1) === 10) i++;
          } else {
            skipLeadingLf = true;
          }
        }
        start = i + 1;
      }
      buffer = buffer.slice(start);
    }
    buffer += decoder.decode();
    if (buffer.length > 0) yield buffer;
  } finally {
    // Stops the download when the consumer leaves early; harmless after the end.
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** One server-sent event: its name (`message` when the server gave none) and its data. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** The server-sent events of a stream of lines (see {@link lines}). */
export async function* serverSentEvents(source: AsyncIterable<string>): AsyncGenerator<ServerSentEvent, void, undefined> {
  let event = '';
  let data: string[] = [];
  for await (const line of source) {
    if (line === '') {
      if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
      event = '';
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    // `id` and `retry` concern reconnecting EventSources; a POST stream is not resumed.
  }
  // An event without its closing blank line was cut off: the standard drops it.
}
