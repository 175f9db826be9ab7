import type { AuthInfo } from '../kernel/auth-info.js';
import { InvalidDpopProofError, RateLimitedError } from '../kernel/errors.js';
import { readDpopProofHeader, verifyDpopProof } from './dpop-proof.js';
import { ReplayShareExceededError, type ReplayCache } from '../limits/replay-cache.js';
import { rateLimitKey } from '../limits/rate-limit-check.js';
import { storeUnavailableError } from '../kernel/store-unavailable.js';
import { checkDpopBinding, type DpopMode } from '../token/token-binding.js';
import { tokenDigest } from '../wire/token-digest.js';
import { cachedOrVerify, type TokenVerifier, type VerificationContext } from '../token/token-verifier.js';

/**
 * What the guard reads of a request besides its `Authorization` header, to check a DPoP proof. Adapters pass it
 * to `Guard.authenticate`; the `node:http` pipeline does.
 */
export interface DpopRequest extends VerificationContext {
  /** The request's HTTP method (`POST`, `GET`, `DELETE`), compared with the proof's `htm`. */
  readonly method: string;
  /**
   * Every `DPoP` header value, so that two headers are seen (Node's `req.headersDistinct.dpop`). Called only for
   * a request with the `DPoP` scheme, so Bearer requests never pay for it.
   */
  dpopHeader(): string | readonly string[] | undefined;
}

/** Options of {@link createDpopAuthenticator}, validated by the guard. */
export interface DpopAuthenticatorOptions {
  /** The canonical resource URL, which every proof's `htu` must name. */
  resource: string;
  /** Where proof `jti`s are claimed. */
  replayCache: ReplayCache;
  /** Clock skew tolerated on a proof's `iat`, in seconds. */
  clockToleranceSeconds: number;
  /** The guard's DPoP mode, for what an unbound token is told. Default `allow`. */
  mode?: DpopMode;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Authenticates one `Authorization: DPoP <token>` request. */
export type AuthenticateDpop = (token: string, request: DpopRequest | undefined, verifier: TokenVerifier) => Promise<AuthInfo>;

/**
 * Creates the DPoP side of authentication (RFC 9449 §7): the proof is checked first (no network, and a bad proof
 * costs no token verification), then the token (from the token cache when it is there), then the binding of the
 * token to the proof's key, and last the proof's `jti` is claimed, so that only a proof that passed everything
 * uses up its identifier. The claim is atomic: of two concurrent replays, one wins.
 *
 * The claim counts against the caller's share of the replay cache (its identity as rate limits count it, digested
 * so that every key has the same size): a caller past its share gets 429 with `Retry-After`, every other caller is
 * served. That bounds what one caller holds whatever it sends, including requests the rate limit then refuses.
 * The claim stays before the rate limit on purpose: counting first would let anyone who captured a proof and its
 * token spend the victim's rate limit by replaying it for as long as the proof is fresh.
 */
export function createDpopAuthenticator(options: DpopAuthenticatorOptions): AuthenticateDpop {
  const { resource, replayCache, clockToleranceSeconds, now } = options;
  return async (token, request, verifier) => {
    if (request === undefined) throw new InvalidDpopProofError('DPoP proofs are not available through this adapter', 'dpop_proof_missing');
    const proof = readDpopProofHeader(request.dpopHeader());
    const verified = await verifyDpopProof(proof, { method: request.method, resource, accessToken: token, clockToleranceSeconds, now });
    const auth = await cachedOrVerify(verifier, token, request);
    checkDpopBinding(auth, verified.thumbprint, options.mode);
    let fresh: boolean;
    try {
      fresh = await replayCache.claim(verified.jti, verified.expiresAtMs, tokenDigest(rateLimitKey(auth)));
    } catch (error) {
      // 429, not 401 invalid_dpop_proof: the proof is valid, and a client told its proof is invalid would sign a
      // fresh one and retry at once, to the same refusal. Too many requests in a given time is RFC 6585 section 4,
      // and Retry-After says when the caller's oldest proof expires and makes room.
      if (error instanceof ReplayShareExceededError) {
        throw new RateLimitedError(`Too many DPoP proofs in flight: at most ${error.maxPerCaller} per caller within a proof's lifetime; retry later`, error.retryAfterMs);
      }
      throw storeUnavailableError('DPoP proofs cannot be checked for replay right now; retry later', 'dpop_replay_cache_unavailable');
    }
    if (!fresh) throw new InvalidDpopProofError('DPoP proof was already used (jti replayed): send a fresh proof with every request (RFC 9449 section 11.1)', 'dpop_proof_replayed');
    // The proof was in its window when checked; verifying the token took time. A store that records claims past
    // their expiry would accept replays from then on, so the window is checked again once the claim is held.
    if (!((now ?? Date.now)() < verified.expiresAtMs)) {
      throw new InvalidDpopProofError('DPoP proof expired while it was being checked: send a fresh proof', 'dpop_proof_invalid');
    }
    return auth;
  };
}
