/** What {@link createLineSplitter} reports. */
export interface LineSplitterHandlers {
  /** One complete line, without its `\n` (and without a `\r` before it). */
  line(text: string): void;
  /** A line grew past the limit before its `\n` arrived; nothing more is reported after this. */
  oversized(bytes: number): void;
}

/** A push parser of `\n`-terminated lines. */
export interface LineSplitter {
  /** Feeds bytes as they arrive. */
  push(chunk: Buffer): void;
  /** The stream ended: reports a last line that had no `\n`, if any. */
  end(): void;
}

/**
 * Splits a byte stream into lines (stdio MCP: newline-delimited JSON-RPC, each message one line) and holds at
 * most `maxLineBytes` of an unfinished line, so a child that never writes a newline cannot fill the gateway's
 * memory. Lines are decoded as UTF-8 only once complete, so a character split across chunks stays whole.
 *
 * @param maxLineBytes - Largest line, in bytes, not counting the `\n`.
 */
export function createLineSplitter(maxLineBytes: number, handlers: LineSplitterHandlers): LineSplitter {
  let held: Buffer[] = [];
  let heldBytes = 0;
  let failed = false;

  function emit(parts: Buffer[], bytes: number): void {
    let text = (parts.length === 1 ? parts[0]! : Buffer.concat(parts, bytes)).toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    handlers.line(text);
  }

  return {
    push(chunk) {
      let start = 0;
      while (!failed) {
        const nl = chunk.indexOf(0x0a, start);
        const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
        if (heldBytes + piece.length > maxLineBytes) {
          failed = true;
          held = [];
          handlers.oversized(heldBytes + piece.length);
          return;
        }
        if (nl === -1) {
          if (piece.length > 0) {
            // A copy: the chunk's memory may be reused by the stream.
            held.push(Buffer.from(piece));
            heldBytes += piece.length;
          }
          return;
        }
        const parts = held.length === 0 ? [piece] : [...held, piece];
        const bytes = heldBytes + piece.length;
        held = [];
        heldBytes = 0;
        emit(parts, bytes);
        start = nl + 1;
      }
    },
    end() {
      if (failed || heldBytes === 0) return;
      const parts = held;
      const bytes = heldBytes;
      held = [];
      heldBytes = 0;
      emit(parts, bytes);
    },
  };
}
