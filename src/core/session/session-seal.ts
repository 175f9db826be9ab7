import { hash, hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';
import type { AuthInfo } from '../kernel/auth-info.js';
import { ConfigurationError } from '../kernel/errors.js';
import { callerKey, callerOrIssuerKey } from '../kernel/caller-key.js';
import type { SessionRefusalReason } from './session-registry.js';
import { checkInteger } from '../kernel/settings.js';
import { createTokenCache, type TokenCache } from '../token/token-cache.js';

/** One key of a session secret, as {@link parseSessionSecret} derives it. */
export interface SessionSealKey {
  /** The JWE `kid`: 8 base64url characters derived from the secret, the same on every replica given it. */
  readonly kid: string;
  /** The 256-bit AES-GCM key (JWE `dir`), derived from the secret with HKDF-SHA256. */
  readonly key: Uint8Array;
}

/** Options of {@link createSessionSealer}. */
export interface SessionSealerOptions {
  /** The keys, from {@link parseSessionSecret}: the first seals, every one opens. At least one. */
  keys: readonly SessionSealKey[];
  /**
   * The canonical resource URI the sessions belong to (RFC 8707 §2): part of the caller binding, so an id sealed
   * by a gateway for another resource does not open here even when both share a secret.
   */
  resource: string;
  /**
   * How long after it was issued a sealed id still opens, in milliseconds (whole seconds count). Every replica
   * applies the same rule, as the id carries its issue time. Default 86 400 000 (24 hours).
   */
  maxAgeMs?: number;
  /**
   * Most opened ids remembered, so that a session's id (the same on every request) is decrypted once per
   * replica rather than on every request; each entry still checks the caller and the age on every use.
   * Default 10 000; 0 remembers none.
   */
  maxCachedSessions?: number;
  /** Clock, in milliseconds since the epoch, e.g. a fake one in tests. Default `Date.now`. */
  now?: () => number;
}

/** What a sealed session id carries, once opened. */
export interface OpenedSession {
  /** The upstream's own session id, or for a stdio upstream the gateway's id of the process's session. */
  readonly upstreamSessionId: string;
  /** The instance that holds the session's process (stdio upstreams), when sealed with one. */
  readonly instance?: string;
  /** When it was issued, in seconds since the epoch. */
  readonly issuedAt: number;
}

/**
 * Why a sealed id was refused, besides the registry's reasons: `session_key_unknown` (sealed with a key this
 * replica does not hold: a rotation not yet rolled out, or a key already retired), `session_expired` (older than
 * the maximum age), `session_other_instance` (a stdio session whose process another replica, or an earlier run
 * of this one, holds). A tampered or malformed id is `session_unknown`. All are answered alike.
 */
export type SealedSessionRefusalReason = SessionRefusalReason | 'session_key_unknown' | 'session_expired' | 'session_other_instance';

/** Seals and opens the gateway's session ids; see {@link createSessionSealer}. */
export interface SessionSealer {
  /**
   * Seals `upstreamSessionId` for the caller of `auth` (and, for a stdio upstream, the `instance` holding its
   * process). A token naming no caller (neither subject nor client id) gets an id sealed for its issuer, so the
   * upstream's id never reaches a client; such an id never opens (`session_no_identity`), as when unsealed.
   */
  seal(upstreamSessionId: string, auth: AuthInfo, instance?: string): Promise<string>;
  /**
   * Opens a sealed id presented by the caller of `auth`: what it carries, or why it is refused. With `instance`
   * (a stdio upstream's), an id sealed for another instance, or for none, is refused. Never rejects.
   */
  open(sealed: string, auth: AuthInfo, instance?: string): Promise<{ session: OpenedSession } | { refused: SealedSessionRefusalReason }>;
}

/** Default {@link SessionSealerOptions.maxAgeMs}: 24 hours. */
export const DEFAULT_SESSION_MAX_AGE_MS = 86_400_000;
/** Default {@link SessionSealerOptions.maxCachedSessions}. */
export const DEFAULT_MAX_CACHED_SESSIONS = 10_000;
/** Least number of bytes a session secret must decode to. */
export const MIN_SESSION_SECRET_BYTES = 32;
/** Ids longer than this are refused unread: a sealed id the gateway issued is a few hundred characters. */
const MAX_SEALED_ID_LENGTH = 4096;
/** Issue times this far in the future are accepted, in seconds: the replicas' clocks may differ a little. */
const CLOCK_TOLERANCE_SECONDS = 60;
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

/** What the sealed id's claims hold: short names, as the id travels on every request. */
interface SealedClaims extends JWTPayload {
  /** The upstream's session id (JWT `sid`, as OpenID Connect names a session). */
  sid: string;
  /** The caller binding: 128 bits of SHA-256 over the resource and the caller (issuer, subject, client). */
  own: string;
  /** The instance holding a stdio session's process. */
  ins?: string;
}

interface CachedSession {
  readonly session: OpenedSession;
  readonly own: string;
  /** When the id stops opening, in seconds since the epoch (for the cache). */
  readonly expiresAt: number;
}

class UnknownKeyError extends Error {}

/**
 * Creates the sealer of the gateway's `Mcp-Session-Id`s, so that any replica given the same secret can serve a
 * session: the id is a compact JWE (RFC 7516) with `alg: dir` and `enc: A256GCM` (encrypted and authenticated),
 * whose `kid` picks the key that opens it, carrying the upstream's session id, the caller binding and the issue
 * time (a JWT, RFC 7519 `iat`). With a UUID upstream session id it is about 230 characters.
 *
 * An id opens only with one of the keys, unaltered, within `maxAgeMs` of its issue, and for the caller it was
 * sealed for (issuer, subject and client, as `callerKey` defines them, and the same resource). Anything else is
 * refused with a reason for logs; the gateway answers every refusal alike (404 `Session not found`).
 *
 * @example
 * const sealer = createSessionSealer({ keys: parseSessionSecret(secret, 'MCP_AUTH_SESSION_SECRET'), resource: 'https://mcp.example.com/mcp' });
 * const id = await sealer.seal(upstreamSessionId, auth);
 * const opened = await sealer.open(id!, auth); // { session: { upstreamSessionId, issuedAt } }
 *
 * @throws ConfigurationError when there is no key, a key is not 32 bytes, or an option is out of range.
 */
export function createSessionSealer(options: SessionSealerOptions): SessionSealer {
  const keys = options.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw new ConfigurationError('keys', 'needs at least one key (see parseSessionSecret)');
  for (const k of keys) if (!(k.key instanceof Uint8Array) || k.key.length !== 32) throw new ConfigurationError('keys', 'each key must be 32 bytes (see parseSessionSecret)');
  const maxAgeSeconds = Math.max(1, Math.floor(checkInteger(options.maxAgeMs, 'maxAgeMs', DEFAULT_SESSION_MAX_AGE_MS, { min: 1000 }) / 1000));
  const maxCached = checkInteger(options.maxCachedSessions, 'maxCachedSessions', DEFAULT_MAX_CACHED_SESSIONS, { min: 0, max: 10_000_000 });
  const resource = options.resource;
  const now = options.now ?? Date.now;
  // Imported once each: jose would import a raw key again for every operation.
  const cryptoKeys = new Map(keys.map((k) => [k.kid, crypto.subtle.importKey('raw', k.key, 'AES-GCM', false, ['encrypt', 'decrypt'])]));
  const sealing = keys[0]!;
  const cache: TokenCache<CachedSession> | undefined =
    maxCached > 0 ? createTokenCache<CachedSession>({ maxEntries: maxCached, maxTtlSeconds: maxAgeSeconds, now }) : undefined;

  /** The caller binding: the resource and the caller, or the issuer alone for a token naming nobody. */
  function ownerOf(auth: AuthInfo): string {
    return hash('sha256', JSON.stringify([resource, callerOrIssuerKey(auth)]), 'base64url').slice(0, 22);
  }

  /**
   * The one check of a sealed id's age and owner, decrypted or cached: at most `maxAgeMs` old, and issued at
   * most 60 s ahead of this clock (replicas' clocks differ a little; further ahead, it was not sealed honestly).
   */
  function check(entry: CachedSession, own: string, instance: string | undefined): { session: OpenedSession } | { refused: SealedSessionRefusalReason } {
    const age = now() / 1000 - entry.session.issuedAt;
    if (age > maxAgeSeconds) return { refused: 'session_expired' };
    if (age < -CLOCK_TOLERANCE_SECONDS) return { refused: 'session_unknown' };
    if (entry.own !== own) return { refused: 'session_owner_mismatch' };
    return entry.session.instance === instance ? { session: entry.session } : { refused: 'session_other_instance' };
  }

  return {
    async seal(upstreamSessionId, auth, instance) {
      const own = ownerOf(auth);
      const claims: SealedClaims = { sid: upstreamSessionId, own, ...(instance !== undefined ? { ins: instance } : {}) };
      return new EncryptJWT(claims)
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: sealing.kid })
        .setIssuedAt(Math.floor(now() / 1000))
        .encrypt(await cryptoKeys.get(sealing.kid)!);
    },
    async open(sealed, auth, instance) {
      // A session of nobody would be shared by every such token: never used, as when unsealed.
      if (callerKey(auth) === undefined) return { refused: 'session_no_identity' };
      const own = ownerOf(auth);
      if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_ID_LENGTH) return { refused: 'session_unknown' };
      const cached = cache?.get(sealed);
      if (cached) return check(cached, own, instance);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtDecrypt(
          sealed,
          (header) => {
            const key = typeof header.kid === 'string' ? cryptoKeys.get(header.kid) : undefined;
            if (key === undefined) throw new UnknownKeyError();
            return key;
          },
          {
            keyManagementAlgorithms: ['dir'],
            contentEncryptionAlgorithms: ['A256GCM'],
            // The age is checked by check() alone, as for a cached id: one rule, one tolerance.
            requiredClaims: ['iat'],
            currentDate: new Date(now()),
          },
        ));
      } catch (error) {
        if (error instanceof UnknownKeyError) return { refused: 'session_key_unknown' };
        return { refused: 'session_unknown' };
      }
      const { sid, own: sealedOwner, ins, iat } = payload as Partial<SealedClaims>;
      if (typeof sid !== 'string' || sid === '' || typeof sealedOwner !== 'string' || (ins !== undefined && typeof ins !== 'string') || typeof iat !== 'number') {
        return { refused: 'session_unknown' };
      }
      const entry: CachedSession = {
        session: { upstreamSessionId: sid, issuedAt: iat, ...(ins !== undefined ? { instance: ins } : {}) },
        own: sealedOwner,
        expiresAt: iat + maxAgeSeconds,
      };
      // Keyed by the id itself: it is bound to its caller, so holding it grants nothing without their token.
      cache?.set(sealed, entry, { bytes: 2 * sealed.length + 2 * sid.length + 200 });
      return check(entry, own, instance);
    },
  };
}
