/** Media types the MCP transports speak. */
export const JSON_MEDIA_TYPE = 'application/json';
export const EVENT_STREAM_MEDIA_TYPE = 'text/event-stream';
/** The `Content-Type` of the gateway's few plain-text answers (the metrics listener's refusals), UTF-8. */
export const PLAIN_TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';
/** The `Content-Type` of the gateway's browser pages (connected accounts), UTF-8. */
export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';
/** The media type of an HTML form's body (the pages' POST forms). */
export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';
/**
 * The `Accept` of a POST to an MCP endpoint: both, as Streamable HTTP asks of every client (the server answers with
 * either).
 */
export const MCP_POST_ACCEPT = `${JSON_MEDIA_TYPE}, ${EVENT_STREAM_MEDIA_TYPE}`;

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

/**
 * Whether an `Accept` header admits `type` (lower-case `type/subtype`), by RFC 9110 §12.5.1: the most specific
 * range that matches it (`type/subtype`, then `type/*`, then `*\/*`) decides, and a weight `q=0` means "not
 * acceptable". No header admits nothing here: MCP clients must send one (`application/json, text/event-stream`).
 *
 * @example
 * acceptsMediaType('application/json, text/event-stream', 'text/event-stream'); // true
 * acceptsMediaType('text/event-stream;q=0, *\/*', 'text/event-stream'); // false
 */
export function acceptsMediaType(accept: unknown, type: string): boolean {
  const text = Array.isArray(accept) ? accept.join(',') : accept;
  if (typeof text !== 'string') return false;
  const wildcard = `${type.slice(0, type.indexOf('/'))}/*`;
  let specificity = -1;
  let weight = 0;
  for (const part of text.split(',')) {
    const [range = '', ...parameters] = part.split(';');
    const name = range.trim().toLowerCase();
    const rank = name === type ? 2 : name === wildcard ? 1 : name === '*/*' ? 0 : -1;
    if (rank < 0 || rank < specificity) continue;
    let q = 1;
    for (const parameter of parameters) {
      const eq = parameter.indexOf('=');
      if (eq !== -1 && parameter.slice(0, eq).trim().toLowerCase() === 'q') {
        const value = Number(parameter.slice(eq + 1).trim());
        q = Number.isFinite(value) ? value : 0;
      }
    }
    // Among equally specific ranges the most generous weight wins.
    weight = rank > specificity ? q : Math.max(weight, q);
    specificity = rank;
  }
  return specificity >= 0 && weight > 0;
}
