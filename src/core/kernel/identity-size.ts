/** Fixed cost of one cached identity, in bytes: the cache entry and its recency links, the 43-character digest key, the frozen `AuthInfo` parts. */
const ENTRY_OVERHEAD_BYTES = 640;

/**
 * Estimated memory of a cached identity, in bytes, by walking its claims the way V8 lays them out (64-bit, no
 * pointer compression, as Node ships): an object about 64 bytes plus 8 per property, an array 16 plus 8 per
 * element, a string 24 plus its length (twice that when it holds characters beyond Latin-1), a non-small-integer
 * number 16; property names are shared between tokens and not counted. Calibrated against `heapUsed` for
 * string-, number-, object- and empty-object-heavy claims: it stays above the real cost (by up to about 2× for
 * small nested objects), never below, so `tokenCache.maxBytes` bounds real memory whatever an identity provider
 * puts in its tokens. Walked once, when a token is first verified; iterative, so nesting depth cannot overflow
 * the stack.
 *
 * @example
 * estimateIdentityBytes({ sub: 'alice', groups: ['a', 'b'] }); // about 850
 */
export function estimateIdentityBytes(claims: unknown): number {
  let bytes = ENTRY_OVERHEAD_BYTES;
  const pending: unknown[] = [claims];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      bytes += estimateStringBytes(value);
    } else if (typeof value === 'number') {
      if (!Number.isInteger(value) || Math.abs(value) >= 2 ** 30) bytes += 16;
    } else if (Array.isArray(value)) {
      bytes += 16 + 8 * value.length;
      for (const element of value) pending.push(element);
    } else if (typeof value === 'object' && value !== null) {
      const values = Object.values(value);
      bytes += 64 + 8 * values.length;
      for (const element of values) pending.push(element);
    }
  }
  return bytes;
}

/**
 * Estimated memory of a string, in bytes, as V8 lays it out (64-bit): 24 plus its length, twice that when it holds
 * characters beyond Latin-1. Scans the string once.
 *
 * @example
 * estimateStringBytes('alice'); // 29
 */
export function estimateStringBytes(value: string): number {
  return 24 + (/[^\u0000-\u00ff]/.test(value) ? 2 * value.length : value.length);
}
