/**
 * How a bounded store shares itself between callers, so that one caller never fills what every caller needs: while
 * it holds at least half its most entries ({@link sharePressure}), a caller holding its share (1 % of the most,
 * {@link defaultCallerShare}) gets no new entry until its oldest expires. Below half nobody is limited, so a single
 * busy caller is not capped while there is room; one caller alone fills at most half, and the other half stays for
 * callers within their share. The DPoP replay cache and the gateway's token stores share themselves this way.
 */

/** The default share of one caller, as a divisor of the most entries: 1 %. */
export const DEFAULT_CALLER_SHARE_DIVISOR = 100;

/**
 * The default share of one caller of a store of `maxEntries`: 1 %, at least one.
 *
 * @example
 * defaultCallerShare(20_000); // 200
 */
export function defaultCallerShare(maxEntries: number): number {
  return Math.max(1, Math.floor(maxEntries / DEFAULT_CALLER_SHARE_DIVISOR));
}

/**
 * How many entries a store of `maxEntries` must hold before the callers' shares are enforced: half, rounded up.
 *
 * @example
 * sharePressure(20_000); // 10000
 */
export function sharePressure(maxEntries: number): number {
  return Math.ceil(maxEntries / 2);
}
