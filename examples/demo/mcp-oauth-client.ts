/**
 * A demo MCP client that obtains its own OAuth access token, starting from nothing but the MCP server URL.
 *
 * It follows the MCP authorization specification (2025-06-18 onward) step by step so the demo can print a
 * readable transcript:
 * 1. POST `initialize` without a token and expect 401;
 * 2. read `resource_metadata` and `scope` from the `Bearer` challenge (falling back to the path-suffixed, then
 *    root, `/.well-known/oauth-protected-resource`) and check the metadata's `resource` is this server;
 * 3. discover the authorization server (RFC 8414, then OpenID discovery) with openid-client;
 * 4. use a configured client id (pre-registered, or an https Client ID Metadata Document URL when the AS
 *    supports those) or register a public native client dynamically (RFC 7591) with a loopback redirect;
 * 5. run authorization code + PKCE S256 with `resource` = the MCP server (RFC 8707) and the challenged scope,
 *    receiving the code on a 127.0.0.1 listener (RFC 8252), through the system browser, a printed URL, or a
 *    scripted headless user;
 * 6. exchange the code (with `resource` again);
 * 7. call MCP with the token (JSON or SSE answers); in DPoP mode (RFC 9449) the token requests carry a proof, so
 *    the token is bound to a key only this client holds, and every MCP request is `Authorization: DPoP` with a
 *    fresh proof (openid-client's DPoP handle);
 * 8. on 403 `insufficient_scope`, authorize again for the union of granted and challenged scopes, once.
 *
 * This module holds the MCP side (requests, the answers to 401 and 403, refresh) and the client's state;
 * each step of the OAuth flow is a module of its own: `discovery.ts` (2, 3), `client-registration.ts` (4),
 * `authorization-code-flow.ts` with `user-sign-in.ts` (5, 6); the loopback redirect listener and the scripted
 * user are `mcp-oauth-guard/client`'s.
 *
 * Tokens only ever leave the client redacted ({@link redactToken}).
 *
 * @module
 */
import * as oidc from 'openid-client';
import { createCookieJar, LoopbackRedirectListener, type CookieJar } from 'mcp-oauth-guard/client';
import { LATEST_SESSION_PROTOCOL_VERSION } from 'mcp-oauth-guard/core';
import { runAuthorizationCodeFlow } from './authorization-code-flow.js';
import { registerPublicClient } from './client-registration.js';
import { discoverAuthorizationServer, fetchProtectedResourceMetadata } from './discovery.js';
import { readJsonRpcMessages } from './json-rpc-response.js';
import { McpHttpError, McpRpcError } from './mcp-errors.js';
import { isLoopbackHttpUrl } from './resource-url.js';
import { unionScopes } from './scopes.js';
import { peekClaims } from './token-claims.js';
import { redactToken, type TranscriptEvent, type TranscriptStep } from './transcript.js';
import type { AuthorizationMode, OpenBrowser } from './user-sign-in.js';
import { findChallenge } from './www-authenticate-parse.js';

/** `client_name` at registration and `clientInfo.name` in `initialize`, unless configured. */
const DEFAULT_CLIENT_NAME = 'mcp-oauth-guard demo client';

/** Options of {@link McpOAuthClient}. */
export interface McpOAuthClientOptions {
  /** The MCP endpoint, e.g. `http://127.0.0.1:9300/mcp`. */
  mcpUrl: string | URL;
  /** How to reach the user. Default: `headless` when `CI` is set or no display is available, else `browser`. */
  mode?: AuthorizationMode;
  /** Scopes to request instead of the challenged ones (space-separated). */
  scope?: string;
  /**
   * Client id to use instead of dynamic registration: a pre-registered public client, or an `https` URL of a
   * Client ID Metadata Document (used as is when the AS advertises `client_id_metadata_document_supported`).
   */
  clientId?: string;
  /** `client_name` sent at registration. Default `mcp-oauth-guard demo client`. */
  clientName?: string;
  /** Credentials the headless user signs in with. Default: the demo user. */
  user?: { username: string; password: string };
  /** Receives each transcript event. */
  onEvent?: (event: TranscriptEvent) => void;
  /** Opens a URL for the user in `browser` mode. Default: `xdg-open`, `open` or `start`. */
  openBrowser?: OpenBrowser;
  /** How long to wait for the redirect back from the authorization server, in ms. Default 300000. */
  authorizationTimeoutMs?: number;
  /**
   * Use DPoP (RFC 9449): tokens bound to an ES256 key made for this client, a proof with every token request and
   * every MCP request. Default false (Bearer).
   */
  dpop?: boolean;
}

/** Result of an MCP `tools/list`. */
export interface McpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  [key: string]: unknown;
}

/**
 * An MCP client that authorizes itself with OAuth 2.1 (authorization code + PKCE) against whatever
 * authorization server the MCP server names.
 *
 * @example
 * ```ts
 * const client = new McpOAuthClient({ mcpUrl: 'http://127.0.0.1:9300/mcp', mode: 'headless', onEvent: console.log });
 * await client.connect();
 * console.log(await client.listTools());
 * await client.close();
 * ```
 */
export class McpOAuthClient {
  readonly #options: McpOAuthClientOptions;
  readonly #mcpUrl: URL;
  readonly #cookies: CookieJar = createCookieJar();
  /** Authorization server metadata, once discovered. */
  #server: oidc.ServerMetadata | undefined;
  /** openid-client configuration, once a client id is known. */
  #config: oidc.Configuration | undefined;
  #resource: string | undefined;
  #resourceMetadataUrl: string | undefined;
  #challengedScope: string | undefined;
  #accessToken: string | undefined;
  #refreshToken: string | undefined;
  #grantedScope: string | undefined;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #nextId = 1;
  #serverInfo: unknown;
  /** Signs DPoP proofs with this client's key, once a client id is known (DPoP mode only). */
  #dpop: oidc.DPoPHandle | undefined;
  /** The DPoP proof of the last MCP request, to show what was sent (DPoP mode only). */
  #lastProof: string | undefined;
  readonly #emitter = (step: TranscriptStep, message: string, data?: Record<string, unknown>): void => this.#emit(step, message, data);

  constructor(options: McpOAuthClientOptions) {
    this.#options = options;
    this.#mcpUrl = new URL(options.mcpUrl);
    if (this.#mcpUrl.protocol !== 'https:' && !isLoopbackHttpUrl(this.#mcpUrl)) {
      throw new TypeError('mcpUrl must be https (plain http is accepted on loopback hosts only)');
    }
  }

  /** Scopes of the current access token, space-separated, or undefined before authorization. */
  get grantedScope(): string | undefined {
    return this.#grantedScope;
  }

  /** Decoded claims of the current access token when it is a JWT. For display and tests. */
  get accessTokenClaims(): Record<string, unknown> | undefined {
    return this.#accessToken ? peekClaims(this.#accessToken) : undefined;
  }

  /** The server's `initialize` result, once connected. */
  get serverInfo(): unknown {
    return this.#serverInfo;
  }

  /** The client id in use at the authorization server, once known. */
  get clientId(): string | undefined {
    return this.#config?.clientMetadata().client_id;
  }

  #emit(step: TranscriptStep, message: string, data?: Record<string, unknown>): void {
    this.#options.onEvent?.({ step, message, ...(data ? { data } : {}) });
  }

  /** Authorizes (on the first 401) and runs the MCP `initialize` handshake. */
  async connect(): Promise<void> {
    const result = (await this.request('initialize', {
      protocolVersion: LATEST_SESSION_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: this.#options.clientName ?? DEFAULT_CLIENT_NAME, version: '0.1.0' },
    })) as { protocolVersion?: string } | undefined;
    this.#serverInfo = result;
    this.#protocolVersion = result?.protocolVersion ?? LATEST_SESSION_PROTOCOL_VERSION;
    await this.notify('notifications/initialized');
  }

  /** MCP `tools/list`. */
  async listTools(): Promise<McpTool[]> {
    const result = (await this.request('tools/list', {})) as { tools?: McpTool[] } | undefined;
    return result?.tools ?? [];
  }

  /** MCP `tools/call`. */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<unknown> {
    return this.request('tools/call', { name, arguments: args });
  }

  /** Sends a JSON-RPC notification (expects 202). */
  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    await this.#send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) }, method);
  }

  /**
   * Sends a JSON-RPC request and returns its result. Authorizes on 401, refreshes or re-authorizes on a
   * rejected token, and steps up once on 403 `insufficient_scope`.
   *
   * @throws McpRpcError for a JSON-RPC error answer, McpHttpError for an HTTP failure.
   */
  async request(method: string, params?: Record<string, unknown>): Promise<unknown> {
    const id = this.#nextId++;
    const message = await this.#send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) }, method, id);
    const answer = message as { result?: unknown; error?: { code: number; message: string; data?: unknown } } | undefined;
    if (answer?.error) throw new McpRpcError(answer.error.code, answer.error.message, answer.error.data);
    return answer?.result;
  }

  /** Uses the refresh token to get a new access token for the same resource. */
  async refresh(): Promise<void> {
    if (!this.#config || !this.#refreshToken || !this.#resource) throw new Error('nothing to refresh');
    const tokens = await oidc.refreshTokenGrant(this.#config, this.#refreshToken, { resource: this.#resource }, this.#dpop ? { DPoP: this.#dpop } : undefined);
    this.#acceptTokens(tokens, 'refresh');
  }

  /** Forgets tokens and the MCP session. Nothing is listening after {@link connect} returns, so no sockets. */
  async close(): Promise<void> {
    this.#accessToken = undefined;
    this.#lastProof = undefined;
    this.#refreshToken = undefined;
    this.#sessionId = undefined;
  }

  async #post(body: unknown): Promise<Response> {
    // What this request's proof said, or nothing: a request sent without one must not show the previous proof.
    this.#lastProof = undefined;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (this.#sessionId) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion) headers['mcp-protocol-version'] = this.#protocolVersion;
    if (this.#accessToken && this.#dpop && this.#config) {
      // openid-client sends `Authorization: DPoP <token>` and a fresh proof for this method and URL, with `ath`.
      return oidc
        .fetchProtectedResource(this.#config, this.#accessToken, this.#mcpUrl, 'POST', JSON.stringify(body), new Headers(headers), { DPoP: this.#dpop })
        .catch((error: unknown) => {
          // A refusal with a challenge is thrown; the MCP side below answers it like any other.
          if (error instanceof oidc.WWWAuthenticateChallengeError) return error.response;
          throw error;
        });
    }
    if (this.#accessToken) headers.authorization = `Bearer ${this.#accessToken}`;
    return fetch(this.#mcpUrl, { method: 'POST', headers, body: JSON.stringify(body) });
  }

  /** How the last MCP request carried its token, in DPoP mode: what the proof said (RFC 9449 §4.2). */
  #sentAs(): string {
    if (!this.#dpop || this.#lastProof === undefined) return '';
    const { htm, htu, ath } = proofClaims(this.#lastProof);
    return `, sent as Authorization: DPoP with a proof (htm ${String(htm)}, htu ${String(htu)}${ath ? ', ath = hash of the token' : ''})`;
  }

  /** The challenge of the scheme this client uses: `DPoP` in DPoP mode (Bearer when the server offers no DPoP one). */
  #challengeOf(header: string | null): ReturnType<typeof findChallenge> {
    return (this.#options.dpop ? findChallenge(header, 'DPoP') : undefined) ?? findChallenge(header, 'Bearer');
  }

  async #send(body: Record<string, unknown>, method: string, id?: number): Promise<unknown> {
    let refreshed = false;
    let reauthorized = false;
    let steppedUp = false;
    for (;;) {
      const response = await this.#post(body);
      const challenge = response.headers.get('www-authenticate');
      const sessionId = response.headers.get('mcp-session-id');
      if (sessionId) this.#sessionId = sessionId;

      if (response.status === 401) {
        await response.body?.cancel();
        const bearer = this.#challengeOf(challenge);
        const hadToken = this.#accessToken !== undefined;
        this.#emit(hadToken ? 'mcp' : 'probe', `${method} → 401 Unauthorized${hadToken ? ' (token rejected)' : ''}`, {
          status: 401,
          wwwAuthenticate: challenge,
        });
        if (hadToken && !refreshed && this.#refreshToken) {
          refreshed = true;
          try {
            await this.refresh();
            continue;
          } catch (error) {
            this.#emit('refresh', `refresh failed: ${(error as Error).message}`);
          }
        }
        if (reauthorized) throw new McpHttpError(401, `${method}: still unauthorized after authorizing`, challenge);
        reauthorized = true;
        await this.#authorize(bearer?.params.scope, bearer?.params.resource_metadata);
        continue;
      }

      if (response.status === 403) {
        await response.body?.cancel();
        const bearer = this.#challengeOf(challenge);
        this.#emit('mcp', `${method} → 403 Forbidden${this.#sentAs()}`, { status: 403, wwwAuthenticate: challenge });
        if (bearer?.params.error === 'insufficient_scope' && !steppedUp) {
          steppedUp = true;
          const scope = unionScopes(this.#grantedScope, bearer.params.scope);
          this.#emit('step-up', `step-up: authorizing again for "${scope}"`, {
            granted: this.#grantedScope,
            challenged: bearer.params.scope,
          });
          await this.#authorize(scope, bearer.params.resource_metadata, true);
          continue;
        }
        throw new McpHttpError(403, `${method}: forbidden${bearer?.params.error_description ? `: ${bearer.params.error_description}` : ''}`, challenge);
      }

      if (response.status === 202) {
        await response.body?.cancel();
        this.#emit('mcp', `${method} → 202 Accepted${this.#sentAs()}`);
        return undefined;
      }

      if (!response.ok) {
        const text = await response.text();
        throw new McpHttpError(response.status, `${method}: HTTP ${response.status} ${text.slice(0, 200)}`, challenge);
      }

      const messages = await readJsonRpcMessages(response);
      const answer = messages.find((m) => (m as { id?: unknown }).id === id) ?? messages.at(-1);
      this.#emit('mcp', `${method} → ${response.status} (${response.headers.get('content-type')?.split(';')[0]})${this.#sentAs()}`, {
        answer,
        ...(this.#lastProof ? { dpopProof: proofClaims(this.#lastProof) } : {}),
      });
      return answer;
    }
  }

  /** Steps 2–6: discovery, registration, authorization with PKCE, code exchange. */
  async #authorize(challengedScope: string | undefined, resourceMetadataUrl: string | undefined, stepUp = false): Promise<void> {
    if (challengedScope) this.#challengedScope = challengedScope;
    if (resourceMetadataUrl) this.#resourceMetadataUrl = resourceMetadataUrl;
    if (!this.#server) await this.#discover();
    const scope = stepUp ? challengedScope : (this.#options.scope ?? this.#challengedScope);

    const listener = await LoopbackRedirectListener.listen({ timeoutMs: this.#options.authorizationTimeoutMs ?? 300_000 });
    try {
      if (!this.#config) {
        this.#config = await registerPublicClient(
          this.#server!,
          listener.redirectUri,
          { clientName: this.#options.clientName ?? DEFAULT_CLIENT_NAME, scope: this.#challengedScope },
          this.#emitter,
        );
      }
      if (this.#options.dpop && !this.#dpop) {
        // One key for the client's life: every token is bound to it, and every proof is signed with it.
        this.#dpop = oidc.getDPoPHandle(this.#config, await oidc.randomDPoPKeyPair('ES256'));
        this.#emit('token', 'DPoP key made (ES256): tokens will be bound to it (RFC 9449)');
        // openid-client builds each MCP request's proof itself: keep it on the way out, to show it.
        this.#config[oidc.customFetch] = (url, init) => {
          if (url === this.#mcpUrl.href) this.#lastProof = new Headers(init.headers).get('dpop') ?? undefined;
          return fetch(url, init as RequestInit);
        };
      }
      const tokens = await runAuthorizationCodeFlow(
        {
          config: this.#config,
          resource: this.#resource!,
          scope,
          listener,
          mode: this.#options.mode,
          user: this.#options.user,
          cookies: this.#cookies,
          openBrowser: this.#options.openBrowser,
          dpop: this.#dpop,
        },
        this.#emitter,
      );
      this.#acceptTokens(tokens, 'token');
    } finally {
      await listener.close();
    }
  }

  #acceptTokens(tokens: oidc.TokenEndpointResponse, step: 'token' | 'refresh'): void {
    this.#accessToken = tokens.access_token;
    if (tokens.refresh_token) this.#refreshToken = tokens.refresh_token;
    const claims = peekClaims(tokens.access_token);
    this.#grantedScope = tokens.scope ?? (typeof claims?.scope === 'string' ? claims.scope : this.#grantedScope);
    this.#emit(step, step === 'token' ? 'access token received' : 'access token refreshed', {
      accessToken: redactToken(tokens.access_token),
      refreshToken: tokens.refresh_token ? redactToken(tokens.refresh_token) : undefined,
      tokenType: tokens.token_type,
      boundToKey: typeof (claims?.cnf as { jkt?: unknown } | undefined)?.jkt === 'string' ? (claims?.cnf as { jkt: string }).jkt : undefined,
      expiresIn: tokens.expires_in,
      scope: tokens.scope,
      claims,
    });
  }

  /** Steps 2–3: protected-resource metadata, then authorization server metadata. */
  async #discover(): Promise<void> {
    const metadata = await fetchProtectedResourceMetadata(this.#mcpUrl, this.#resourceMetadataUrl, this.#emitter);
    this.#resource = metadata.resource;
    this.#challengedScope ??= metadata.scopes_supported?.join(' ');
    const { server, config } = await discoverAuthorizationServer(metadata, this.#options.clientId, this.#emitter);
    if (this.#options.clientId) this.#config = config;
    this.#server = server;
  }
}

/** A DPoP proof's claims, read to be shown (the server verifies it; nothing here relies on it). */
function proofClaims(proof: string): Record<string, unknown> {
  const { htm, htu, iat, jti, ath } = peekClaims(proof) ?? {};
  return { htm, htu, iat, jti, ...(ath === undefined ? {} : { ath: `${String(ath).slice(0, 6)}…` }) };
}
