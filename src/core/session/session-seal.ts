import { hash } from 'node:crypto';
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';
import type { AuthInfo } from '../kernel/auth-info.js';
import { ConfigurationError } from '../kernel/errors.js';
import { callerKey, callerOrIssuerKey } from '../kernel/caller-key.js';
import type { SessionRefusalReason } from './session-registry.js';
import { checkInteger } from '../kernel/settings.js';
import { createTokenCache, type TokenCache } from '../token/token-cache.js';
import { DEFAULT_MAX_CACHED_SESSIONS, DEFAULT_SESSION_MAX_AGE_MS, type SessionSealKey } from './session-seal-keys.js';

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

// The keys' reading and the default age live apart (session-seal-keys.ts), so that a configuration can be checked
// without loading jose; named here as before.
export { DEFAULT_MAX_CACHED_SESSIONS, DEFAULT_SESSION_MAX_AGE_MS, MIN_SESSION_SECRET_BYTES, parseSessionSecret, type SessionSealKey } from './session-seal-keys.js';
/** Ids longer than this are refused unread: a sealed id the gateway issued is a few hundred characters. */
const MAX_SEALED_ID_LENGTH = 4096;
/** Issue times this far in the future are accepted, in seconds: the replicas' clocks may differ a little. */
const CLOCK_TOLERANCE_SECONDS = 60;
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
