/**
 * Step-up for clients that refresh instead of authorizing again.
 *
 * The official SDK 1.x client answers a 403 `insufficient_scope` by calling its `auth()`, which uses a refresh token
 * when it has one, without a `scope` parameter. A refresh can never add scope (RFC 6749 section 6), so the new token
 * is refused the same way and the client gives up ("Server returned 403 after trying upscoping").
 *
 * That client only refreshes when a server refused its token, never ahead of time. So the development server refuses
 * (`invalid_grant`) a refresh made while the newest access token of the same grant still has more than half its
 * lifetime left: such a refresh cannot be for an expiry, and the SDK answers `invalid_grant` by dropping its tokens
 * and authorizing again, for the scope of the challenge. Clients that refresh ahead of expiry usually do so near the
 * end of a token's life, which stays allowed.
 *
 * @module
 */
import type { RefreshTokenContext, TokenIssuedContext } from 'oidc-provider';

/** When the newest access token of a grant was issued, and for how long. */
interface Issued {
  /** Milliseconds since the epoch. */
  at: number;
  /** Lifetime in seconds. */
  lifetime: number;
}

/**
 * Most grants remembered. Past it the grant recorded longest ago is forgotten: its next refresh is allowed, as any
 * refresh is for a grant with no token on record.
 */
export const MAX_RECORDED_GRANTS = 10_000;

/** Whether the token recorded in `issued` has expired at `now` (milliseconds since the epoch). */
function hasExpired(issued: Issued, now: number): boolean {
  return now - issued.at >= issued.lifetime * 1000;
}

/**
 * Records access tokens per grant and refuses refreshes made in the first half of the newest one's life.
 *
 * The record is bounded, since a long-running server issues grants without end: recording drops every grant whose
 * newest token has expired (a refresh after expiry is allowed anyway), and then, past {@link MAX_RECORDED_GRANTS},
 * the grants recorded longest ago.
 */
export class EarlyRefreshRefusal {
  /** Per grant id, in the order last recorded (a grant recorded again moves to the end). */
  private readonly issued = new Map<string, Issued>();
  /** When the first token on record expires (milliseconds since the epoch): no pruning scan is due before. */
  private firstExpiry = Infinity;

  /** How many grants are on record. */
  get size(): number {
    return this.issued.size;
  }

  /** @param invalidGrant makes the `invalid_grant` error sent, with the description given. */
  constructor(private readonly invalidGrant: (description: string) => Error) {}

  /** Called on every successful token response (oidc-provider's `grant.success`). */
  recordIssued(ctx: TokenIssuedContext): void {
    const grantId = ctx.oidc.entities.AccessToken?.grantId;
    const lifetime = (ctx.body as { expires_in?: unknown } | undefined)?.expires_in;
    if (grantId === undefined || typeof lifetime !== 'number') return;
    const now = Date.now();
    if (now >= this.firstExpiry) this.pruneExpired(now);
    this.issued.delete(grantId);
    this.issued.set(grantId, { at: now, lifetime });
    this.firstExpiry = Math.min(this.firstExpiry, now + lifetime * 1000);
    for (const id of this.issued.keys()) {
      if (this.issued.size <= MAX_RECORDED_GRANTS) break;
      this.issued.delete(id);
    }
  }

  /** Drops the grants whose newest token has expired, and notes when the first of the others expires. */
  private pruneExpired(now: number): void {
    this.firstExpiry = Infinity;
    for (const [id, issued] of this.issued) {
      if (hasExpired(issued, now)) this.issued.delete(id);
      else this.firstExpiry = Math.min(this.firstExpiry, issued.at + issued.lifetime * 1000);
    }
  }

  /** Throws `invalid_grant` for a refresh while the grant's newest access token is in the first half of its life. */
  refuseIfEarly(ctx: RefreshTokenContext): void {
    const grantId = ctx.oidc.entities.RefreshToken.grantId;
    const last = this.issued.get(grantId);
    if (last === undefined) return;
    const now = Date.now();
    if (hasExpired(last, now)) {
      this.issued.delete(grantId);
      return;
    }
    const ageSeconds = (now - last.at) / 1000;
    if (ageSeconds >= last.lifetime / 2) return;
    throw this.invalidGrant(
      `refused: the access token issued ${Math.round(ageSeconds)} s ago on this grant is still valid for ${Math.round(last.lifetime - ageSeconds)} s, ` +
        'and a refresh cannot add scope (RFC 6749 section 6). A client refused for missing scope (403 insufficient_scope) must ' +
        'authorize again for the scope of the challenge; this development server allows a refresh once half of that token\'s lifetime has passed',
    );
  }
}

/**
 * oidc-provider's default refresh token rotation (lib/helpers/defaults.js): rotate a public client's unbound token
 * every time, others once 70% of their life has passed, never one that lives a year or more.
 */
export function rotateAsOidcProviderDoes(ctx: RefreshTokenContext): boolean {
  const { RefreshToken: refreshToken, Client: client } = ctx.oidc.entities;
  if (refreshToken.totalLifetime() >= 365.25 * 24 * 60 * 60) return false;
  if (client.clientAuthMethod === 'none' && !refreshToken.isSenderConstrained()) return true;
  return refreshToken.ttlPercentagePassed() >= 70;
}
