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
   * The newest profile known, or undefined when there is none yet, or the one stored does not open, is too large or
   * has the wrong shape: the one learnt here last, or one another replica wrote since. Read from the store at
   * start-up, then again at most every `KEPT_VALUE_RECHECK_MS` (in the background once one is known, so that a
   * replica learns what another one wrote). Never rejects.
   */
  read(): Promise<KeptProfile | undefined>;
  /**
   * The upstream answered an `initialize` with `profile`: written to the store when it differs from the one kept
   * (not on every session). Never rejects: a profile that cannot be written serves this process, and its write is
   * tried again later (at most every `KEPT_VALUE_RECHECK_MS`).
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

/**
 * `profile` when it describes the upstream at `revision`, else undefined. Capabilities belong to a revision (`tasks`
 * exists from 2025-11-25 on, `completions` from 2025-03-26 on), and an upstream answers `initialize` with another
 * revision than the one asked for when it does not speak that one: a profile learnt at another revision, or at none
 * it named, is not answered to a client of `revision` as the upstream's own.
 *
 * @example
 * profileAtRevision({ capabilities: { tools: {} }, protocolVersion: '2025-11-25' }, '2025-06-18'); // undefined
 */
export function profileAtRevision<P extends KeptProfile>(profile: P | undefined, revision: string): P | undefined {
  return profile?.protocolVersion === revision ? profile : undefined;
}
