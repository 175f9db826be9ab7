import { parseAbsoluteUrl } from '../kernel/settings.js';
import { isLoopbackHost } from '../kernel/canonical-resource.js';
import { ConfigurationError } from '../kernel/errors.js';

/**
 * Checks an issuer identifier (RFC 8414 §2): https, or http on a loopback host only; no query or fragment.
 * Returned exactly as given: issuers are compared character for character (RFC 8414 §3.3), so
 * `https://as` and `https://as/` are two different issuers and neither is "fixed" into the other.
 *
 * @param setting - The option or variable reported on error, e.g. `MCP_AUTH_ISSUER`.
 * @throws ConfigurationError naming `setting`.
 */
export function checkIssuer(issuer: unknown, setting: string): string {
  if (typeof issuer !== 'string' || issuer.length === 0) {
    throw new ConfigurationError(setting, 'is required: set it to your authorization server\'s issuer URL, e.g. https://auth.example.com (for a local one, in a clone of this repository: `npm run auth-server -- --resource <the MCP URL> --scopes <scopes>`)');
  }
  const url = parseAbsoluteUrl(issuer, setting, `"${issuer}" is not an absolute URL; use the issuer identifier from your authorization server's metadata`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigurationError(setting, `http is only allowed on loopback hosts; use https for ${url.host}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigurationError(setting, `must be an https URL, or http on a loopback host (got ${url.protocol})`);
  }
  // Check the raw string too: an empty query (`?`) or fragment (`#`) leaves url.search and url.hash empty.
  if (url.search || url.hash || /[?#]/.test(issuer)) throw new ConfigurationError(setting, 'must not have a query or fragment (RFC 8414 §2)');
  if (url.username !== '' || url.password !== '') throw new ConfigurationError(setting, 'must not contain credentials');
  return issuer;
}

/** Where {@link checkIssuers} reports a problem: the names of the two settings as the user wrote them. */
export interface IssuerSettingNames {
  /** The single-issuer setting, e.g. `options.issuer` or `MCP_AUTH_ISSUER`. */
  issuer: string;
  /** The list setting, e.g. `options.issuers` (from the environment, also `MCP_AUTH_ISSUER`). */
  issuers: string;
}

/**
 * The trusted issuers, from `issuer` (one) or `issuers` (several): each checked by {@link checkIssuer}, no
 * duplicates, at least one, and not both settings at once.
 *
 * @example
 * checkIssuers(undefined, ['https://login.example.com/v1', 'https://login.example.com/v2/'], names);
 * @throws ConfigurationError naming the setting at fault.
 */
export function checkIssuers(issuer: unknown, issuers: unknown, names: IssuerSettingNames): readonly string[] {
  if (issuers === undefined) return Object.freeze([checkIssuer(issuer, names.issuer)]);
  if (issuer !== undefined && issuer !== '') {
    throw new ConfigurationError(names.issuers, `give either ${names.issuer} (one issuer) or ${names.issuers} (several), not both`);
  }
  if (!Array.isArray(issuers) || issuers.length === 0) {
    throw new ConfigurationError(names.issuers, 'must be a non-empty list of issuer URLs');
  }
  // Every bad entry at once, by position, in one problem of the list's own setting: so a flag's label still finds
  // it, and a collector that keeps one problem per setting keeps them all.
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const [i, each] of issuers.entries()) {
    try {
      const checked = checkIssuer(each, names.issuers);
      if (seen.has(checked)) problems.push(`entry ${i + 1} of ${issuers.length}: "${checked}" is listed already`);
      seen.add(checked);
    } catch (error) {
      if (!(error instanceof ConfigurationError)) throw error;
      const detail = error.problems[0]!.detail;
      problems.push(issuers.length === 1 ? detail : `entry ${i + 1} of ${issuers.length}: ${detail}`);
    }
  }
  if (problems.length > 0) throw new ConfigurationError(names.issuers, problems.join('; '));
  return Object.freeze([...seen]);
}
