/**
 * Space-separated scope lists (RFC 6749 section 3.3), as the demo client combines them for a step-up: the
 * scopes already granted plus the ones a 403 challenge names.
 *
 * @module
 */

function splitScopes(scope: string | undefined): string[] {
  return scope ? scope.split(/\s+/).filter(Boolean) : [];
}

/** Every scope of the given space-separated strings or lists, once each, in first-seen order. */
export function unionScopes(...lists: Array<string | string[] | undefined>): string {
  const set = new Set<string>();
  for (const list of lists) for (const s of Array.isArray(list) ? list : splitScopes(list)) set.add(s);
  return [...set].join(' ');
}
