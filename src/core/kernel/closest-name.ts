/**
 * "Did you mean …?" for names a person typed: a policy rule name that matches nothing, a misspelt setting.
 * Framework-free, bounded: names longer than {@link MAX_COMPARED_LENGTH} are not compared.
 */

/** Longest name compared, in UTF-16 code units; longer ones get no suggestion (the distance is quadratic). */
export const MAX_COMPARED_LENGTH = 256;

/**
 * The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of two neighbouring
 * characters, each 1 (optimal string alignment; `raed` is one edit from `read`), or `Infinity` when either is
 * longer than {@link MAX_COMPARED_LENGTH}.
 */
export function editDistance(a: string, b: string): number {
  if (a.length > MAX_COMPARED_LENGTH || b.length > MAX_COMPARED_LENGTH) return Infinity;
  if (a === b) return 0;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let distance = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) distance = Math.min(distance, beforePrevious[j - 2]! + 1);
      current[j] = distance;
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** Share of a name's length that may be edited for it still to count as a typo. */
const TYPO_SHARE = 0.4;

/**
 * The candidate closest to `name` by {@link editDistance}, when it is close enough to be a likely typo. The whole
 * words both begin with (up to the last `_`, `-`, `.`, `:` or `/` of their common start) are left out, so the
 * `MCP_AUTH_` every setting shares makes `MCP_AUTH_TOKEN` no closer to `MCP_AUTH_ISSUER`; what follows may differ
 * by 40 % of the longer part's length, and at least 1 (so `ad` suggests `add`, `MCP_AUTH_POLICIES` suggests
 * `MCP_AUTH_POLICY`). Case is ignored when comparing. Ties go to the first candidate. Undefined when none is
 * close, or `name` itself is a candidate.
 *
 * @example
 * closestName('MCP_AUTH_POLICIES', ['MCP_AUTH_DPOP', 'MCP_AUTH_POLICY']); // 'MCP_AUTH_POLICY'
 * closestName('MCP_AUTH_TOKEN', ['MCP_AUTH_ISSUER']); // undefined
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    if (candidate === name) return undefined;
    const [typed, known] = afterSharedWords(lower, candidate.toLowerCase());
    const distance = editDistance(typed, known);
    const allowed = Math.max(1, Math.floor(Math.max(typed.length, known.length) * TYPO_SHARE));
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `a` and `b` without the whole words they both begin with: their common start, cut after its last separator. */
function afterSharedWords(a: string, b: string): [string, string] {
  let cut = 0;
  for (let i = 0; i < a.length && i < b.length && a[i] === b[i]; i++) if ('_-.:/'.includes(a[i]!)) cut = i + 1;
  return [a.slice(cut), b.slice(cut)];
}
