/**
 * Seals the records of connected accounts before they reach a store, so that no store (a directory, Redis) ever
 * holds a token, a subject or a verifier in plain text: each value is a compact JWE (RFC 7516) encrypted and
 * authenticated with AES-256-GCM under a key derived from the token store secret.
 */
import { createHash, hkdfSync } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
import type { SessionSealKey } from '../../../core/session/session-seal.js';

/** Seals values for a store and opens them again; see {@link createRecordSealer}. */
export interface RecordSealer {
  /**
   * Seals `value` (JSON) for the store key `key`, to open until `ttlMs` milliseconds from now when given.
   *
   * @throws RangeError for a `ttlMs` that is not a positive finite number.
   */
  seal(key: string, value: object, ttlMs?: number): Promise<string>;
  /**
   * The value sealed under `key`, or undefined when `sealed` does not open: another key or secret, altered,
   * expired, sealed for another store key, or longer than {@link MAX_SEALED_RECORD_LENGTH}. Never rejects. The
   * value is not checked against `T`: the caller checks its shape.
   */
  open<T>(key: string, sealed: string): Promise<T | undefined>;
}

/** Options of {@link createRecordSealer}. */
export interface RecordSealerOptions {
  /** Clock, in milliseconds since the epoch, e.g. a fake one in tests. Default `Date.now`. */
  now?: () => number;
}

/** Longest sealed text {@link RecordSealer.open} reads, in characters (64 KiB): a record is a few hundred. */
export const MAX_SEALED_RECORD_LENGTH = 64 * 1024;
/**
 * HKDF `info` of the token store's keys. The secret is parsed as the session secret is, whose keys HKDF derived
 * with an info of their own; deriving again with this one keeps the two uses apart, so a token store secret equal
 * to the session secret still seals with another key.
 */
const KEY_INFO = 'mcp-oauth-guard token store';

/** One key as the sealer uses it. */
interface StoreKey {
  readonly kid: string;
  readonly key: Promise<CryptoKey>;
}

/**
 * The protected header of a sealed record. `sk` binds the record to its store key (the header is authenticated),
 * as a digest: a store key may hold a one-time value (an OAuth `state`) that the sealed text need not repeat.
 */
interface RecordHeader {
  [parameter: string]: unknown;
  alg: 'dir';
  enc: 'A256GCM';
  kid: string;
  sk: string;
  /** Expiry, in seconds since the epoch. */
  exp?: number;
}

/**
 * Creates the sealer of the token store. `keys` come from the token store secret (`MCP_AUTH_TOKEN_STORE_SECRET`)
 * parsed by `parseSessionSecret`, with rotation as for sealed sessions: the first key seals, every key opens.
 * Each yields a 256-bit AES-GCM key by HKDF-SHA256 and a `kid`, 8 base64url characters of its SHA-256.
 *
 * @example
 * const sealer = createRecordSealer(parseSessionSecret(secret, 'MCP_AUTH_TOKEN_STORE_SECRET'));
 * const sealed = await sealer.seal('ticket:abc', { server: 'notes' }, 600_000);
 * await sealer.open<{ server: string }>('ticket:abc', sealed); // { server: 'notes' }
 * await sealer.open('ticket:xyz', sealed); // undefined: sealed for another store key
 *
 * @throws RangeError when `keys` is empty or a key is not 32 bytes.
 */
export function createRecordSealer(keys: readonly SessionSealKey[], options: RecordSealerOptions = {}): RecordSealer {
  if (keys.length === 0) throw new RangeError('the token store needs at least one key');
  const now = options.now ?? Date.now;
  const derived = keys.map(deriveStoreKey);
  const byKid = new Map(derived.map((k) => [k.kid, k.key]));
  const sealing = derived[0]!;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder('utf-8', { fatal: true });
  return {
    async seal(key, value, ttlMs) {
      const header: RecordHeader = { alg: 'dir', enc: 'A256GCM', kid: sealing.kid, sk: storeKeyDigest(key) };
      if (ttlMs !== undefined) {
        if (!(ttlMs > 0 && Number.isFinite(ttlMs))) throw new RangeError('ttlMs must be a positive number of milliseconds');
        header.exp = Math.ceil((now() + ttlMs) / 1000);
      }
      return new CompactEncrypt(encoder.encode(JSON.stringify(value))).setProtectedHeader(header).encrypt(await sealing.key);
    },
    async open<T>(key: string, sealed: string): Promise<T | undefined> {
      if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_RECORD_LENGTH) return undefined;
      try {
        const { plaintext, protectedHeader } = await compactDecrypt(
          sealed,
          (header) => {
            const found = typeof header.kid === 'string' ? byKid.get(header.kid) : undefined;
            if (found === undefined) throw new Error('unknown key');
            return found;
          },
          { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] },
        );
        if (protectedHeader.sk !== storeKeyDigest(key)) return undefined;
        const exp = protectedHeader.exp;
        if (exp !== undefined && !(typeof exp === 'number' && now() < exp * 1000)) return undefined;
        const value: unknown = JSON.parse(decoder.decode(plaintext));
        return typeof value === 'object' && value !== null ? (value as T) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * When a sealed record stops opening, in milliseconds since the epoch, read from its header without opening it;
 * undefined when it was sealed without a TTL or is not a sealed record. For caches, which must not keep an
 * opened record past it.
 */
export function sealedRecordExpiry(sealed: string): number | undefined {
  if (sealed.length > MAX_SEALED_RECORD_LENGTH) return undefined;
  try {
    const exp = decodeProtectedHeader(sealed).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function deriveStoreKey(secret: SessionSealKey): StoreKey {
  if (!(secret.key instanceof Uint8Array) || secret.key.length !== 32) throw new RangeError('each token store key must be 32 bytes (see parseSessionSecret)');
  const raw = new Uint8Array(hkdfSync('sha256', secret.key, new Uint8Array(0), KEY_INFO, 32));
  const kid = createHash('sha256').update(raw).digest().subarray(0, 6).toString('base64url');
  // Imported once: jose would import a raw key again for every operation.
  return { kid, key: crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']) };
}

/** 128 bits of SHA-256 of the store key, base64url. */
function storeKeyDigest(key: string): string {
  return createHash('sha256').update(key).digest().subarray(0, 16).toString('base64url');
}
