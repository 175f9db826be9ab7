/**
 * Session secrets (`MCP_AUTH_SESSION_SECRET`): their reading into the keys that seal the gateway's session ids, and
 * the sealer's defaults. Apart from the sealer (`session-seal.ts`, which loads jose), so that a configuration can be
 * read and checked without it.
 */
import { hkdfSync } from 'node:crypto';
import { ConfigurationError } from '../kernel/errors.js';

/** One key of a session secret, as {@link parseSessionSecret} derives it. */
export interface SessionSealKey {
  /** The JWE `kid`: 8 base64url characters derived from the secret, the same on every replica given it. */
  readonly kid: string;
  /** The 256-bit AES-GCM key (JWE `dir`), derived from the secret with HKDF-SHA256. */
  readonly key: Uint8Array;
}

/** Default `SessionSealerOptions.maxAgeMs`: 24 hours. */
export const DEFAULT_SESSION_MAX_AGE_MS = 86_400_000;
/** Default `SessionSealerOptions.maxCachedSessions`. */
export const DEFAULT_MAX_CACHED_SESSIONS = 10_000;
/** Least number of bytes a session secret must decode to. */
export const MIN_SESSION_SECRET_BYTES = 32;
/** Fewer distinct byte values than this in a secret means it was typed or patterned, not drawn at random. */
const MIN_DISTINCT_SECRET_BYTES = 16;
/** HKDF `info` strings: the key and its id are derived apart, and apart from any other use of the secret. */
const KEY_INFO = 'mcp-oauth-guard session id A256GCM';
const KID_INFO = 'mcp-oauth-guard session id kid';
const HOW_TO_MAKE_ONE = 'make one with: openssl rand -base64 32';

/**
 * Reads a session secret (`MCP_AUTH_SESSION_SECRET`): one key, or a comma-separated list in which the first
 * seals new ids and every one opens (rotation: put the new key first, and drop the old one once every id it
 * sealed has expired). Each key is at least 32 random bytes, written as hex or base64url (standard base64 with
 * `+`, `/` and `=` is accepted too, as `openssl rand -base64 32` prints it). Keys are stretched with HKDF-SHA256
 * into the AES-256-GCM key and its `kid`, so every replica given the same secret derives the same keys.
 *
 * @example
 * parseSessionSecret(process.env.MCP_AUTH_SESSION_SECRET!, 'MCP_AUTH_SESSION_SECRET');
 *
 * @throws ConfigurationError naming `setting` (and the position of the key at fault, never its value) for an
 *   empty list, a key that is not hex or base64url, shorter than 32 bytes, visibly not random, or repeated.
 */
export function parseSessionSecret(value: string, setting: string): SessionSealKey[] {
  const parts = value.split(',').map((part) => part.trim());
  const keys: SessionSealKey[] = [];
  const seen = new Set<string>();
  parts.forEach((part, index) => {
    const which = parts.length > 1 ? `key ${index + 1} of ${parts.length}` : 'the key';
    if (part === '') throw new ConfigurationError(setting, `${which} is empty; give one or more keys separated by commas (${HOW_TO_MAKE_ONE})`);
    const bytes = decodeSecret(part);
    if (bytes === undefined) throw new ConfigurationError(setting, `${which} is neither hex nor base64 (standard or URL-safe); ${HOW_TO_MAKE_ONE}`);
    if (bytes.length < MIN_SESSION_SECRET_BYTES) {
      throw new ConfigurationError(setting, `${which} has ${bytes.length} bytes; it needs at least ${MIN_SESSION_SECRET_BYTES} random bytes (${HOW_TO_MAKE_ONE})`);
    }
    if (new Set(bytes).size < MIN_DISTINCT_SECRET_BYTES) {
      throw new ConfigurationError(setting, `${which} does not look random (too few distinct bytes); ${HOW_TO_MAKE_ONE}`);
    }
    const key = new Uint8Array(hkdfSync('sha256', bytes, new Uint8Array(0), KEY_INFO, 32));
    const kid = Buffer.from(hkdfSync('sha256', bytes, new Uint8Array(0), KID_INFO, 6)).toString('base64url');
    if (seen.has(kid)) throw new ConfigurationError(setting, `${which} repeats an earlier key; list each key once`);
    seen.add(kid);
    keys.push({ kid, key });
  });
  return keys;
}

/** Hex (an even number of hex digits) or base64url / base64; undefined when it is neither. */
function decodeSecret(text: string): Buffer | undefined {
  if (/^(?:[0-9a-fA-F]{2})+$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9_-]+$/.test(text) || /^[A-Za-z0-9+/]+={0,2}$/.test(text)) {
    const bytes = Buffer.from(text, text.includes('+') || text.includes('/') || text.endsWith('=') ? 'base64' : 'base64url');
    // Node ignores trailing bits that do not make a byte; a length that cannot be base64 at all is refused.
    return text.replace(/=+$/, '').length % 4 === 1 ? undefined : bytes;
  }
  return undefined;
}
