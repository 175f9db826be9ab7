/**
 * Rewrites the `data` of `message` events in a Server-Sent Events stream (WHATWG HTML §9.2 event stream
 * format), chunk by chunk. See {@link createEventStreamRewriter}.
 */
export interface EventStreamRewriter {
  /**
   * Feeds bytes from the upstream; returns the complete events they finished, ready to write (possibly
   * `''`), or `undefined` when the event being assembled grew past the limit (the stream must then be
   * ended: it cannot be passed on unchecked).
   */
  push(chunk: Buffer): string | undefined;
}

const LINE_END = /\r\n|\r|\n/g;

/**
 * Creates a rewriter for one event stream. Each complete event is written on as soon as its terminating
 * blank line arrives; only the event being assembled is held. For an event of type `message` (the default)
 * with data, `rewrite` gets the data (multi-line data joined with `\n`) and returns the replacement, or
 * `undefined` to keep the event as it was. Other fields (`id`, `event`, `retry`, comments) are kept in
 * order; line ends are normalised to `\n`, which every SSE parser reads the same way.
 *
 * An event still incomplete when the stream ends is never written: SSE clients discard it anyway, and it
 * was never checked.
 *
 * @param maxEventLength Most characters held for the event being assembled.
 */
export function createEventStreamRewriter(rewrite: (data: string) => string | undefined, maxEventLength: number): EventStreamRewriter {
  // UTF-8 is the only encoding of text/event-stream; a character split across chunks is kept for the next one.
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  let lines: string[] = [];
  let held = 0;
  let afterCr = false;

  function finishEvent(): string {
    const event = lines;
    lines = [];
    held = 0;
    let type = '';
    const data: string[] = [];
    for (const line of event) {
      if (line.startsWith(':')) continue;
      const { field, value } = splitField(line);
      if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
    }
    const replacement = data.length > 0 && (type === '' || type === 'message') ? rewrite(data.join('\n')) : undefined;
    if (replacement === undefined) return `${event.join('\n')}\n\n`;
    const out: string[] = [];
    let dataWritten = false;
    for (const line of event) {
      if (!line.startsWith(':') && splitField(line).field === 'data') {
        // One `data` line carries the replacement; it must not contain line ends (JSON.stringify output never does).
        if (!dataWritten) out.push(`data: ${replacement}`);
        dataWritten = true;
        continue;
      }
      out.push(line);
    }
    return `${out.join('\n')}\n\n`;
  }

  return {
    push(chunk) {
      let decoded = decoder.decode(chunk, { stream: true });
      if (afterCr && decoded !== '') {
        // The previous chunk ended with `\r`, already taken as a line end: a `\n` here completes that `\r\n`.
        if (decoded.startsWith('\n')) decoded = decoded.slice(1);
        afterCr = false;
      }
      const text = rest + decoded;
      // A `\r` at the very end is a line end now (no waiting for the next chunk to deliver the event).
      if (text.endsWith('\r')) afterCr = true;
      let out = '';
      let start = 0;
      LINE_END.lastIndex = 0;
      for (let m = LINE_END.exec(text); m !== null; m = LINE_END.exec(text)) {
        const line = text.slice(start, m.index);
        start = m.index + m[0].length;
        if (line === '') {
          if (lines.length > 0) out += finishEvent();
          else out += '\n';
          continue;
        }
        lines.push(line);
        held += line.length + 1;
      }
      rest = text.slice(start);
      if (held + rest.length > maxEventLength) return undefined;
      return out;
    },
  };
}

/** Splits an SSE line into field name and value (one leading space of the value is dropped). */
function splitField(line: string): { field: string; value: string } {
  const colon = line.indexOf(':');
  if (colon === -1) return { field: line, value: '' };
  const value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
  return { field: line.slice(0, colon), value };
}
