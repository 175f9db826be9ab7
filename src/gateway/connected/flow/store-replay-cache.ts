/**
 * The used nonces of the gateway's request states kept in the token store, so that a fleet sharing one store
 * (Redis) refuses a state replayed on another replica: a memory cache makes a state one-time per replica only.
 */
import { ReplayShareExceededError, type ReplayCache } from '../../../core/limits/replay-cache.js';
import type { Sealer } from '../oauth/sealer.js';
import { TokenStoreShareExceededError, type TokenStore } from '../store/token-store.js';

/** Prefix of the store keys of used request-state nonces. */
export const REQUEST_STATE_NONCE_PREFIX = 'rsn:';

/** Longest nonce claimed, in characters (the gateway's are 22): anything longer is refused unwritten. */
const MAX_NONCE_CHARS = 64;

/**
 * A {@link ReplayCache} over `store`: a claim is an insert-if-absent (`compareAndSet` from nothing) of a sealed
 * empty record that expires with the state, so of two replicas claiming one nonce at once one wins. A store that
 * cannot be reached rejects, and the state is then refused (never accepted). The claim counts against the
 * `caller`'s share of the store's ephemeral entries (its digest is the user's `userKey`): a caller holding its share
 * gets a {@link ReplayShareExceededError} (429 with `Retry-After`), and the other callers are served.
 *
 * @example
 * createRequestStates({ secrets, replayCache: createStoreReplayCache(store, sealer) });
 */
export function createStoreReplayCache(store: TokenStore, sealer: Sealer, now: () => number = Date.now): ReplayCache {
  return {
    async claim(nonce, expiresAtMs, caller) {
      const ttlMs = expiresAtMs - now();
      if (!(ttlMs > 0) || nonce.length === 0 || nonce.length > MAX_NONCE_CHARS) return false;
      const key = `${REQUEST_STATE_NONCE_PREFIX}${nonce}`;
      try {
        return await store.compareAndSet(key, undefined, await sealer.seal(key, {}, ttlMs), ttlMs, caller);
      } catch (error) {
        if (error instanceof TokenStoreShareExceededError) throw new ReplayShareExceededError(error.maxPerOwner, error.retryAfterMs ?? 1000);
        throw error;
      }
    },
  };
}
