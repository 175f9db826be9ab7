/**
 * One line saying why something failed, for an operator's log: the error's message followed by each cause's
 * (`a: b: c`), the members of an `AggregateError` joined with `; `, repeated messages left out, bounded in length.
 * Guard errors and their causes never carry a token, so the line is safe to log; it is not meant for clients,
 * who get the short message of a `GuardError` only.
 *
 * @example
 * guard.ready().catch((error) => log.warn(`discovery failed: ${explainFailure(error)}`));
 * // discovery failed: authorization server metadata is unavailable: discovery of issuer https://as failed:
 * //   GET https://as/.well-known/oauth-authorization-server: HTTP 404 (no metadata document here); ...
 *
 * @param maxLength - Longest line returned, in characters. Default 2 000.
 */
export function explainFailure(error: unknown, maxLength = 2_000): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.has(current) && parts.length < 8) {
    seen.add(current);
    const text = messageOf(current);
    if (text !== '' && !parts.some((part) => part.includes(text))) parts.push(text);
    current = current instanceof AggregateError ? undefined : (current as { cause?: unknown }).cause;
  }
  const line = parts.join(': ') || 'unknown error';
  return line.length > maxLength ? `${line.slice(0, maxLength)}...` : line;
}

function messageOf(value: unknown): string {
  if (value instanceof AggregateError) {
    const members = value.errors.map((member) => explainFailure(member, 500));
    return [value.message, members.join('; ')].filter((text) => text !== '').join(': ');
  }
  if (value instanceof Error) return value.message.replace(/\s+/g, ' ').trim();
  return typeof value === 'string' ? value : '';
}
