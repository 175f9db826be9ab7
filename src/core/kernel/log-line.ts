/**
 * The log lines of the gateway and the middleware: one JSON object per line, `{ time, event, …fields }`, written to
 * a sink. Every line either writes (start-up, summaries, warnings, policy coverage and reloads, the shared store,
 * refused connections) is formatted here, so that each has the same shape and log alerts can match `event` and
 * `message`. Never a token in a field.
 */

/** Receives each log line (JSON, without its newline). */
export type LineSink = (line: string) => void;

/** The default warning sink: stderr, one line each. */
export const writeWarningToStderr: LineSink = (line) => void process.stderr.write(`${line}\n`);

/** Writes one log line; a sink that throws is ignored, since logging must never break serving. */
export function writeSafely(write: LineSink, line: string): void {
  try {
    write(line);
  } catch {
    // Logging must never break serving.
  }
}

/**
 * One log line: `{"time":…,"event":…}` followed by `fields`, in their order.
 *
 * @example
 * formatLogLine('started', { resource: 'https://mcp.example.com/mcp' });
 * // {"time":"…","event":"started","resource":"https://mcp.example.com/mcp"}
 */
export function formatLogLine(event: string, fields: Readonly<Record<string, unknown>> = {}, at: Date = new Date()): string {
  return JSON.stringify({ time: at.toISOString(), event, ...fields });
}

/**
 * One warning as its JSON line. `message` is a fixed sentence (alerts match it); what varies goes in `fields`.
 *
 * @example
 * formatWarning('the policy file is no longer watched; reload it with SIGHUP', { detail: 'ENOENT' });
 * // {"time":"…","event":"warning","message":"the policy file is no longer watched; reload it with SIGHUP","detail":"ENOENT"}
 */
export function formatWarning(message: string, fields: Readonly<Record<string, unknown>> = {}, at: Date = new Date()): string {
  return formatLogLine('warning', { message, ...fields }, at);
}

/** Formats one warning ({@link formatWarning}) and writes it to `sink` ({@link writeSafely}). */
export function emitWarning(sink: LineSink, message: string, fields?: Readonly<Record<string, unknown>>, at?: Date): void {
  writeSafely(sink, formatWarning(message, fields, at));
}

/**
 * `,"name":value` as `JSON.stringify` writes a property, or nothing for a value it leaves out: for lines written
 * field by field in a fixed order, with no object made for them (the request log, the audit trail).
 *
 * @example
 * `{"time":"…"${jsonField('status', 200)}}`; // '{"time":"…","status":200}'
 */
export function jsonField(name: string, value: unknown): string {
  const json = JSON.stringify(value);
  return json === undefined ? '' : `,"${name}":${json}`;
}
