/**
 * What an upstream in connected mode said of itself, kept where its connections are kept (the token store), so
 * that a gateway that restarted, or another replica, answers a user who has not connected yet with the upstream's
 * own capabilities from its first request, as the gateway that learnt them does. The exchange knows only this
 * interface; `src/gateway/connected/kept-upstream-profile.ts` keeps it.
 */

/**
 * The part of an upstream's `initialize` answer that is kept: its capabilities and the revision it answered with.
 * Never its `instructions`, nor its `serverInfo`: they answered one user's session, and may speak of that user.
 */
export interface KeptProfile {
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly protocolVersion?: string;
}

/** The kept profile of one upstream in connected mode. */
export interface KeptProfiles {
  /**
   * The profile kept, or undefined when there is none yet, or the one stored does not open, is too large or has
   * the wrong shape. Read from the store at start-up; while none is known it is read again at most every
   * `KEPT_PROFILE_RECHECK_MS`, so that a replica learns what another one wrote. Never rejects.
   */
  read(): Promise<KeptProfile | undefined>;
  /**
   * The upstream answered an `initialize` with `profile`: written to the store when it differs from the one kept
   * (not on every session). Never rejects: a profile that cannot be written is kept in memory only.
   */
  learnt(profile: KeptProfile): Promise<void>;
}

/**
 * The capabilities and revision of an `initialize` or `server/discover` result, the one reading of that shape;
 * undefined when the result is not an object or its capabilities are not one (a revision that is not a string is
 * left out).
 *
 * @example
 * profileOfResult({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, instructions: '…' });
 * // { capabilities: { tools: {} }, protocolVersion: '2025-11-25' }
 */
export function profileOfResult(result: unknown): KeptProfile | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const { capabilities, protocolVersion } = result as Record<string, unknown>;
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) return undefined;
  return { capabilities: capabilities as Record<string, unknown>, ...(typeof protocolVersion === 'string' ? { protocolVersion } : {}) };
}
