/** Media types the MCP transports speak. */
export const JSON_MEDIA_TYPE = 'application/json';
export const EVENT_STREAM_MEDIA_TYPE = 'text/event-stream';

/**
 * The media type of a `Content-Type` value, lower-cased, without parameters (RFC 9110 §8.3.1); for a
 * repeated header, the first value. `undefined` when there is none.
 *
 * @example
 * mediaType('Application/JSON; charset=utf-8'); // 'application/json'
 */
export function mediaType(value: unknown): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' && typeof text !== 'number') return undefined;
  const s = String(text);
  const semi = s.indexOf(';');
  return (semi === -1 ? s : s.slice(0, semi)).trim().toLowerCase();
}
