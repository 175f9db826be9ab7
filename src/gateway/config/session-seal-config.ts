import { ConfigurationError } from '../../core/kernel/errors.js';
import { DEFAULT_SESSION_MAX_AGE_MS, type SessionSealKey } from '../../core/session/session-seal-keys.js';
import { parseIntegerSetting, readSetting } from '../../core/kernel/settings.js';
import type { GatewaySetting } from './gateway-setting.js';
import { readSealKeys } from './seal-keys-setting.js';

/** Sealed session ids (`MCP_AUTH_SESSION_SECRET`): any replica given the same secret serves any session. */
export interface SessionSealConfig {
  /** The keys: the first seals, every one opens. Never logged. */
  keys: SessionSealKey[];
  /** How long after it was issued a sealed id still opens, in milliseconds. */
  maxAgeMs: number;
}

/** The sealed-session settings, listed by `--help` with the gateway's others. */
export const SESSION_SEAL_SETTINGS = Object.freeze([
  {
    env: 'MCP_AUTH_SESSION_SECRET',
    group: 'sessions',
    value: '<key[,older key…]>',
    description:
      'Seal the session ids the gateway gives clients (encrypted, bound to the caller), so that any replica with the same secret serves any session and a restart keeps them: at least 32 random bytes, in hex or base64 (standard or URL-safe), e.g. from openssl rand -base64 32. A comma-separated list rotates keys: the first seals new ids, every one opens. Environment only.',
    defaultValue: 'off: sessions live in the process that started them (route each session to one replica)',
  },
  { env: 'MCP_AUTH_SESSION_SECRET_FILE', group: 'sessions', flag: '--session-secret-file', value: '<file>', description: 'A file holding that secret instead (keys separated by commas or lines), read at start-up.', defaultValue: 'off' },
  {
    env: 'MCP_AUTH_SESSION_MAX_AGE_MS',
    group: 'sessions',
    flag: '--session-max-age-ms',
    value: '<ms>',
    description: 'With a session secret: a sealed session id stops opening this long after it was issued, on every replica alike; requests naming it get 404 and the client starts a new session.',
    defaultValue: String(DEFAULT_SESSION_MAX_AGE_MS),
  },
] satisfies GatewaySetting[]);

/**
 * Settings of the HTTP upstream's session registry: per-process state, which sealed sessions do not have (no
 * replica holds them), so they would do nothing with a session secret.
 */
const REGISTRY_SETTINGS = ['MCP_AUTH_MAX_SESSIONS', 'MCP_AUTH_MAX_SESSIONS_PER_CALLER', 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS'];

/**
 * Reads `MCP_AUTH_SESSION_SECRET` (or `MCP_AUTH_SESSION_SECRET_FILE`) and `MCP_AUTH_SESSION_MAX_AGE_MS`.
 *
 * @param httpUpstream - Whether the upstream is an HTTP one, whose session-registry settings then do nothing,
 *   except in connected mode: the sessions the gateway opens before a user has connected are held in the memory of
 *   the process that opened them, in a registry with those bounds.
 * @returns undefined when no secret is set: session ids are the upstream's (or the stdio upstream's own), as held
 *   by the process that issued them.
 * @throws ConfigurationError naming the setting: both a secret and a file, a secret that is not enough random
 *   bytes (saying how to make one), a maximum age out of range or without a secret, or a session-registry
 *   setting with a secret and an HTTP upstream.
 */
export function loadSessionSealConfig(settings: Readonly<Record<string, string | undefined>>, httpUpstream: boolean): SessionSealConfig | undefined {
  const maxAgeMs = parseIntegerSetting(readSetting(settings, 'MCP_AUTH_SESSION_MAX_AGE_MS'), 'MCP_AUTH_SESSION_MAX_AGE_MS', 1_000, 31_536_000_000);
  const keys = readSealKeys(settings, 'MCP_AUTH_SESSION_SECRET', 'MCP_AUTH_SESSION_SECRET_FILE');
  if (keys === undefined) {
    if (maxAgeMs !== undefined) throw new ConfigurationError('MCP_AUTH_SESSION_MAX_AGE_MS', 'has no effect without MCP_AUTH_SESSION_SECRET (sealed session ids): set it too, or unset MCP_AUTH_SESSION_MAX_AGE_MS');
    return undefined;
  }
  if (httpUpstream && readSetting(settings, 'MCP_AUTH_UPSTREAM_AUTH') !== 'connected') {
    for (const name of REGISTRY_SETTINGS) {
      if (readSetting(settings, name) !== undefined) {
        throw new ConfigurationError(
          name,
          'has no effect with a session secret: sealed sessions are held by no replica (the upstream bounds its own sessions, MCP_AUTH_SESSION_MAX_AGE_MS bounds their age, MCP_AUTH_RATE_LIMIT how fast a caller opens them); unset it',
        );
      }
    }
  }
  return { keys, maxAgeMs: maxAgeMs ?? DEFAULT_SESSION_MAX_AGE_MS };
}
