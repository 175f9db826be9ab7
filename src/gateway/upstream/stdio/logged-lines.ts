/** Longest output line logged, in characters; the rest is cut off. */
export const MAX_LOGGED_LINE = 4096;

/**
 * Logs a stream (a child's stderr) line by line, each cut to {@link MAX_LOGGED_LINE}; a line with no end in
 * sight is logged in pieces, so a child that never writes a newline cannot fill the gateway's memory.
 */
export function readLoggedLines(stream: NodeJS.ReadableStream, write: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl).replace(/\r$/, '');
      partial = partial.slice(nl + 1);
      if (line !== '') write(truncateLoggedLine(line));
    }
    if (partial.length > MAX_LOGGED_LINE) {
      write(truncateLoggedLine(partial));
      partial = '';
    }
  });
  stream.on('end', () => {
    if (partial !== '') write(truncateLoggedLine(partial));
  });
  stream.on('error', () => {});
}

/** `line` cut to {@link MAX_LOGGED_LINE} characters, with `…` when something was cut. */
export function truncateLoggedLine(line: string): string {
  return line.length > MAX_LOGGED_LINE ? `${line.slice(0, MAX_LOGGED_LINE)}…` : line;
}
