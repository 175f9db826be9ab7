/**
 * What every example server shares: listen first (so port 0 resolves to a real port), then build the guard
 * with `http://HOST:PORT/mcp` as the default resource, and a `main()` that is configured by environment only.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  answerClientErrors,
  checkPolicyCoverage,
  ConfigurationError,
  explainFailure,
  loadOptionsFromEnv,
  type GuardOptions,
  type McpOAuthGuardRouter,
  type PolicyDefinition,
  type ServerCatalog,
} from 'mcp-oauth-guard';
import { collectConfigurationProblems, parseIntegerSetting, readSetting } from 'mcp-oauth-guard/core';

/** HOST of an example server when unset: loopback, so an example is never exposed by accident. */
export const EXAMPLE_DEFAULT_HOST = '127.0.0.1';
/** PORT of an example server when unset (the gateway's is 8080, so both can run side by side). */
export const EXAMPLE_DEFAULT_PORT = 3000;

/** Time a client has to send a request's headers, in milliseconds. */
const HEADERS_TIMEOUT_MS = 10_000;

/** A listening server with the guard mounted. */
export interface GuardedServer {
  /** The MCP endpoint URL (the canonical resource). */
  url: string;
  /**
   * Where the server listens, `http://HOST:PORT` with the port actually bound: the resource's origin unless
   * MCP_AUTH_RESOURCE names a public URL (behind a proxy), when this is the address to point the proxy at.
   */
  listening: string;
  server: Server;
  router: McpOAuthGuardRouter;
  /** Stops listening and drops open connections (SSE streams included). */
  close(): Promise<void>;
}

/** `http://host:port/mcp`, with IPv6 hosts bracketed. */
export function defaultResourceUrl(host: string, port: number): string {
  return `${listeningOrigin(host, port)}/mcp`;
}

/** `http://host:port`, with IPv6 hosts bracketed. */
function listeningOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Listens on `host:port` (port 0: any free port), then mounts the router `build` returns for the default
 * resource `http://HOST:PORT/mcp` with the port actually bound.
 */
export async function listenWithGuard(
  host: string,
  port: number,
  build: (defaultResource: string) => McpOAuthGuardRouter,
): Promise<GuardedServer> {
  const app = express();
  app.disable('x-powered-by');
  // The guard bounds the time to read a body (`bodyTimeoutMs`); the time to send the headers is the server's.
  // Node's defaults let a client trickle header bytes for a minute or more: 10 s is plenty for real clients.
  // `requestTimeout` (set below, once the body timeout is known) covers the headers and the body; answers, SSE
  // streams included, are not bounded by it.
  const server = createServer({ headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1_000 }, app);
  // What Node's parser refuses (headers too large, not HTTP) gets a JSON-RPC error body too, not a bare status.
  answerClientErrors(server);
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  let router: McpOAuthGuardRouter;
  const boundPort = (server.address() as AddressInfo).port;
  try {
    router = build(defaultResourceUrl(host, boundPort));
  } catch (error) {
    server.close();
    throw error;
  }
  // Past the guard's own body timeout, so that a slow body gets the guard's JSON-RPC 408, not Node's bare one.
  server.requestTimeout = HEADERS_TIMEOUT_MS + router.guard.options.bodyTimeoutMs + 5_000;
  app.use(router);
  return {
    url: router.guard.resource,
    listening: listeningOrigin(host, boundPort),
    server,
    router,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What an example serves, for the start-up policy check: its built-in policy and what it lists. */
export interface ServedCatalog {
  /** The policy used unless MCP_AUTH_POLICY names a file. */
  policy: PolicyDefinition;
  catalog: ServerCatalog;
}

/**
 * Runs an example from the environment: HOST (default 127.0.0.1), PORT (default 3000), MCP_AUTH_ISSUER
 * (required: exits 2 with a message pointing at `npm run demo`), MCP_AUTH_RESOURCE (default
 * `http://HOST:PORT/mcp`) and the other MCP_AUTH_* variables. Configuration errors exit 2, every bad variable named
 * at once (an MCP_AUTH_* variable that is no setting too); the start-up line names the resource, the issuer(s), the
 * policy and the address listened on (which differs from the resource's behind a proxy); with
 * `served`, tools with no rule and rules that match no tool are warned about (see `checkPolicyCoverage`).
 */
export async function runExampleFromEnv(
  label: string,
  start: (options: GuardOptions & { host: string; port: number }) => Promise<{ url: string; listening?: string; close(): Promise<void>; router?: McpOAuthGuardRouter }>,
  served?: ServedCatalog,
): Promise<void> {
  const host = readSetting(process.env, 'HOST') ?? EXAMPLE_DEFAULT_HOST;
  let port = EXAMPLE_DEFAULT_PORT;
  let fromEnv: GuardOptions;
  try {
    // Every problem at once, PORT and an MCP_AUTH_* variable that is no setting included. A bad PORT is named as
    // itself; the default resource is then built with the default port, so it is not reported a second time.
    fromEnv = collectConfigurationProblems((problems) => {
      port = problems.check(() => parseIntegerSetting(process.env.PORT, 'PORT', 0, 65_535)) ?? EXAMPLE_DEFAULT_PORT;
      return loadOptionsFromEnv(process.env, { resource: defaultResourceUrl(host, port) });
    });
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    console.error(`configuration error: ${error.message}`);
    if (!process.env.MCP_AUTH_ISSUER?.trim()) {
      // The line above already says how to set it; this adds only the way to try everything without one.
      console.error('To try the whole flow without an authorization server of your own: `npm run demo` starts one, this server and a client together.');
    }
    process.exit(2);
  }
  try {
    const running = await start({ ...fromEnv, host, port });
    const issuers = fromEnv.issuers ?? [fromEnv.issuer];
    const policyFile = process.env.MCP_AUTH_POLICY?.trim();
    // The warnings first: whoever waits for the start-up line then has them all.
    if (served) warnAboutCoverage(fromEnv.policy ?? served.policy, served.catalog);
    const listening = running.listening === undefined ? '' : `; listening on ${running.listening}`;
    console.log(`${label}: ${running.url}  (${issuers.length === 1 ? 'issuer' : 'issuers'} ${issuers.join(', ')}; policy ${policyFile || 'built in'}${listening})`);
    // Discovery now rather than on the first request, so that a wrong or unreachable issuer is reported here,
    // with what each URL answered, instead of as an unexplained 503 later.
    running.router?.guard.ready().catch((error: unknown) => {
      console.error(`warning: authorization server discovery failed; requests get 503 until it succeeds: ${explainFailure(error)}`);
    });
    const stop = (): void => void running.close().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      console.error(`configuration error: ${error.message}`);
      process.exit(2);
    }
    // A port in use is an everyday mistake (3000 is a common default): one line saying what to change, no stack.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      const why = code === 'EADDRINUSE' ? `port ${port} is in use; set PORT to a free port` : code === 'EACCES' ? `not allowed to listen on ${host}:${port}; set PORT or HOST` : `${host} is not an address of this machine; set HOST`;
      console.error(`${label}: cannot start: ${why}`);
      process.exit(1);
    }
    throw error;
  }
}

/** The start-up policy check, as warnings: open items and rules that match nothing, with the name likely meant. */
function warnAboutCoverage(policy: PolicyDefinition, catalog: ServerCatalog): void {
  const coverage = checkPolicyCoverage(policy, catalog);
  for (const [kind, covered] of [['tools', coverage.tools], ['prompts', coverage.prompts], ['resources', coverage.resources]] as const) {
    if (covered && covered.open.length > 0) console.warn(`warning: policy: ${kind} with no rule, open to any token: ${covered.open.join(', ')}`);
  }
  for (const rule of coverage.unmatchedRules) {
    console.warn(`warning: policy: the ${rule.kind} rule "${rule.name}" matches nothing this server offers${rule.suggestion ? `; did you mean "${rule.suggestion}"?` : ''}`);
  }
}
