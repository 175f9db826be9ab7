/** Fewest and most keys a {@link SecondUseFilter} generation holds before it is replaced. */
const MIN_KEYS = 1_024;
const MAX_KEYS = 1_048_576;
/** Bits per key and bits set per key: 3 to 6 % of new keys (about 4 % on average) pass for seen, which is harmless. */
const BITS_PER_KEY = 8;
const HASHES = 3;

/**
 * Remembers which keys were seen recently, so a cache can admit a key on its second use only (the "doorkeeper"
 * of TinyLFU admission). A key used once and never again, such as a token minted for a single request, then
 * never enters the cache: it costs no entry, no eviction of a useful one, and no old-generation garbage for the
 * collector, which is what a cache full of one-use entries costs per request.
 */
export interface SecondUseFilter {
  /**
   * Whether `key` was seen among the last `keys` to `2 × keys` new keys (see {@link createSecondUseFilter});
   * records it when it was not. A false "seen" (3 to 6 % of new keys) only admits a key early; neither answer changes
   * what is accepted, since the caller verifies either way.
   */
  seenBefore(key: string): boolean;
}

/**
 * Creates a {@link SecondUseFilter} that remembers at least the last `keys` new keys (between 1 024 and
 * 1 048 576): two Bloom filters of 8 bits per key, the current one and the one before it, allocated once (2 KB
 * per thousand keys). When the current one has taken `keys` keys it becomes the previous one and a cleared table
 * takes its place. Unlike a table of one slot per key, two keys in use cannot keep evicting each other. Keys are
 * expected to be uniformly distributed already and at least 15 characters long (a SHA-256 digest in base64url,
 * 43): each bit position comes from five characters of its own.
 *
 * @example
 * const firstUses = createSecondUseFilter(20_000); // two tables of 20 KB
 * if (firstUses.seenBefore(digest)) cache.set(digest, identity);
 */
export function createSecondUseFilter(keys: number): SecondUseFilter {
  const capacity = Math.min(MAX_KEYS, Math.max(MIN_KEYS, Math.ceil(keys)));
  const words = Math.ceil((capacity * BITS_PER_KEY) / 32);
  const bits = words * 32;
  let current = new Uint32Array(words);
  let previous = new Uint32Array(words);
  let added = 0;
  const positions = new Uint32Array(HASHES);

  const has = (table: Uint32Array): boolean => {
    for (const bit of positions) if ((table[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    return true;
  };

  return {
    seenBefore(key) {
      for (let i = 0; i < HASHES; i++) positions[i] = fnv1a(key, 5 * i, 5 * i + 5) % bits;
      if (has(current) || has(previous)) return true;
      if (added === capacity) {
        [previous, current] = [current, previous];
        current.fill(0);
        added = 0;
      }
      for (const bit of positions) current[bit >>> 5] = current[bit >>> 5]! | (1 << (bit & 31));
      added++;
      return false;
    },
  };
}

/** 32-bit FNV-1a of `key`'s UTF-16 code units `from` to `to` (exclusive; shorter keys hash what they have). */
function fnv1a(key: string, from: number, to: number): number {
  let hash = 0x811c9dc5;
  const end = Math.min(to, key.length);
  for (let i = from; i < end; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
