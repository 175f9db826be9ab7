import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/** Options of {@link startTestIssuer}. */
export interface TestIssuerOptions {
  /** One signing key is minted per algorithm, with `kid` `key-<alg>`. Default `['ES256']`. */
  algs?: readonly string[];
  /** Which well-known metadata documents are served. Default `'oauth2'` (RFC 8414 only). */
  discovery?: 'oauth2' | 'oidc' | 'both';
  /** Fields merged into the metadata document (e.g. `{ issuer: 'https://elsewhere' }`). */
  metadata?: Record<string, unknown>;
  /** Client credentials the introspection endpoint accepts (HTTP Basic). Default `rs-client` / `rs-secret`. */
  introspectionClient?: { clientId: string; clientSecret: string };
  /** Spell the issuer with a trailing slash (`http://127.0.0.1:<port>/`), as Entra v1 does. Default false. */
  trailingSlash?: boolean;
}

/** Options of {@link TestIssuer.sign}. */
export interface SignOptions {
  /** Signing algorithm; must be one of the issuer's `algs`. Default the first. */
  alg?: string;
  /** Header fields merged over `{ alg, kid }` (e.g. `typ`, `jwk`, `jku`, or `kid: undefined`). */
  header?: Record<string, unknown>;
  /** Sign with this key instead of the issuer's (an attacker's key). */
  key?: CryptoKey;
}

/** A real authorization server stand-in on 127.0.0.1: metadata, JWKS and introspection over node:http. */
export interface TestIssuer {
  /** Issuer identifier, `http://127.0.0.1:<port>` (no trailing slash unless `trailingSlash`). */
  issuer: string;
  jwksUri: string;
  introspectionEndpoint: string;
  /** The public JWKS served. */
  jwks: { keys: JWK[] };
  /**
   * Signs a JWT with defaults `iss` = issuer, `iat` = now, `exp` = now + 300 s. Claims override the defaults;
   * a claim set to `undefined` is left out.
   */
  sign(claims?: JWTPayload, options?: SignOptions): Promise<string>;
  /** Requests received per path (`/jwks`, `/introspect`, `/.well-known/...`). */
  requests(path: string): number;
  /** Requests received in total. */
  totalRequests(): number;
  /** JWKS answers 500 while true. */
  setJwksDown(down: boolean): void;
  /** JWKS requests never get an answer while true. */
  setJwksHang(hang: boolean): void;
  /** Metadata documents answer 500 while true. */
  setDiscoveryDown(down: boolean): void;
  /** Metadata requests never get an answer while true. */
  setDiscoveryHang(hang: boolean): void;
  /** The introspection answer for `token` (default `{ active: false }`). */
  setIntrospection(token: string, response: Record<string, unknown>): void;
  /**
   * While set, every authenticated introspection request gets this answer instead (a 429 with `Retry-After`, a
   * 500…): `body` as it is, with `headers`. Undefined again: the answers of {@link setIntrospection}.
   */
  setIntrospectionFailure(answer: { status: number; headers?: Record<string, string>; body?: string } | undefined): void;
  /** Stops the server and drops open connections (hanging ones included). */
  close(): Promise<void>;
}

/** Starts a {@link TestIssuer} on 127.0.0.1, port 0. */
export async function startTestIssuer(options: TestIssuerOptions = {}): Promise<TestIssuer> {
  const algs = options.algs ?? ['ES256'];
  const keys = new Map<string, CryptoKey>();
  const jwks: { keys: JWK[] } = { keys: [] };
  for (const alg of algs) {
    const pair = await generateKeyPair(alg);
    keys.set(alg, pair.privateKey);
    jwks.keys.push({ ...(await exportJWK(pair.publicKey)), kid: `key-${alg}`, alg, use: 'sig' });
  }
  const client = options.introspectionClient ?? { clientId: 'rs-client', clientSecret: 'rs-secret' };
  // RFC 6749 §2.3.1: id and secret are form-urlencoded before the Basic encoding; decode the same way.
  const isIntrospectionClient = (authorization: string | undefined): boolean => {
    const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(authorization ?? '');
    if (match === null) return false;
    const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) return false;
    const formDecode = (value: string): string => decodeURIComponent(value.replace(/\+/g, ' '));
    return formDecode(decoded.slice(0, colon)) === client.clientId && formDecode(decoded.slice(colon + 1)) === client.clientSecret;
  };

  const counts = new Map<string, number>();
  const introspection = new Map<string, Record<string, unknown>>();
  const discovery = options.discovery ?? 'oauth2';
  let jwksDown = false;
  let jwksHang = false;
  let discoveryDown = false;
  let discoveryHang = false;
  let introspectionFailure: { status: number; headers?: Record<string, string>; body?: string } | undefined;
  let metadata: Record<string, unknown> = {};

  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const serveMetadata = (res: ServerResponse, served: boolean): void => {
    if (discoveryHang) return; // never answered; close() drops the socket
    if (!served) return json(res, 404, { error: 'not_found' });
    if (discoveryDown) return json(res, 500, { error: 'server_error' });
    json(res, 200, metadata);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    switch (path) {
      case '/.well-known/oauth-authorization-server':
        return serveMetadata(res, discovery !== 'oidc');
      case '/.well-known/openid-configuration':
        return serveMetadata(res, discovery !== 'oauth2');
      case '/jwks':
        if (jwksHang) return; // never answered; close() drops the socket
        if (jwksDown) return json(res, 500, { error: 'server_error' });
        return json(res, 200, jwks);
      case '/introspect': {
        let body = '';
        for await (const chunk of req) body += String(chunk);
        if (req.method !== 'POST' || !isIntrospectionClient(req.headers.authorization)) {
          res.setHeader('www-authenticate', 'Basic realm="introspection"');
          return json(res, 401, { error: 'invalid_client' });
        }
        if (introspectionFailure !== undefined) {
          res.writeHead(introspectionFailure.status, introspectionFailure.headers ?? {});
          return void res.end(introspectionFailure.body ?? '');
        }
        const token = new URLSearchParams(body).get('token') ?? '';
        return json(res, 200, introspection.get(token) ?? { active: false });
      }
      default:
        return json(res, 404, { error: 'not_found' });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) json(res, 500, { error: 'server_error' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const issuer = options.trailingSlash ? `${origin}/` : origin;
  metadata = {
    issuer,
    jwks_uri: `${origin}/jwks`,
    introspection_endpoint: `${origin}/introspect`,
    token_endpoint: `${origin}/token`,
    response_types_supported: ['code'],
    ...options.metadata,
  };

  return {
    issuer,
    jwksUri: `${origin}/jwks`,
    introspectionEndpoint: `${origin}/introspect`,
    jwks,
    async sign(claims = {}, signOptions = {}) {
      const alg = signOptions.alg ?? (algs[0] as string);
      const key = signOptions.key ?? keys.get(alg);
      if (key === undefined) throw new Error(`the test issuer has no ${alg} key`);
      const now = Math.floor(Date.now() / 1000);
      const payload: JWTPayload = { iss: issuer, iat: now, exp: now + 300, ...claims };
      for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
      const header: Record<string, unknown> = { alg, kid: `key-${alg}`, ...signOptions.header };
      for (const [name, value] of Object.entries(header)) if (value === undefined) delete header[name];
      return new SignJWT(payload).setProtectedHeader(header as { alg: string }).sign(key);
    },
    requests: (path) => counts.get(path) ?? 0,
    totalRequests: () => [...counts.values()].reduce((a, b) => a + b, 0),
    setJwksDown: (down) => void (jwksDown = down),
    setJwksHang: (hang) => void (jwksHang = hang),
    setDiscoveryDown: (down) => void (discoveryDown = down),
    setDiscoveryHang: (hang) => void (discoveryHang = hang),
    setIntrospection: (token, response) => void introspection.set(token, response),
    setIntrospectionFailure: (answer) => void (introspectionFailure = answer),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
