/**
 * The order of the measurements in one round of a benchmark. Each target runs in its own process on a shared
 * CPU, and one that ran just before can leave caches, the allocator and an upstream's connections in a state that
 * favours or burdens whoever comes next: measured, a fixed order moved a ratio between two processes of the same
 * code by up to a third. Rounds therefore follow a balanced order.
 */

/**
 * `items` in the order of row `round` of a Williams design: over n rounds (2n for an odd n) each item comes first
 * equally often and follows each other item equally often, so no item is always measured after the same one.
 *
 * @example
 * for (let round = 0; round < rounds; round++) for (const target of ['anchor', ...williamsOrder(others, round)]) …
 */
export function williamsOrder<T>(items: readonly T[], round: number): T[] {
  const n = items.length;
  if (n < 2) return [...items];
  // First row 0, 1, n-1, 2, n-2, …; row k adds k to each (mod n); for an odd n the rows n..2n-1 are reversed.
  const base = [0];
  for (let low = 1, high = n - 1; base.length < n; ) base.push(base.length % 2 === 1 ? low++ : high--);
  const k = round % (n % 2 === 0 ? n : 2 * n);
  const row = base.map((i) => items[(i + k) % n]!);
  return k >= n ? row.reverse() : row;
}
