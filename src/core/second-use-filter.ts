/** Fewest and most slots of a {@link SecondUseFilter} (4 bytes each): 4 KiB to 4 MiB. */
const MIN_SLOTS = 1_024;
const MAX_SLOTS = 1_048_576;

/**
 * Remembers, in a fixed-size table, which keys were seen recently, so a cache can admit a key on its second use
 * only (the "doorkeeper" of TinyLFU admission). A key used once and never again, such as a token minted for a
 * single request, then never enters the cache: it costs no entry, no eviction of a useful one, and no old
 * generation garbage for the collector, which is what a cache full of one-use entries costs per request.
 */
export interface SecondUseFilter {
  /**
   * Whether `key` was seen since its slot was last taken by another key; records it either way. A false "seen"
   * needs a 32-bit tag collision in the same slot; a false "not seen" (the slot was reused) only delays admission
   * to a later use. Neither affects what is accepted: the caller verifies either way.
   */
  seenBefore(key: string): boolean;
}

/**
 * Creates a {@link SecondUseFilter} with room for about `keys` recent keys: the next power of two at or above
 * twice that many slots, between 1 024 and 1 048 576, 4 bytes each, allocated once. Keys are expected to be
 * uniformly distributed already (a SHA-256 digest), so a few characters are enough to pick the slot and the tag.
 *
 * @example
 * const firstUses = createSecondUseFilter(10_000); // 32 768 slots, 128 KiB
 * if (firstUses.seenBefore(digest)) cache.set(digest, identity);
 */
export function createSecondUseFilter(keys: number): SecondUseFilter {
  let slots = MIN_SLOTS;
  while (slots < 2 * keys && slots < MAX_SLOTS) slots *= 2;
  const mask = slots - 1;
  // 0 marks an empty slot, so tags are never 0.
  const tags = new Uint32Array(slots);
  return {
    seenBefore(key) {
      const slot = fnv1a(key, 0, 4) & mask;
      const tag = (fnv1a(key, 4, 10) | 1) >>> 0;
      if (tags[slot] === tag) return true;
      tags[slot] = tag;
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
