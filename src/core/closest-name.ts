/**
 * "Did you mean …?" for names a person typed: a policy rule name that matches nothing, a misspelt setting.
 * Framework-free, bounded: names longer than {@link MAX_COMPARED_LENGTH} are not compared.
 */

/** Longest name compared, in UTF-16 code units; longer ones get no suggestion (the distance is quadratic). */
export const MAX_COMPARED_LENGTH = 256;

/**
 * The Levenshtein distance between `a` and `b` (insertions, deletions and substitutions, each 1), or
 * `Infinity` when either is longer than {@link MAX_COMPARED_LENGTH}.
 */
export function editDistance(a: string, b: string): number {
  if (a.length > MAX_COMPARED_LENGTH || b.length > MAX_COMPARED_LENGTH) return Infinity;
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate closest to `name` by {@link editDistance}, when it is close enough to be a likely typo: at most
 * a third of the longer name's length, and at least 1 (so `ad` suggests `add`, `MCP_AUTH_POLICIES` suggests
 * `MCP_AUTH_POLICY`). Case is ignored when comparing. Ties go to the first candidate. Undefined when none is
 * close, or `name` itself is a candidate.
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    if (candidate === name) return undefined;
    const distance = editDistance(lower, candidate.toLowerCase());
    const allowed = Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3));
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
