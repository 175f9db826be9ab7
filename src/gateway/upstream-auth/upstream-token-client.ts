/**
 * The gateway as an OAuth client of the upstream's authorization server: discovery, client authentication and
 * token requests through openid-client, each bounded by a timeout, and their failures sorted into "refused"
 * and "unavailable".
 */
import type * as client from 'openid-client';
import { AuthorizationServerUnavailableError } from '../../core/kernel/errors.js';
import { assertSecureUrl, createIssuerDiscovery, createTimeoutFetch, isLoopbackHttpUrl, toOpenIdClientTimeout } from '../../core/token/issuer-discovery.js';
import type { UpstreamTarget } from './upstream-resource-metadata.js';

/** Options of {@link createUpstreamTokenClient}. */
export interface UpstreamTokenClientOptions {
  /** Where tokens come from and for which resource (see `createUpstreamTargetResolver`). */
  target: () => Promise<UpstreamTarget>;
  /** `MCP_AUTH_UPSTREAM_CLIENT_ID`. */
  clientId: string;
  /** `MCP_AUTH_UPSTREAM_CLIENT_SECRET`. Never logged. */
  clientSecret: string;
  /** Timeout of each request to the authorization server, in milliseconds. */
  timeoutMs: number;
}

/** A token the authorization server issued for the upstream. */
export interface IssuedToken {
  /** The access token. Never logged. */
  accessToken: string;
  /** When it expires, in milliseconds since the epoch; undefined when the server did not say. */
  expiresAt?: number;
}

/** One token request: a grant type and its parameters (`resource` is added). */
export type TokenRequest = (target: UpstreamTarget) => { grantType: string; parameters: Record<string, string> };

/** Requests tokens for the upstream. */
export interface UpstreamTokenClient {
  /** Sends one token request to the upstream's authorization server, with `resource` = the upstream. */
  request(build: TokenRequest): Promise<IssuedToken>;
  /**
   * Loads the upstream's and its authorization server's metadata, as the first request does (memoized once it
   * succeeds), without sending a token request.
   */
  configured(): Promise<void>;
}

/**
 * The authorization server refused a token request (an OAuth error response, RFC 6749 §5.2, e.g. `invalid_grant`
 * for an exchange it will not make). `error` is the server's code, safe to log; its description is not kept.
 */
export class UpstreamTokenRefusedError extends Error {
  readonly error: string;
  constructor(error: string, cause?: unknown) {
    super(`the upstream's authorization server refused the token request (${error})`, { cause });
    this.name = 'UpstreamTokenRefusedError';
    this.error = error;
  }
}

/** Seconds a caller is told to wait after the authorization server could not be reached. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** A token client ready to ask: its openid-client configuration, its target, and the modules it calls. */
interface Configured {
  readonly config: client.Configuration;
  readonly target: UpstreamTarget;
  readonly openid: typeof client;
  readonly oauthErrorAnswer: typeof import('./oauth-error-answer.js').oauthErrorAnswer;
}

/**
 * Creates the client. Nothing is fetched until the first request: the upstream's metadata, then its
 * authorization server's (RFC 8414, memoized, retried after failures as the guard's own discovery is). The client
 * authenticates with `client_secret_basic` (RFC 6749 §2.3.1, the default of RFC 8414), or `client_secret_post`
 * when the server lists only that.
 *
 * @throws from `request`: UpstreamTokenRefusedError when the server answers with an OAuth error;
 *   AuthorizationServerUnavailableError (503, `Retry-After`) when it cannot be reached, times out or answers badly.
 */
export function createUpstreamTokenClient(options: UpstreamTokenClientOptions): UpstreamTokenClient {
  let configuration: Promise<Configured> | undefined;
  let discover: (() => Promise<client.ServerMetadata>) | undefined;

  async function configure(): Promise<Configured> {
    // Loaded at the first token request: a configuration is read and checked without an OAuth client.
    const [openid, { oauthErrorAnswer }] = await Promise.all([import('openid-client'), import('./oauth-error-answer.js')]);
    const target = await options.target();
    discover ??= createIssuerDiscovery({ issuer: target.issuer, timeoutMs: options.timeoutMs });
    const metadata = await discover();
    // The client secret and the caller's token are sent there: https, or http on loopback only.
    if (metadata.token_endpoint === undefined) throw new AuthorizationServerUnavailableError("the upstream's authorization server publishes no token_endpoint", UNAVAILABLE_RETRY_AFTER_SECONDS);
    assertSecureUrl('token_endpoint', metadata.token_endpoint);
    const methods = metadata.token_endpoint_auth_methods_supported;
    const auth = methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post') ? openid.ClientSecretPost(options.clientSecret) : openid.ClientSecretBasic(options.clientSecret);
    const config = new openid.Configuration(metadata, options.clientId, undefined, auth);
    config[openid.customFetch] = createTimeoutFetch(options.timeoutMs, 'token');
    config.timeout = toOpenIdClientTimeout(options.timeoutMs);
    if (isLoopbackHttpUrl(new URL(target.issuer))) openid.allowInsecureRequests(config);
    return { config, target, openid, oauthErrorAnswer };
  }

  // A failed configuration is not memoized: discovery has its own retry delay.
  const configuredOnce = (): Promise<Configured> =>
    (configuration ??= configure().catch((error: unknown) => {
      configuration = undefined;
      throw error;
    }));

  return {
    async configured() {
      await configuredOnce();
    },
    async request(build) {
      const configured = await configuredOnce();
      const { grantType, parameters } = build(configured.target);
      const startedAt = Date.now();
      let response: client.TokenEndpointResponse;
      try {
        const body = { ...parameters, resource: configured.target.resource };
        response =
          grantType === 'client_credentials'
            ? await configured.openid.clientCredentialsGrant(configured.config, body)
            : await configured.openid.genericGrantRequest(configured.config, grantType, body);
      } catch (error) {
        // A refusal in the body or in a challenge (a token endpoint's 401 is a failed client authentication).
        const refusal = configured.oauthErrorAnswer(error);
        if (refusal !== undefined) throw new UpstreamTokenRefusedError(refusal.code, error);
        throw new AuthorizationServerUnavailableError("the upstream's authorization server could not issue a token", UNAVAILABLE_RETRY_AFTER_SECONDS, error);
      }
      const expiresIn = response.expires_in;
      return { accessToken: response.access_token, ...(typeof expiresIn === 'number' ? { expiresAt: startedAt + expiresIn * 1000 } : {}) };
    },
  };
}
