/**
 * A demo and test OAuth 2.1 authorization server for MCP, built on oidc-provider and run in-process.
 *
 * It exists so the demo and the tests have a real, standards-following issuer on 127.0.0.1: RFC 8414 and
 * OpenID discovery, RFC 7591 open dynamic client registration (public native clients with loopback
 * redirects, RFC 8252), authorization code + PKCE S256 (required), RFC 8707 resource indicators issuing
 * RFC 9068 JWT access tokens whose `aud` is the MCP resource, refresh tokens, introspection (RFC 7662),
 * and a plain HTML login and consent page a headless browser or a scripted "user" can drive.
 *
 * It is NOT a production identity provider: users, clients and tokens live in memory, the password check
 * is a string comparison and signing keys are regenerated on every start. What a production identity
 * provider must do for an MCP server protected by mcp-oauth-guard is the same as what this one does:
 * issue access tokens whose `aud` is the MCP server's canonical URL (RFC 8707) and that carry the granted
 * scopes. How that is spelled elsewhere:
 * - Auth0: create an API whose Identifier (the "audience") is the MCP URL; clients pass it as `audience`
 *   or `resource`.
 * - Keycloak: a client scope with an "Audience" protocol mapper naming the MCP URL.
 * - Okta: a custom authorization server whose Audience is the MCP URL (the org server cannot do it).
 * - Microsoft Entra ID: an app registration whose Application ID URI is the MCP URL; tokens then carry it
 *   (or the app's client id, depending on the token version) as `aud`.
 *
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type {
  Account,
  Adapter,
  AdapterPayload,
  Interaction,
  Provider,
  ResourceServerInfo,
} from 'oidc-provider';

/** Username of the built-in demo user. */
export const DEMO_USERNAME = 'demo';
/** Password of the built-in demo user. */
export const DEMO_PASSWORD = 'demo-password';
/** Scopes the demo notes server understands, from least to most privileged. */
export const DEMO_SCOPES: readonly string[] = ['notes:read', 'notes:write', 'notes:admin'];
/** Client id of the built-in confidential client used for client_credentials, introspection and minting. */
export const SERVICE_CLIENT_ID = 'mcp-oauth-guard-service';

/** A user who can sign in on the login page. */
export interface DemoUser {
  /** What the user types into `input[name=login]`. */
  username: string;
  /** What the user types into `input[name=password]`. */
  password: string;
  /** The `sub` of tokens issued to this user. Default: the username. */
  accountId?: string;
  /** Display name, returned as the `name` claim. */
  name?: string;
}

/** An MCP server (resource server) this authorization server issues tokens for. */
export interface ResourceOptions {
  /** Scopes a token for this resource may carry; requested scopes outside this list are dropped. */
  scopes: readonly string[];
  /** `jwt` (default, RFC 9068) or `opaque` (only verifiable by introspection). */
  accessTokenFormat?: 'jwt' | 'opaque';
  /** Access token lifetime for this resource, in seconds. Default: `ttl.accessToken`. */
  accessTokenTtl?: number;
}

/** Lifetimes, all in seconds. */
export interface AuthorizationServerTtlOptions {
  /** Default: 3600. */
  accessToken?: number;
  /** Default: 60. */
  authorizationCode?: number;
  /** Default: 14 days. */
  refreshToken?: number;
  /** Default: 3600. */
  idToken?: number;
  /** Default: 600. */
  interaction?: number;
  /** Default: 1 day. */
  session?: number;
  /** Default: 14 days. */
  grant?: number;
}

/** Options of {@link startAuthorizationServer}. */
export interface AuthorizationServerOptions {
  /** Interface to listen on. Default `127.0.0.1`; the issuer uses the same spelling. */
  host?: string;
  /** TCP port. Default `0` (ephemeral); the demo uses a fixed one such as 9400. */
  port?: number;
  /**
   * Resources (MCP server canonical URLs) tokens may be issued for, with their scopes. Requests naming any
   * other resource fail with `invalid_target`. More can be added later with
   * {@link AuthorizationServer.addResource}, which helps when the MCP server's port is only known after
   * it listens. Default: none.
   */
  resources?: Record<string, ResourceOptions>;
  /**
   * Resource used when a client sends no `resource` parameter (older MCP clients). Default: the only
   * configured resource when exactly one is configured, otherwise none (the token then has no audience
   * for an MCP server and is opaque).
   */
  defaultResource?: string;
  /** JWS algorithm of access and ID tokens; a fresh key is generated at start. Default `ES256`. */
  signingAlg?: 'ES256' | 'RS256';
  /** Token and session lifetimes. */
  ttl?: AuthorizationServerTtlOptions;
  /** Users allowed to sign in. Default: one user, {@link DEMO_USERNAME} / {@link DEMO_PASSWORD}. */
  users?: readonly DemoUser[];
  /** Extra scopes to advertise in `scopes_supported` besides `openid`, `offline_access` and resource scopes. */
  extraScopes?: readonly string[];
  /**
   * Accept OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the
   * registration the MCP 2025-11-25 revision prefers): an `https` URL used as `client_id` is fetched and
   * its document used as the client's metadata. Off by default, because the AS then fetches URLs chosen by
   * clients. `fetch` replaces the network fetch (tests serve documents from memory with it).
   */
  clientIdMetadataDocuments?: boolean | { fetch?: (url: string, init: RequestInit) => Promise<Response> };
}

/** Options of {@link AuthorizationServer.issueAccessToken}. */
export interface IssueAccessTokenOptions {
  /** Resource (MCP server URL) that becomes the token's `aud`. Must be configured. */
  resource: string;
  /** Space-separated scopes, carried as-is (no filtering, so tests can mint any combination). */
  scope: string;
  /** Subject (`sub`). Default: none, and the token's `sub` is then the client id, as for client_credentials. */
  sub?: string;
  /** Client the token is issued to (`client_id`). Default {@link SERVICE_CLIENT_ID}. Must exist. */
  clientId?: string;
  /**
   * Lifetime in seconds. Default: the resource's access token lifetime. Zero or negative mints a token that
   * already expired that many seconds ago (issued a minute before it expired).
   */
  expiresIn?: number;
  /** Extra claims placed in the token. */
  extra?: Record<string, unknown>;
}

/** A running authorization server. */
export interface AuthorizationServer {
  /** Issuer identifier, `http://<host>:<port>` with no trailing slash. */
  readonly issuer: string;
  /** Same as {@link issuer}; the base URL of every endpoint. */
  readonly url: string;
  /** JWKS URL with the public signing key. */
  readonly jwksUri: string;
  /** The oidc-provider instance, for tests that need its events or models. */
  readonly provider: Provider;
  /** Users who can sign in, by username. */
  readonly users: ReadonlyMap<string, Readonly<DemoUser> & { accountId: string }>;
  /** Configured resources, by URL. */
  readonly resources: ReadonlyMap<string, Readonly<ResourceOptions>>;
  /** Credentials of the built-in confidential client (client_credentials, introspection, revocation). */
  readonly serviceClient: { readonly clientId: string; readonly clientSecret: string };
  /** Adds (or replaces) a resource tokens may be issued for. */
  addResource(resource: string, options: ResourceOptions): void;
  /** Mints an access token with this server's keys and rules, without a browser flow. */
  issueAccessToken(options: IssueAccessTokenOptions): Promise<string>;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

type ProviderModule = typeof import('oidc-provider');

let providerModule: Promise<ProviderModule> | undefined;

/**
 * Imports oidc-provider once. Its import prints an "Unsupported runtime" warning on Node 20 that is known
 * and harmless here (see the project notes), so that single line is dropped; every other warning passes.
 */
function loadProviderModule(): Promise<ProviderModule> {
  providerModule ??= (async () => {
    const originalWarn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('oidc-provider WARNING: Unsupported runtime')) return;
      originalWarn.apply(console, args);
    };
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = originalWarn;
    }
  })();
  return providerModule;
}

/**
 * Per-server in-memory storage. oidc-provider's bundled memory adapter shares one store across instances in
 * the same process and warns on every start; tests run several servers side by side, so each gets its own.
 */
function createMemoryAdapterFactory(): (model: string) => Adapter {
  const entries = new Map<string, { payload: AdapterPayload; expiresAt: number }>();
  const byUid = new Map<string, string>();
  const byUserCode = new Map<string, string>();
  const byGrant = new Map<string, Set<string>>();

  const read = (key: string): AdapterPayload | undefined => {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry.payload;
  };

  return (model) => {
    const keyFor = (id: string) => `${model}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        const key = keyFor(id);
        const expiresAt = expiresIn > 0 ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
        entries.set(key, { payload: structuredClone(payload), expiresAt });
        if (payload.uid) byUid.set(payload.uid, id);
        if (payload.userCode) byUserCode.set(payload.userCode, id);
        if (payload.grantId) {
          let keys = byGrant.get(payload.grantId);
          if (!keys) byGrant.set(payload.grantId, (keys = new Set()));
          keys.add(key);
        }
      },
      async find(id) {
        const payload = read(keyFor(id));
        return payload && structuredClone(payload);
      },
      async findByUid(uid) {
        const id = byUid.get(uid);
        return id === undefined ? undefined : this.find(id);
      },
      async findByUserCode(userCode) {
        const id = byUserCode.get(userCode);
        return id === undefined ? undefined : this.find(id);
      },
      async consume(id) {
        const payload = read(keyFor(id));
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        entries.delete(keyFor(id));
      },
      async revokeByGrantId(grantId) {
        for (const key of byGrant.get(grantId) ?? []) entries.delete(key);
        byGrant.delete(grantId);
      },
    };
  };
}

function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
label,input,button{display:block;width:100%;margin:.4rem 0}input,button{padding:.5rem;box-sizing:border-box}
.error{color:#b00020}code{background:#eee;padding:0 .2rem}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    // A login form is tiny; refusing big bodies keeps the demo from buffering arbitrary uploads.
    if (size > 16 * 1024) throw new Error('form body too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(html);
}

function renderLogin(interaction: Interaction, clientName: string, error?: string): string {
  const uid = escapeHtml(interaction.uid);
  return page(
    'Sign in',
    `<p>Sign in to authorize <strong id="client-name">${escapeHtml(clientName)}</strong>.</p>
${error ? `<p class="error" id="error">${escapeHtml(error)}</p>` : ''}
<form id="login-form" method="post" action="/interaction/${uid}/login" autocomplete="off">
<label for="login">Username</label><input id="login" name="login" type="text" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" required>
<button id="submit" type="submit">Sign in</button>
</form>`,
  );
}

function renderConsent(interaction: Interaction, clientName: string): string {
  const uid = escapeHtml(interaction.uid);
  const { missingOIDCScope = [], missingResourceScopes = {} } = interaction.prompt.details;
  const items: string[] = [];
  for (const [resource, scopes] of Object.entries(missingResourceScopes)) {
    for (const scope of scopes) {
      items.push(
        `<li><code class="scope" data-resource="${escapeHtml(resource)}">${escapeHtml(scope)}</code> on <code class="resource">${escapeHtml(resource)}</code></li>`,
      );
    }
  }
  // oidc-provider also reports resource scopes as missing OpenID scopes; list each permission once.
  const listed = new Set(Object.values(missingResourceScopes).flat());
  for (const scope of missingOIDCScope) {
    if (listed.has(scope)) continue;
    items.push(`<li><code class="scope">${escapeHtml(scope)}</code></li>`);
  }
  // Native clients are always asked to confirm (oidc-provider's `native_client_prompt`), even with nothing new.
  const list = items.length ? `<ul id="scopes">${items.join('\n')}</ul>` : '<p id="scopes">No new permissions.</p>';
  const resource = interaction.params.resource;
  const resources = Array.isArray(resource) ? resource : resource ? [resource] : [];
  return page(
    'Authorize access',
    `<p><strong id="client-name">${escapeHtml(clientName)}</strong> asks for access to
${resources.map((r) => `<code id="resource">${escapeHtml(r)}</code>`).join(', ') || 'your account'}:</p>
${list}
<form id="consent-form" method="post" action="/interaction/${uid}/confirm">
<button id="approve" type="submit" name="decision" value="approve">Approve</button>
</form>
<form id="deny-form" method="post" action="/interaction/${uid}/abort">
<button id="deny" type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

/**
 * Starts the demo authorization server on 127.0.0.1.
 *
 * @example
 * ```ts
 * const as = await startAuthorizationServer({ resources: { 'http://127.0.0.1:9300/mcp': { scopes: DEMO_SCOPES } } });
 * const token = await as.issueAccessToken({ resource: 'http://127.0.0.1:9300/mcp', scope: 'notes:read', sub: 'demo' });
 * await as.close();
 * ```
 */
export async function startAuthorizationServer(options: AuthorizationServerOptions = {}): Promise<AuthorizationServer> {
  const host = options.host ?? '127.0.0.1';
  const signingAlg = options.signingAlg ?? 'ES256';
  const ttl = {
    accessToken: 3600,
    authorizationCode: 60,
    refreshToken: 14 * 24 * 3600,
    idToken: 3600,
    interaction: 600,
    session: 24 * 3600,
    grant: 14 * 24 * 3600,
    ...options.ttl,
  };

  const resources = new Map<string, ResourceOptions>();
  const addResource = (resource: string, resourceOptions: ResourceOptions): void => {
    const url = URL.parse(resource);
    // RFC 8707 section 2: an absolute URI without a fragment. Stored exactly as given, because oidc-provider
    // compares the requested string and the token's `aud` is that string.
    if (!url || url.hash || resource.includes('#')) throw new TypeError(`resources: invalid resource URI ${resource}`);
    if (!resourceOptions.scopes.length) throw new TypeError(`resources[${resource}].scopes must not be empty`);
    resources.set(resource, { ...resourceOptions, scopes: [...resourceOptions.scopes] });
  };
  for (const [resource, resourceOptions] of Object.entries(options.resources ?? {})) addResource(resource, resourceOptions);
  if (options.defaultResource !== undefined && !resources.has(options.defaultResource)) {
    throw new TypeError('defaultResource must be one of the configured resources');
  }

  const users = new Map<string, DemoUser & { accountId: string }>();
  for (const user of options.users ?? [{ username: DEMO_USERNAME, password: DEMO_PASSWORD, name: 'Demo User' }]) {
    users.set(user.username, { ...user, accountId: user.accountId ?? user.username });
  }
  const accounts = new Map([...users.values()].map((user) => [user.accountId, user]));

  const scopes = new Set(['openid', 'offline_access', ...DEMO_SCOPES, ...(options.extraScopes ?? [])]);
  for (const resource of resources.values()) for (const scope of resource.scopes) scopes.add(scope);

  const { privateKey } = await generateKeyPair(signingAlg, { extractable: true });
  const signingJwk = { ...(await exportJWK(privateKey)), alg: signingAlg, use: 'sig', kid: randomUUID() };
  const serviceClient = { clientId: SERVICE_CLIENT_ID, clientSecret: randomBytes(24).toString('base64url') };

  const resourceServerInfo = (resource: string): ResourceServerInfo | undefined => {
    const entry = resources.get(resource);
    if (!entry) return undefined;
    const format = entry.accessTokenFormat ?? 'jwt';
    return {
      scope: entry.scopes.join(' '),
      audience: resource,
      accessTokenTTL: entry.accessTokenTtl ?? ttl.accessToken,
      accessTokenFormat: format,
      ...(format === 'jwt' ? { jwt: { sign: { alg: signingAlg } } } : {}),
    };
  };

  const cimd = options.clientIdMetadataDocuments;
  const cimdFetch = typeof cimd === 'object' ? cimd.fetch : undefined;

  const { default: ProviderClass, errors } = await loadProviderModule();

  // The port is only known after listening, and the issuer must contain it: listen first, then build the
  // provider, and route requests to it once it exists.
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (!handle) {
      res.statusCode = 503;
      res.end();
      return;
    }
    handle(req, res);
  });
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  const issuer = `http://${hostInUrl}:${port}`;

  const provider = new ProviderClass(issuer, {
    adapter: createMemoryAdapterFactory(),
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    scopes: [...scopes],
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'] },
    clients: [
      {
        client_id: serviceClient.clientId,
        client_secret: serviceClient.clientSecret,
        client_name: 'mcp-oauth-guard service client',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: signingAlg,
    },
    // 'none' is what public clients (native MCP clients, RFC 8252) register with; it is off by default.
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    responseTypes: ['code'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // A confidential client (the resource server) may introspect any token; a public client only its own.
        allowedPolicy: async (
          _ctx: unknown,
          caller: { clientAuthMethod: string; clientId: string },
          token: { clientId?: string },
        ) => caller.clientAuthMethod !== 'none' || token.clientId === caller.clientId,
      },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, caller: { clientId: string }, token: { clientId?: string }) =>
          token.clientId === caller.clientId,
      },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string[]) => {
          if (oneOf) return oneOf;
          if (options.defaultResource !== undefined) return options.defaultResource;
          return resources.size === 1 ? [...resources.keys()][0] : undefined;
        },
        // Token and refresh requests without `resource` keep the audience chosen at authorization time,
        // instead of falling back to a userinfo-only opaque token when `openid` was also granted.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => {
          const info = resourceServerInfo(resource);
          if (!info) throw new errors.InvalidTarget(`unknown resource ${resource}`);
          return info;
        },
      },
      ...(cimd
        ? {
            clientIdMetadataDocument: {
              enabled: true,
              ack: 'draft-02',
              allowFetch: async () => true,
              allowClient: async () => true,
            },
          }
        : {}),
    },
    ...(cimdFetch ? { fetch: cimdFetch } : {}),
    extraClientMetadata: {
      // RFC 7591 lets a client register a `scope`; oidc-provider then refuses any later authorization request
      // asking for more. MCP clients (the TypeScript SDK 1.x client among them) register with the scope of
      // the first challenge, so step-up would always fail with invalid_scope. Scopes are bounded by the
      // resource's list and the user's consent instead, so the registered value is dropped.
      properties: ['scope'],
      validator: (ctx: { oidc?: { route?: string } } | undefined, key: string, _value: unknown, metadata: Record<string, unknown>) => {
        if (key === 'scope' && ctx?.oidc?.route === 'registration') delete metadata.scope;
      },
    },
    // Issue refresh tokens to every client registered for the refresh_token grant, whether or not it asked
    // for offline_access: MCP clients rarely do, and the 2026-07-28 revision advises against challenging for it.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    // Keeps the `extra` claims of tokens minted by issueAccessToken; flow-issued tokens have none.
    extraTokenClaims: async (_ctx: unknown, token: { extra?: Record<string, unknown> }) => token.extra,
    // Tokens outlive the login cookie: an MCP client is not a browser tab.
    expiresWithSession: async () => false,
    findAccount: async (_ctx: unknown, sub: string): Promise<Account | undefined> => {
      const user = accounts.get(sub);
      if (!user) return undefined;
      return {
        accountId: user.accountId,
        claims: () => ({ sub: user.accountId, name: user.name, preferred_username: user.username }),
      };
    },
    interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // A demo AS serves any origin, so a browser-based MCP client (e.g. an inspector) can use it.
    clientBasedCORS: () => true,
    renderError: async (ctx: { type: string; body: string }, out: Record<string, string>) => {
      ctx.type = 'html';
      ctx.body = page(
        'Authorization error',
        Object.entries(out)
          .map(([k, v]) => `<p><strong>${escapeHtml(k)}</strong>: <span id="${escapeHtml(k)}">${escapeHtml(v)}</span></p>`)
          .join('\n'),
      );
    },
    ttl: {
      AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) =>
        token.resourceServer?.accessTokenTTL ?? ttl.accessToken,
      ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) =>
        token.resourceServer?.accessTokenTTL ?? ttl.accessToken,
      AuthorizationCode: ttl.authorizationCode,
      RefreshToken: ttl.refreshToken,
      IdToken: ttl.idToken,
      Interaction: ttl.interaction,
      Session: ttl.session,
      Grant: ttl.grant,
    },
  });

  const callback = provider.callback();

  const handleInteraction = async (req: IncomingMessage, res: ServerResponse, path: string[]): Promise<void> => {
    const [, uid, action] = path;
    const interaction = await provider.interactionDetails(req, res);
    // The interaction cookie names the interaction; a URL for another one is a stale or forged link.
    if (interaction.uid !== uid) {
      sendHtml(res, 400, page('Authorization error', '<p id="error">This sign-in link does not match your session.</p>'));
      return;
    }
    const clientId = String(interaction.params.client_id ?? '');
    const client = await provider.Client.find(clientId);
    const clientName = client?.clientName ?? clientId;

    if (req.method === 'GET' && action === undefined) {
      if (interaction.prompt.name === 'login') sendHtml(res, 200, renderLogin(interaction, clientName));
      else sendHtml(res, 200, renderConsent(interaction, clientName));
      return;
    }
    if (req.method !== 'POST') {
      res.statusCode = 405;
      res.setHeader('Allow', action === undefined ? 'GET' : 'POST');
      res.end();
      return;
    }
    const form = await readForm(req);

    if (action === 'login' && interaction.prompt.name === 'login') {
      const user = users.get(form.get('login') ?? '');
      if (!user || user.password !== form.get('password')) {
        sendHtml(res, 401, renderLogin(interaction, clientName, 'Wrong username or password.'));
        return;
      }
      await provider.interactionFinished(req, res, { login: { accountId: user.accountId } }, { mergeWithLastSubmission: false });
      return;
    }

    if (action === 'confirm' && interaction.prompt.name === 'consent') {
      const accountId = interaction.session?.accountId;
      if (!accountId) throw new Error('consent without a signed-in user');
      const grant =
        (interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined) ??
        new provider.Grant({ accountId, clientId });
      const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = interaction.prompt.details;
      if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
      if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
      for (const [resource, granted] of Object.entries(missingResourceScopes ?? {})) {
        grant.addResourceScope(resource, granted.join(' '));
      }
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }

    if (action === 'abort') {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user denied the request.' },
        { mergeWithLastSubmission: false },
      );
      return;
    }

    sendHtml(res, 400, page('Authorization error', '<p id="error">Unexpected step for this sign-in.</p>'));
  };

  handle = (req, res) => {
    const path = new URL(req.url ?? '/', issuer).pathname.split('/').filter(Boolean);
    if (path[0] !== 'interaction') {
      callback(req, res);
      return;
    }
    handleInteraction(req, res, path).catch((error: unknown) => {
      // Expired or missing interaction cookies surface here as oidc-provider errors with a status.
      const status = (error as { status?: number }).status ?? 500;
      if (status >= 500) console.error('authorization-server: interaction failed', error);
      if (!res.headersSent) {
        sendHtml(res, status, page('Authorization error', `<p id="error">${escapeHtml((error as Error).message)}</p>`));
      } else {
        res.end();
      }
    });
  };

  const issueAccessToken = async (mint: IssueAccessTokenOptions): Promise<string> => {
    const info = resourceServerInfo(mint.resource);
    if (!info) throw new TypeError(`issueAccessToken: unknown resource ${mint.resource}`);
    const clientId = mint.clientId ?? serviceClient.clientId;
    const client = await provider.Client.find(clientId);
    if (!client) throw new TypeError(`issueAccessToken: unknown client ${clientId}`);
    const now = Math.floor(Date.now() / 1000);
    const lifetime = mint.expiresIn ?? info.accessTokenTTL ?? ttl.accessToken;
    const times = lifetime > 0 ? { expiresIn: lifetime } : { iat: now + lifetime - 60, exp: now + lifetime };
    const token = new provider.AccessToken({
      client,
      accountId: mint.sub,
      scope: mint.scope,
      resourceServer: new provider.ResourceServer(mint.resource, info),
      gty: mint.sub === undefined ? 'client_credentials' : 'authorization_code',
      extra: mint.extra,
      ...times,
    });
    return token.save();
  };

  return {
    issuer,
    url: issuer,
    jwksUri: `${issuer}/jwks`,
    provider,
    users,
    resources,
    serviceClient,
    addResource,
    issueAccessToken,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
