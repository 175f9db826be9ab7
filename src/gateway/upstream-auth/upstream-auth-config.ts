/**
 * `MCP_AUTH_UPSTREAM_AUTH` and the settings that go with it, checked at start-up, and the credentials they
 * build. Secrets come from the environment or a file only, never a flag.
 */
import { ConfigurationError } from '../../core/kernel/errors.js';
import { UPSTREAM_AUTH_SETTING_NAMES } from '../../core/kernel/setting-names.js';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import { DEFAULT_HTTP_TIMEOUT_MS } from '../../core/token/verifier-defaults.js';
import { assertSecureUrl } from '../../core/token/issuer-discovery.js';
import { parseAbsoluteUrl, parseListSetting, readSetting } from '../../core/kernel/settings.js';
import { gatewayIssuers } from '../config/gateway-issuers.js';
import { readSecretFile } from '../config/secret-file.js';
import { clientCredentials, staticCredentials, UPSTREAM_AUTH_MODES, type UpstreamAuthMode, type UpstreamCredentials } from './upstream-credentials.js';
import { createUpstreamTargetResolver } from './upstream-resource-metadata.js';
import { createUpstreamTokenClient } from './upstream-token-client.js';
import { tokenExchangeCredentials } from './token-exchange.js';

/** Every upstream authentication setting (`MCP_AUTH_UPSTREAM_AUTH` and what its modes read), for the checks that refuse them where they would do nothing. */
export const UPSTREAM_AUTH_SETTINGS = UPSTREAM_AUTH_SETTING_NAMES;

/** The settings each mode reads; any other upstream authentication setting is refused with that mode. */
const SETTINGS_OF_MODE: Record<UpstreamAuthMode, readonly string[]> = {
  none: [],
  static: ['MCP_AUTH_UPSTREAM_TOKEN', 'MCP_AUTH_UPSTREAM_TOKEN_FILE'],
  client_credentials: ['MCP_AUTH_UPSTREAM_CLIENT_ID', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE', 'MCP_AUTH_UPSTREAM_SCOPE', 'MCP_AUTH_UPSTREAM_ISSUER', 'MCP_AUTH_UPSTREAM_RESOURCE'],
  token_exchange: ['MCP_AUTH_UPSTREAM_CLIENT_ID', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE', 'MCP_AUTH_UPSTREAM_SCOPE', 'MCP_AUTH_UPSTREAM_ISSUER', 'MCP_AUTH_UPSTREAM_RESOURCE'],
  connected: ['MCP_AUTH_UPSTREAM_CLIENT_ID', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE', 'MCP_AUTH_UPSTREAM_SCOPE', 'MCP_AUTH_UPSTREAM_ISSUER', 'MCP_AUTH_UPSTREAM_RESOURCE'],
};

/** Upstream authentication, validated; build its credentials with {@link createUpstreamCredentials}. */
export type UpstreamAuthConfig =
  | { mode: 'static'; token: string }
  | { mode: 'static'; tokenFile: string }
  | {
      mode: 'client_credentials' | 'token_exchange';
      /** The upstream MCP endpoint. */
      upstream: string;
      clientId: string;
      /** Never logged. */
      clientSecret: string;
      scope?: string;
      issuer?: string;
      resource?: string;
      /** The gateway's own issuers: the fallback for `issuer`. */
      gatewayIssuers: readonly string[];
      /** Timeout of each request to the upstream's metadata and authorization server, in milliseconds. */
      timeoutMs: number;
    }
  | {
      /** Each user's own authorization at the upstream (connected accounts): see `src/gateway/connected/`. */
      mode: 'connected';
      upstream: string;
      /** A client registered at the upstream's authorization server; absent: a Client ID Metadata Document or dynamic registration. */
      clientId?: string;
      /** Absent: a public client (PKCE). Never logged. */
      clientSecret?: string;
      scope?: string;
      issuer?: string;
      resource?: string;
      gatewayIssuers: readonly string[];
      timeoutMs: number;
    };

/**
 * Reads the upstream authentication settings for the HTTP upstream `MCP_AUTH_UPSTREAM`. Returns undefined for
 * `none` (the default).
 *
 * @throws ConfigurationError for an unknown mode, a missing or superfluous setting, a secret that cannot be read,
 *   or credentials that would travel in the clear (an http upstream or issuer off loopback).
 */
export function loadUpstreamAuth(settings: Readonly<Record<string, string | undefined>>, guard: GuardOptions): UpstreamAuthConfig | undefined {
  const modeText = readSetting(settings, 'MCP_AUTH_UPSTREAM_AUTH') ?? 'none';
  const mode = UPSTREAM_AUTH_MODES.find((m) => m === modeText);
  if (mode === undefined) {
    throw new ConfigurationError('MCP_AUTH_UPSTREAM_AUTH', `is "${modeText}"; use one of ${UPSTREAM_AUTH_MODES.join(', ')}`);
  }
  for (const name of UPSTREAM_AUTH_SETTINGS) {
    if (name === 'MCP_AUTH_UPSTREAM_AUTH' || SETTINGS_OF_MODE[mode].includes(name) || readSetting(settings, name) === undefined) continue;
    throw new ConfigurationError(name, `does nothing with MCP_AUTH_UPSTREAM_AUTH=${mode}; unset it, or set MCP_AUTH_UPSTREAM_AUTH to the mode it belongs to`);
  }
  if (mode === 'none') return undefined;
  const upstream = readSetting(settings, 'MCP_AUTH_UPSTREAM')!;
  // A credential sent over plain http to another machine could be read on the way.
  assertSecureUrl('MCP_AUTH_UPSTREAM', upstream);

  if (mode === 'static') {
    const token = readSetting(settings, 'MCP_AUTH_UPSTREAM_TOKEN');
    const tokenFile = readSetting(settings, 'MCP_AUTH_UPSTREAM_TOKEN_FILE');
    if ((token === undefined) === (tokenFile === undefined)) {
      throw new ConfigurationError('MCP_AUTH_UPSTREAM_TOKEN', 'or MCP_AUTH_UPSTREAM_TOKEN_FILE (one of them, not both) is required with MCP_AUTH_UPSTREAM_AUTH=static: the token the gateway sends upstream');
    }
    if (token !== undefined) {
      if (/[\s\x00-\x1f\x7f]/.test(token)) throw new ConfigurationError('MCP_AUTH_UPSTREAM_TOKEN', 'must be one token with no white space inside');
      return { mode, token };
    }
    // Read now, so that a missing file is a start-up error rather than a 502 on the first request.
    staticCredentials({ file: tokenFile!, setting: 'MCP_AUTH_UPSTREAM_TOKEN_FILE' });
    return { mode, tokenFile: tokenFile! };
  }

  if (mode === 'connected') return loadConnectedUpstream(settings, guard, upstream);
  const clientId = readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_ID');
  if (clientId === undefined) {
    throw new ConfigurationError('MCP_AUTH_UPSTREAM_CLIENT_ID', `is required with MCP_AUTH_UPSTREAM_AUTH=${mode}: the gateway's client id at the upstream's authorization server`);
  }
  const clientSecret = readClientSecret(settings, mode);
  const { scope, issuer, resource } = readTarget(settings);
  return {
    mode,
    upstream,
    clientId,
    clientSecret,
    gatewayIssuers: gatewayIssuers(guard),
    timeoutMs: guard.httpTimeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS,
    ...(scope ? { scope } : {}),
    ...(issuer !== undefined ? { issuer } : {}),
    ...(resource !== undefined ? { resource } : {}),
  };
}

/** Where the upstream's tokens come from and for what: `MCP_AUTH_UPSTREAM_SCOPE`, `_ISSUER`, `_RESOURCE`, each optional. */
function readTarget(settings: Readonly<Record<string, string | undefined>>): { scope?: string; issuer?: string; resource?: string } {
  const issuer = readSetting(settings, 'MCP_AUTH_UPSTREAM_ISSUER');
  if (issuer !== undefined) assertSecureUrl('MCP_AUTH_UPSTREAM_ISSUER', issuer);
  const resource = readSetting(settings, 'MCP_AUTH_UPSTREAM_RESOURCE');
  if (resource !== undefined) {
    const problem = `"${resource}" is not an absolute URI without a fragment (RFC 8707 section 2)`;
    parseAbsoluteUrl(resource, 'MCP_AUTH_UPSTREAM_RESOURCE', problem);
    if (resource.includes('#')) throw new ConfigurationError('MCP_AUTH_UPSTREAM_RESOURCE', problem);
  }
  const scope = parseListSetting(readSetting(settings, 'MCP_AUTH_UPSTREAM_SCOPE'))?.join(' ');
  return { ...(scope ? { scope } : {}), ...(issuer !== undefined ? { issuer } : {}), ...(resource !== undefined ? { resource } : {}) };
}

/** The settings of `connected`: every one optional (a client may be registered by the gateway itself). */
function loadConnectedUpstream(settings: Readonly<Record<string, string | undefined>>, guard: GuardOptions, upstream: string): UpstreamAuthConfig {
  const clientId = readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_ID');
  const hasSecret = readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET') !== undefined || readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE') !== undefined;
  if (hasSecret && clientId === undefined) {
    throw new ConfigurationError('MCP_AUTH_UPSTREAM_CLIENT_ID', 'is required when a client secret is set with MCP_AUTH_UPSTREAM_AUTH=connected: the client that secret belongs to');
  }
  const clientSecret = hasSecret ? readClientSecret(settings, 'connected') : undefined;
  const { scope, issuer, resource } = readTarget(settings);
  return {
    mode: 'connected',
    upstream,
    gatewayIssuers: gatewayIssuers(guard),
    timeoutMs: guard.httpTimeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS,
    ...(clientId !== undefined ? { clientId } : {}),
    ...(clientSecret !== undefined ? { clientSecret } : {}),
    ...(scope ? { scope } : {}),
    ...(issuer !== undefined ? { issuer } : {}),
    ...(resource !== undefined ? { resource } : {}),
  };
}

function readClientSecret(settings: Readonly<Record<string, string | undefined>>, mode: UpstreamAuthMode): string {
  const secret = readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET');
  const file = readSetting(settings, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE');
  if ((secret === undefined) === (file === undefined)) {
    throw new ConfigurationError('MCP_AUTH_UPSTREAM_CLIENT_SECRET', `or MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE (one of them, not both) is required with MCP_AUTH_UPSTREAM_AUTH=${mode}`);
  }
  return secret ?? readSecretFile(file!, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE');
}

/**
 * The credentials a configuration describes. Nothing is fetched until the first request.
 *
 * @param connected - Builds the credentials of `connected` mode, which need the gateway's token store and pages;
 *   without it that mode is refused (a library user builds them with the connected-accounts module).
 */
export function createUpstreamCredentials(config: UpstreamAuthConfig, connected?: (config: Extract<UpstreamAuthConfig, { mode: 'connected' }>) => UpstreamCredentials): UpstreamCredentials {
  if (config.mode === 'connected') {
    if (connected === undefined) throw new ConfigurationError('MCP_AUTH_UPSTREAM_AUTH', 'is "connected", which needs the gateway\'s token store and connect pages (MCP_AUTH_TOKEN_STORE_SECRET, MCP_AUTH_LOGIN_CLIENT_ID)');
    return connected(config);
  }
  if (config.mode === 'static') {
    return 'token' in config ? staticCredentials({ token: config.token }) : staticCredentials({ file: config.tokenFile, setting: 'MCP_AUTH_UPSTREAM_TOKEN_FILE' });
  }
  const tokens = createUpstreamTokenClient({
    target: createUpstreamTargetResolver({
      upstream: new URL(config.upstream),
      gatewayIssuers: config.gatewayIssuers,
      timeoutMs: config.timeoutMs,
      ...(config.issuer !== undefined ? { issuer: config.issuer } : {}),
      ...(config.resource !== undefined ? { resource: config.resource } : {}),
    }),
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    timeoutMs: config.timeoutMs,
  });
  return config.mode === 'client_credentials' ? clientCredentials(tokens, config.scope) : tokenExchangeCredentials(tokens, config.scope !== undefined ? { scope: config.scope } : {});
}
