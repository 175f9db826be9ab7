/**
 * The digest of a tool's definition, which a pin records: what an MCP client shows the model about a tool (its
 * name, title, description, input and output schemas, annotations), in a canonical JSON form, hashed with SHA-256.
 * Framework-free: the gateway, its commands and `check` all digest through here.
 */
import { createHash } from 'node:crypto';

/** The fields of a tool's definition that are digested, in this order (MCP 2025-11-25 `Tool`). */
export const PINNED_FIELDS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

/** One digested field of a tool's definition. */
export type PinnedField = (typeof PINNED_FIELDS)[number];

/** A tool definition's digest, whole and per field. */
export interface ToolDigest {
  /** `sha256:` and the hex SHA-256 of the canonical JSON of the digested fields. */
  readonly digest: string;
  /** Each present field's own digest (same form), to tell which fields changed without keeping their text. */
  readonly fields: Readonly<Partial<Record<PinnedField, string>>>;
  /** The digested fields themselves (a shallow copy of the tool's). */
  readonly definition: Readonly<Partial<Record<PinnedField, unknown>>>;
}

/** Deepest nesting a canonical form is made of: tool schemas are shallow; a deeper value is refused, not walked. */
const MAX_DEPTH = 64;

/**
 * The canonical JSON text of a JSON value, in the manner of RFC 8785 (JCS): object members sorted by their names'
 * UTF-16 code units (§3.2.3), no whitespace, strings and numbers as ECMAScript serializes them (§3.2.2), members
 * whose value is `undefined` left out. Two values that are equal as JSON give the same text, whatever order their
 * keys came in.
 *
 * @throws TypeError for a value JSON cannot hold (a non-finite number, a function) or nested deeper than 64.
 * @example
 * canonicalJson({ b: 1, a: [true, null, 'x'] }); // '{"a":[true,null,"x"],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return canonical(value, 0);
}

function canonical(value: unknown, depth: number): string {
  if (depth > MAX_DEPTH) throw new TypeError(`nested deeper than ${MAX_DEPTH}`);
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('a number that is not finite');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item, depth + 1)).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    // Array.prototype.sort compares UTF-16 code units, which is JCS's order.
    const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(record[key], depth + 1)}`).join(',')}}`;
  }
  throw new TypeError(`a value JSON cannot hold (${typeof value})`);
}

/** `sha256:` and the hex SHA-256 of `text` as UTF-8. */
export function sha256Digest(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/** Hex digits of a digest's short form: enough to tell a reviewed definition from another, short enough to type. */
const SHORT_DIGEST_HEX = 16;

/**
 * The short form of a digest, as logs, `check` and `pins accept --digest` show it: `sha256:` and its first 16 hex
 * digits.
 *
 * @example
 * shortDigest('sha256:0123456789abcdef0123…'); // 'sha256:0123456789abcdef'
 */
export function shortDigest(digest: string): string {
  return digest.slice(0, 'sha256:'.length + SHORT_DIGEST_HEX);
}

/**
 * Whether `given` (a digest whole or in its {@link shortDigest} form) names `digest`.
 *
 * @example
 * digestMatches(digest, shortDigest(digest)); // true
 */
export function digestMatches(digest: string, given: string): boolean {
  const value = given.trim().toLowerCase();
  return value === digest || (value.length === shortDigest(digest).length && value === shortDigest(digest));
}

/**
 * Digests a tool as listed (`tools/list`): only the {@link PINNED_FIELDS} count, so a field MCP adds later (or
 * `_meta`, which servers vary per answer) neither breaks nor changes a pin.
 *
 * @throws TypeError when the tool holds a value JSON cannot (never for a parsed JSON answer within depth 64).
 * @example
 * const { digest, fields } = digestTool({ name: 'add', description: 'Adds a note.', inputSchema: { type: 'object' } });
 * // digest: 'sha256:…'; fields.description: 'sha256:…'
 */
export function digestTool(tool: Readonly<Record<string, unknown>>): ToolDigest {
  const definition: Partial<Record<PinnedField, unknown>> = {};
  const fields: Partial<Record<PinnedField, string>> = {};
  for (const field of PINNED_FIELDS) {
    const value = tool[field];
    if (value === undefined) continue;
    definition[field] = value;
    fields[field] = sha256Digest(canonicalJson(value));
  }
  return { digest: sha256Digest(canonicalJson(definition)), fields, definition };
}
