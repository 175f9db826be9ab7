import { checkInteger, checkStringList } from './settings.js';
import { canonicalizeResourceUri, isLoopbackHost } from './canonical-resource.js';
import { isScopeToken } from './compile-policy.js';
import { ConfigurationError } from './errors.js';
import type { GuardOptions } from './guard-options.js';

/**
 * Names under which each setting is reported in start-up errors. Options passed in code are reported
 * as `options.x`; options loaded from the environment as the variable (`MCP_AUTH_ISSUER`, …), so the
 * message always names what the user actually has to change.
 */
export type SettingNames = Partial<Record<keyof GuardOptions, string>> & {
  /** Nested settings, by option path (e.g. `introspection.endpoint`). */
  readonly [path: string]: string | undefined;
};

/** Options after validation, with defaults applied and derived values computed once. */
export interface ResolvedGuardOptions extends GuardOptions {
  /** Canonical resource URI (RFC 8707 §2). */
  resource: string;
  /** Path of the MCP endpoint (from the canonical resource); `/` for a path-less resource. */
  resourcePath: string;
  authorizationServers: readonly string[];
  allowedOrigins: readonly string[];
  maxBodyBytes: number;
  maxJsonDepth: number;
  metadataMaxAgeSeconds: number;
}

function nameOf(names: SettingNames, key: keyof GuardOptions): string {
  return names[key] ?? `options.${key}`;
}

/** Checks an issuer identifier: https, or http on loopback only; no query or fragment (RFC 8414 §2). */
export function checkIssuer(issuer: unknown, setting: string): string {
  if (typeof issuer !== 'string' || issuer.length === 0) {
    throw new ConfigurationError(setting, 'is required: set it to your authorization server\'s issuer URL, e.g. https://auth.example.com (run `npm run demo` to try a local one)');
  }
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new ConfigurationError(setting, `"${issuer}" is not an absolute URL; use the issuer identifier from your authorization server's metadata`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigurationError(setting, `http is only allowed on loopback hosts; use https for ${url.host}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigurationError(setting, 'must be an https URL');
  // Check the raw string too: an empty query (`?`) or fragment (`#`) leaves url.search and url.hash empty.
  if (url.search || url.hash || /[?#]/.test(issuer)) throw new ConfigurationError(setting, 'must not have a query or fragment (RFC 8414 §2)');
  return issuer;
}

/**
 * Validates options at start-up and applies defaults. Throws `ConfigurationError` naming the setting.
 * Token-verification options are validated again (and in depth) by the token verifier.
 */
export function resolveGuardOptions(options: GuardOptions, names: SettingNames = {}): ResolvedGuardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('options', 'mcpOAuthGuard needs an options object with at least issuer, resource and handler');
  }
  const issuer = checkIssuer(options.issuer, nameOf(names, 'issuer'));
  if (typeof options.resource !== 'string' || options.resource.length === 0) {
    throw new ConfigurationError(nameOf(names, 'resource'), 'is required: set it to the public URL of your MCP endpoint, e.g. https://mcp.example.com/mcp');
  }
  const resource = canonicalizeResourceUri(options.resource, nameOf(names, 'resource'));
  const authorizationServers = checkStringList(options.authorizationServers, nameOf(names, 'authorizationServers')) ?? [issuer];
  if (authorizationServers.length === 0) {
    throw new ConfigurationError(nameOf(names, 'authorizationServers'), 'must name at least one authorization server (MCP requires a non-empty authorization_servers)');
  }
  checkStringList(options.audiences, nameOf(names, 'audiences'));
  if (options.challengeScopes !== undefined) {
    const list = options.challengeScopes;
    if (!Array.isArray(list) || !list.every(isScopeToken)) {
      throw new ConfigurationError(nameOf(names, 'challengeScopes'), 'must be a list of scope tokens (RFC 6749 section 3.3: no spaces, quotes or backslashes)');
    }
  }
  const allowedOrigins = checkStringList(options.allowedOrigins, nameOf(names, 'allowedOrigins')) ?? [];
  if (options.resourceDocumentation !== undefined) {
    try {
      new URL(options.resourceDocumentation);
    } catch {
      throw new ConfigurationError(nameOf(names, 'resourceDocumentation'), 'must be an absolute URL');
    }
  }
  if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
    throw new ConfigurationError(nameOf(names, 'onDecision'), 'must be a function');
  }
  const path = new URL(resource).pathname;
  return {
    ...options,
    issuer,
    resource,
    resourcePath: path === '' ? '/' : path,
    authorizationServers,
    allowedOrigins,
    maxBodyBytes: checkInteger(options.maxBodyBytes, nameOf(names, 'maxBodyBytes'), 1_048_576, { max: 64 * 1_048_576 }),
    maxJsonDepth: checkInteger(options.maxJsonDepth, nameOf(names, 'maxJsonDepth'), 64, { max: 1_000 }),
    metadataMaxAgeSeconds: checkInteger(options.metadataMaxAgeSeconds, nameOf(names, 'metadataMaxAgeSeconds'), 3600, { max: 31_536_000 }),
  };
}
