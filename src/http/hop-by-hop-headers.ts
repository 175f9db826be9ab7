/**
 * Hop-by-hop header names (RFC 9110 §7.6.1, plus the legacy `keep-alive` and `proxy-connection`): they
 * describe one connection and are never passed on by an intermediary, in either direction. Headers named
 * by `Connection` are hop-by-hop as well; see {@link connectionHeaderNames}.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** The header names a `Connection` value lists, lower-cased. */
export function connectionHeaderNames(value: string | string[] | undefined): string[] {
  return String(value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}
