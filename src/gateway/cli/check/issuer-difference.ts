/**
 * How two spellings of an issuer differ, for the operator who must make them equal: issuers are compared character
 * for character (RFC 8414 §3.3, and every token's `iss`), so a trailing slash, `http` for `https` or a letter's
 * case is enough to refuse every token.
 */

/** Longest spelling shown, in characters: the discovered one comes from the network. */
const MAX_SHOWN_LENGTH = 300;

/** What {@link describeIssuerDifference} found. */
export interface IssuerDifference {
  /** The difference in words, e.g. `the metadata's issuer ends with a "/" that the configured one lacks`. */
  readonly summary: string;
  /** The two spellings, quoted, one under the other, and a caret under the first character that differs. */
  readonly details: readonly string[];
}

/**
 * Describes how `configured` and `discovered` differ.
 *
 * @example
 * describeIssuerDifference('http://127.0.0.1:9400', 'http://127.0.0.1:9400/').summary;
 * // 'the metadata\'s issuer ends with a "/" that the configured one lacks'
 */
export function describeIssuerDifference(configured: string, discovered: string): IssuerDifference {
  let at = 0;
  while (at < configured.length && at < discovered.length && configured[at] === discovered[at]) at++;
  const labels = ['configured:', 'metadata:  '];
  const quoted = [quote(configured), quote(discovered)];
  // Past the label and the opening quote, and past the prefix as quoted (escapes widen it).
  const caretColumn = labels[0]!.length + 1 + quote(configured.slice(0, at)).length - 1;
  const details = [`${labels[0]} ${quoted[0]}`, `${labels[1]} ${quoted[1]}`, `${' '.repeat(caretColumn)}^ character ${at + 1}`];
  return { summary: summarize(configured, discovered, at), details };
}

function summarize(configured: string, discovered: string, at: number): string {
  if (discovered === `${configured}/`) return `the metadata's issuer ends with a "/" that the configured one lacks`;
  if (configured === `${discovered}/`) return `the configured issuer ends with a "/" that the metadata's lacks`;
  const configuredScheme = /^[a-z][a-z0-9+.-]*:/i.exec(configured)?.[0];
  const discoveredScheme = /^[a-z][a-z0-9+.-]*:/i.exec(discovered)?.[0];
  if (configuredScheme && discoveredScheme && configuredScheme !== discoveredScheme && configured.slice(configuredScheme.length) === discovered.slice(discoveredScheme.length)) {
    return `the metadata's issuer is ${discoveredScheme.slice(0, -1)}, the configured one ${configuredScheme.slice(0, -1)}`;
  }
  if (configured.toLowerCase() === discovered.toLowerCase()) return `they differ only in the case of letters, first at character ${at + 1}`;
  return `they differ from character ${at + 1} on`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text);
}
