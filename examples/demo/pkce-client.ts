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
 * 7. call MCP with the token (JSON or SSE answers);
 * 8. on 403 `insufficient_scope`, authorize again for the union of granted and challenged scopes, once.
 *
 * Tokens only ever leave this module redacted ({@link redactToken}).
 *
 * CLI: `tsx examples/demo/pkce-client.ts <mcp-url> [--headless|--browser|--manual] [--scope "<scopes>"]
 * [--client-id <id>] [--call <tool> [--args '<json>']]`.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { DEMO_PASSWORD, DEMO_USERNAME } from '../../test/fixtures/authorization-server.js';
import { authorizeAsHeadlessUser, createCookieJar, type CookieJar } from './headless-user.js';
import { findBearerChallenge } from './www-authenticate-parse.js';

/** MCP protocol revision sent in `initialize`. */
export const CLIENT_PROTOCOL_VERSION = '2025-11-25';

/** How the user is brought to the authorization server. */
export type AuthorizationMode = 'headless' | 'browser' | 'manual';

/** One line of the flow's transcript. Data never contains an unredacted token, code or secret. */
export interface TranscriptEvent {
  /** Stable step name, e.g. `challenge`, `resource-metadata`, `token`. */
  step:
    | 'probe'
    | 'challenge'
    | 'resource-metadata'
    | 'authorization-server'
    | 'registration'
    | 'authorization-url'
    | 'user'
    | 'callback'
    | 'token'
    | 'refresh'
    | 'mcp'
    | 'step-up';
  /** One human-readable sentence. */
  message: string;
  /** Structured details (already redacted). */
  data?: Record<string, unknown>;
}

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
  openBrowser?: (url: string) => void | Promise<void>;
  /** How long to wait for the redirect back from the authorization server, in ms. Default 300000. */
  authorizationTimeoutMs?: number;
}

/** Result of an MCP `tools/list`. */
export interface McpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  [key: string]: unknown;
}

/** A JSON-RPC error answered by the MCP server. */
export class McpRpcError extends Error {
  /** JSON-RPC error code. */
  readonly code: number;
  /** JSON-RPC error data. */
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'McpRpcError';
    this.code = code;
    this.data = data;
  }
}

/** An HTTP answer the client could not turn into a JSON-RPC result (after any re-authorization). */
export class McpHttpError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** `WWW-Authenticate` header, if any. */
  readonly wwwAuthenticate: string | null;
  constructor(status: number, message: string, wwwAuthenticate: string | null) {
    super(message);
    this.name = 'McpHttpError';
    this.status = status;
    this.wwwAuthenticate = wwwAuthenticate;
  }
}

/** First 6 characters of a secret followed by `…`: enough to tell tokens apart, useless to replay. */
export function redactToken(token: string | undefined): string {
  if (!token) return '(none)';
  return `${token.slice(0, 6)}…`;
}

/**
 * The canonical form of a resource URL used for comparison (RFC 8707 section 2 and the MCP spec): lowercase
 * scheme and host (the URL parser does that), no fragment, no trailing slash.
 */
export function canonicalResourceUrl(url: string | URL): string {
  const parsed = new URL(url);
  parsed.hash = '';
  const path = parsed.pathname === '/' ? '' : parsed.pathname.replace(/\/+$/, '');
  return `${parsed.protocol}//${parsed.host}${path}${parsed.search}`;
}

/** True for `http:` URLs on a loopback host, the only plain-http URLs this client accepts. */
export function isLoopbackHttpUrl(url: string | URL): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
}

/** Default {@link AuthorizationMode}: headless on CI or without a display, the system browser otherwise. */
export function defaultAuthorizationMode(env: NodeJS.ProcessEnv = process.env, platform = process.platform): AuthorizationMode {
  if (env.CI) return 'headless';
  if (platform === 'darwin' || platform === 'win32') return 'browser';
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'browser' : 'headless';
}

/**
 * The well-known protected-resource metadata URLs to try after the challenge's `resource_metadata`, in the
 * order the MCP spec gives: path-suffixed (RFC 9728 section 3.1), then root.
 */
export function protectedResourceMetadataCandidates(mcpUrl: string | URL): string[] {
  const url = new URL(mcpUrl);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  const candidates = [`${url.origin}/.well-known/oauth-protected-resource${path}`];
  if (path) candidates.push(`${url.origin}/.well-known/oauth-protected-resource`);
  return candidates;
}

function splitScopes(scope: string | undefined): string[] {
  return scope ? scope.split(/\s+/).filter(Boolean) : [];
}

function unionScopes(...lists: Array<string | string[] | undefined>): string {
  const set = new Set<string>();
  for (const list of lists) for (const s of Array.isArray(list) ? list : splitScopes(list)) set.add(s);
  return [...set].join(' ');
}

/** Decodes a JWT's claims for display, or undefined for an opaque token. */
function peekClaims(token: string): Record<string, unknown> | undefined {
  if (token.split('.').length !== 3) return undefined;
  try {
    return decodeJwt(token) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Parses a JSON-RPC answer sent as `application/json` or as a `text/event-stream`. */
async function readJsonRpcMessages(response: Response): Promise<unknown[]> {
  const type = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (!text.trim()) return [];
  if (type.includes('text/event-stream')) {
    const messages: unknown[] = [];
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) messages.push(JSON.parse(data));
    }
    return messages;
  }
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

function openWithSystemBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  child.unref();
}

interface LoopbackListener {
  redirectUri: string;
  callback: Promise<URL>;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (RFC 8252 section 7.3) for the single redirect back from the authorization server. */
async function listenForCallback(timeoutMs: number): Promise<LoopbackListener> {
  let resolveCallback!: (url: URL) => void;
  let rejectCallback!: (error: Error) => void;
  const callback = new Promise<URL>((resolve, reject) => {
    resolveCallback = resolve;
    rejectCallback = reject;
  });
  callback.catch(() => undefined);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    if (url.pathname !== '/callback') {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end('<!DOCTYPE html><title>Signed in</title><p>You can close this window and return to the terminal.</p>');
    resolveCallback(url);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const timer = setTimeout(() => rejectCallback(new Error('timed out waiting for the authorization redirect')), timeoutMs);
  timer.unref();
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    callback,
    async close() {
      clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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

  #emit(step: TranscriptEvent['step'], message: string, data?: Record<string, unknown>): void {
    this.#options.onEvent?.({ step, message, ...(data ? { data } : {}) });
  }

  /** Authorizes (on the first 401) and runs the MCP `initialize` handshake. */
  async connect(): Promise<void> {
    const result = (await this.request('initialize', {
      protocolVersion: CLIENT_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: this.#options.clientName ?? 'mcp-oauth-guard demo client', version: '0.1.0' },
    })) as { protocolVersion?: string } | undefined;
    this.#serverInfo = result;
    this.#protocolVersion = result?.protocolVersion ?? CLIENT_PROTOCOL_VERSION;
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
    const tokens = await oidc.refreshTokenGrant(this.#config, this.#refreshToken, { resource: this.#resource });
    this.#acceptTokens(tokens, 'refresh');
  }

  /** Forgets tokens and the MCP session. Nothing is listening after {@link connect} returns, so no sockets. */
  async close(): Promise<void> {
    this.#accessToken = undefined;
    this.#refreshToken = undefined;
    this.#sessionId = undefined;
  }

  async #post(body: unknown): Promise<Response> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (this.#accessToken) headers.authorization = `Bearer ${this.#accessToken}`;
    if (this.#sessionId) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion) headers['mcp-protocol-version'] = this.#protocolVersion;
    return fetch(this.#mcpUrl, { method: 'POST', headers, body: JSON.stringify(body) });
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
        const bearer = findBearerChallenge(challenge);
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
        const bearer = findBearerChallenge(challenge);
        this.#emit('mcp', `${method} → 403 Forbidden`, { status: 403, wwwAuthenticate: challenge });
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
        this.#emit('mcp', `${method} → 202 Accepted`);
        return undefined;
      }

      if (!response.ok) {
        const text = await response.text();
        throw new McpHttpError(response.status, `${method}: HTTP ${response.status} ${text.slice(0, 200)}`, challenge);
      }

      const messages = await readJsonRpcMessages(response);
      const answer = messages.find((m) => (m as { id?: unknown }).id === id) ?? messages.at(-1);
      this.#emit('mcp', `${method} → ${response.status} (${response.headers.get('content-type')?.split(';')[0]})`, {
        answer,
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

    const listener = await listenForCallback(this.#options.authorizationTimeoutMs ?? 300_000);
    try {
      if (!this.#config) await this.#register(listener.redirectUri);
      const config = this.#config!;
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const parameters: Record<string, string> = {
        redirect_uri: listener.redirectUri,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        resource: this.#resource!,
      };
      if (scope) parameters.scope = scope;
      const authorizationUrl = oidc.buildAuthorizationUrl(config, parameters);
      const mode = this.#options.mode ?? defaultAuthorizationMode();
      this.#emit('authorization-url', `authorization request (${mode})`, {
        url: authorizationUrl.href,
        scope,
        resource: this.#resource,
      });

      if (mode === 'headless') {
        const user = this.#options.user ?? { username: DEMO_USERNAME, password: DEMO_PASSWORD };
        await authorizeAsHeadlessUser(authorizationUrl, {
          ...user,
          redirectUri: listener.redirectUri,
          cookies: this.#cookies,
          onStep: (step) =>
            this.#emit('user', `headless user: ${step.method} ${new URL(step.url).pathname} → ${step.status}${step.page ? ` (${step.page} page)` : ''}`),
        });
      } else if (mode === 'browser') {
        await (this.#options.openBrowser ?? openWithSystemBrowser)(authorizationUrl.href);
        this.#emit('user', 'opened the system browser; waiting for the redirect');
      } else {
        this.#emit('user', `open this URL in a browser: ${authorizationUrl.href}`);
      }

      const callbackUrl = await listener.callback;
      const code = callbackUrl.searchParams.get('code');
      this.#emit('callback', `redirect received on ${listener.redirectUri}`, {
        code: redactToken(code ?? undefined),
        error: callbackUrl.searchParams.get('error') ?? undefined,
        iss: callbackUrl.searchParams.get('iss') ?? undefined,
      });
      const tokens = await oidc.authorizationCodeGrant(
        config,
        callbackUrl,
        { pkceCodeVerifier: codeVerifier, expectedState: state },
        { resource: this.#resource! },
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
      expiresIn: tokens.expires_in,
      scope: tokens.scope,
      claims,
    });
  }

  /** Steps 2–3: protected-resource metadata, then authorization server metadata. */
  async #discover(): Promise<void> {
    const expected = canonicalResourceUrl(this.#mcpUrl);
    const candidates = [
      ...(this.#resourceMetadataUrl ? [this.#resourceMetadataUrl] : []),
      ...protectedResourceMetadataCandidates(this.#mcpUrl),
    ];
    let metadata: { resource?: string; authorization_servers?: string[]; scopes_supported?: string[] } | undefined;
    let from: string | undefined;
    for (const candidate of candidates) {
      const response = await fetch(candidate, { headers: { accept: 'application/json' } }).catch(() => undefined);
      if (!response?.ok) {
        await response?.body?.cancel();
        continue;
      }
      metadata = (await response.json()) as typeof metadata;
      from = candidate;
      break;
    }
    if (!metadata || !from) throw new Error(`no protected resource metadata found (tried ${candidates.join(', ')})`);
    this.#emit('resource-metadata', `protected resource metadata from ${from}`, { ...metadata });
    // RFC 9728 section 3.3: metadata naming another resource must not be used (it could steer tokens elsewhere).
    if (!metadata.resource || canonicalResourceUrl(metadata.resource) !== expected) {
      throw new Error(`protected resource metadata names resource ${metadata.resource ?? '(none)'}, expected ${expected}`);
    }
    this.#resource = metadata.resource;
    this.#challengedScope ??= metadata.scopes_supported?.join(' ');
    const issuer = metadata.authorization_servers?.[0];
    if (!issuer) throw new Error('protected resource metadata lists no authorization_servers');
    const issuerUrl = new URL(issuer);
    if (issuerUrl.protocol !== 'https:' && !isLoopbackHttpUrl(issuerUrl)) {
      throw new Error(`authorization server ${issuer} is plain http on a non-loopback host`);
    }
    const execute = isLoopbackHttpUrl(issuerUrl) ? [oidc.allowInsecureRequests] : [];

    let config: oidc.Configuration | undefined;
    let lastError: unknown;
    for (const algorithm of ['oauth2', 'oidc'] as const) {
      try {
        // The client id is not known yet when registering dynamically; a placeholder is replaced after it.
        config = await oidc.discovery(issuerUrl, this.#options.clientId ?? 'unregistered', undefined, oidc.None(), {
          execute,
          algorithm,
        });
        break;
      } catch (error) {
        lastError = error;
      }
    }
    if (!config) throw new Error(`authorization server discovery failed for ${issuer}`, { cause: lastError });
    const server = config.serverMetadata();
    this.#emit('authorization-server', `authorization server ${server.issuer}`, {
      issuer: server.issuer,
      authorization_endpoint: server.authorization_endpoint,
      token_endpoint: server.token_endpoint,
      registration_endpoint: server.registration_endpoint,
      code_challenge_methods_supported: server.code_challenge_methods_supported,
      client_id_metadata_document_supported: server.client_id_metadata_document_supported,
    });
    if (!server.code_challenge_methods_supported?.includes('S256')) {
      // MCP: clients MUST refuse to proceed without PKCE S256 support advertised.
      throw new Error('authorization server does not advertise PKCE S256');
    }
    if (this.#options.clientId) {
      const kind = /^https:\/\//.test(this.#options.clientId)
        ? server.client_id_metadata_document_supported
          ? 'Client ID Metadata Document'
          : 'pre-registered (the AS does not advertise Client ID Metadata Documents)'
        : 'pre-registered';
      this.#emit('registration', `using client id ${this.#options.clientId} (${kind})`);
      this.#config = config;
    }
    this.#server = server;
  }

  /** Step 4: RFC 7591 registration of a public native client. */
  async #register(redirectUri: string): Promise<void> {
    const server = this.#server!;
    if (!server.registration_endpoint) {
      throw new Error('the authorization server offers no dynamic registration; pass a client id');
    }
    const metadata = {
      client_name: this.#options.clientName ?? 'mcp-oauth-guard demo client',
      application_type: 'native',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      // Like the MCP TypeScript SDK 1.x client: register with the first challenge's scope.
      ...(this.#challengedScope ? { scope: this.#challengedScope } : {}),
    };
    const response = await fetch(server.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(metadata),
    });
    const registered = (await response.json()) as Record<string, unknown> & { client_id?: string };
    if (response.status !== 201 || typeof registered.client_id !== 'string') {
      throw new Error(`dynamic client registration failed: HTTP ${response.status} ${JSON.stringify(registered)}`);
    }
    const { client_secret: secret, registration_access_token: rat, ...shown } = registered;
    this.#emit('registration', `registered client ${registered.client_id}`, {
      ...shown,
      ...(secret ? { client_secret: redactToken(String(secret)) } : {}),
      ...(rat ? { registration_access_token: redactToken(String(rat)) } : {}),
    });
    const config = new oidc.Configuration(server, registered.client_id, undefined, oidc.None());
    if (isLoopbackHttpUrl(server.issuer)) oidc.allowInsecureRequests(config);
    this.#config = config;
  }
}

/** Options of {@link runPkceClientFlow}. */
export interface PkceClientFlowOptions extends McpOAuthClientOptions {
  /** A tool to call after listing, with its arguments. */
  call?: { name: string; arguments?: Record<string, unknown> };
}

/** Result of {@link runPkceClientFlow}. */
export interface PkceClientFlowResult {
  tools: McpTool[];
  callResult?: unknown;
  grantedScope?: string;
  accessTokenClaims?: Record<string, unknown>;
}

/** Connects, lists tools and optionally calls one: the whole demo flow in one call. */
export async function runPkceClientFlow(options: PkceClientFlowOptions): Promise<PkceClientFlowResult> {
  const client = new McpOAuthClient(options);
  try {
    await client.connect();
    const tools = await client.listTools();
    const callResult = options.call ? await client.callTool(options.call.name, options.call.arguments ?? {}) : undefined;
    return { tools, callResult, grantedScope: client.grantedScope, accessTokenClaims: client.accessTokenClaims };
  } finally {
    await client.close();
  }
}

/** Prints a transcript event as a few readable lines. */
export function formatTranscriptEvent(event: TranscriptEvent): string {
  const head = `[${event.step}] ${event.message}`;
  if (!event.data) return head;
  const body = JSON.stringify(event.data, null, 2)
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
  return `${head}\n${body}`;
}

async function main(argv: string[]): Promise<void> {
  const args = [...argv];
  const take = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    if (at === -1) return undefined;
    const [, value] = args.splice(at, 2);
    return value;
  };
  const has = (flag: string): boolean => {
    const at = args.indexOf(flag);
    if (at !== -1) args.splice(at, 1);
    return at !== -1;
  };
  const mode: AuthorizationMode | undefined = has('--headless') ? 'headless' : has('--browser') ? 'browser' : has('--manual') ? 'manual' : undefined;
  const scope = take('--scope');
  const clientId = take('--client-id');
  const callName = take('--call');
  const callArgs = take('--args');
  const [mcpUrl] = args;
  if (!mcpUrl) {
    console.error('usage: tsx examples/demo/pkce-client.ts <mcp-url> [--headless|--browser|--manual] [--scope "<scopes>"] [--client-id <id>] [--call <tool> [--args \'<json>\']]');
    process.exitCode = 2;
    return;
  }
  const result = await runPkceClientFlow({
    mcpUrl,
    mode,
    scope,
    clientId,
    onEvent: (event) => console.log(formatTranscriptEvent(event)),
    ...(callName ? { call: { name: callName, arguments: callArgs ? (JSON.parse(callArgs) as Record<string, unknown>) : {} } } : {}),
  });
  console.log(`tools: ${result.tools.map((tool) => tool.name).join(', ') || '(none)'}`);
  if (callName) console.log(`${callName} →`, JSON.stringify(result.callResult, null, 2));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
