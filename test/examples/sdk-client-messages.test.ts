// `npm run client` (examples/sdk-client.ts) against the development authorization server (oidc-provider) and a
// guarded server with no policy, as in the README's middleware quick start, all on 127.0.0.1: a server naming no
// scopes is said to be the cause, with what to set; a refusal shows the authorization server's own description,
// and the "is npm run auth-server running" hint only where it is plausible.
import assert from 'node:assert/strict';
import { runScript, type CliRun } from '../helpers/run-cli.js';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AuthorizationRedirectError, LoopbackOAuthClientProvider, LoopbackRedirectListener, signInToDevelopmentServer } from '../../src/client/index.js';
import { dispatchTable, type McpOAuthGuardOptions } from '../../src/index.js';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { DEV_AUTH_SERVER_HINT } from '../../examples/dev/dev-settings.js';
import { explainSignInFailure } from '../../examples/sdk-client-messages.js';
import { freePort } from '../helpers/free-port.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';

const CLIENT = fileURLToPath(new URL('../../examples/sdk-client.ts', import.meta.url));

/** The README's middleware quick start server: one tool, and no policy, so its metadata names no scopes. */
const helloServer = (issuer: string) => (origin: string): McpOAuthGuardOptions => ({
  issuer,
  resource: `${origin}/mcp`,
  handler: dispatchTable({
    initialize: () => ({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'hello', version: '1.0.0' } }),
    ping: () => ({}),
    'tools/list': () => ({ tools: [{ name: 'hello', inputSchema: { type: 'object' } }] }),
    'tools/call': (_params, { auth }) => ({ content: [{ type: 'text', text: `hello, ${String(auth.extra.sub)}` }] }),
  }),
});

/** Runs `npm run client` as a child process; the servers answer from this one, so it must not block. */
function runClient(args: readonly string[]): Promise<CliRun> {
  return runScript(CLIENT, args, { timeoutMs: 50_000 });
}

describe('examples/sdk-client.ts and a server that names no scopes', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;

  before(async () => {
    as = await startAuthorizationServer();
    app = await startGuardedApp(helloServer(as.issuer));
    as.addResource(app.url, { scopes: ['hello:use'] });
  });
  after(async () => {
    await app?.close();
    await as?.close();
  });

  it('says the server names no scopes and what to set; the refusal carries no auth-server hint', { timeout: 60_000 }, async () => {
    const { code, stdout, stderr } = await runClient([app.url, '--user', 'demo:demo-password', '--call', 'hello']);
    assert.equal(code, 1, stdout + stderr);
    assert.ok(stdout.includes(`signing in for scope "" at ${as.issuer}`), stdout);
    const notice = stderr.split('\n').find((line) => line.startsWith('client: no scope to ask for:'));
    assert.ok(notice, stderr);
    assert.ok(notice.includes(`the protected-resource metadata of ${app.url} lists no scopes_supported`), notice);
    for (const what of ['MCP_AUTH_POLICY', 'MCP_AUTH_CHALLENGE_SCOPES', '--scope']) assert.ok(notice.includes(what), `${what} in: ${notice}`);
    const last = stderr.trim().split('\n').at(-1) ?? '';
    // The authorization server's description when it gives one, or that it gave none; then what was asked for.
    assert.match(last, /^client: the authorization server refused: (access_denied|invalid_scope)(: \S.*| \(the authorization server gave no error_description\)), asked for the resource /, last);
    assert.ok(last.includes(`asked for the resource ${app.url}. No scope was asked for: `), last);
    assert.ok(!last.includes('npm run auth-server'), last);
  });

  it('with --scope, asks for it, says nothing about missing scopes, and calls the tool', { timeout: 60_000 }, async () => {
    const { code, stdout, stderr } = await runClient([app.url, '--user', 'demo:demo-password', '--call', 'hello', '--scope', 'hello:use']);
    assert.equal(code, 0, stdout + stderr);
    assert.ok(stdout.includes(`signing in for scope "hello:use" at ${as.issuer}`), stdout);
    assert.ok(stdout.includes('hello: hello, demo'), stdout);
    assert.ok(!stderr.includes('no scope to ask for'), stderr);
  });

  it("shows the authorization server's description of a denial, and no auth-server hint", { timeout: 60_000 }, async () => {
    const listener = await LoopbackRedirectListener.listen({ timeoutMs: 30_000 });
    const provider = new LoopbackOAuthClientProvider({
      listener,
      metadata: { scope: 'hello:use' },
      sendUser: async (url) => void (await signInToDevelopmentServer(url, { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: listener.redirectUri, deny: true })),
    });
    try {
      const client = new Client({ name: 'messages-test', version: '1.0.0' });
      await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(app.url), { authProvider: provider })), UnauthorizedError);
      const refusal = await provider.authorizationCode().then(() => assert.fail('a code came back'), (e: unknown) => e);
      assert.ok(refusal instanceof AuthorizationRedirectError && refusal.errorDescription, String(refusal));
      const explained = explainSignInFailure(refusal, { mcpUrl: new URL(app.url), authorizationUrl: provider.lastAuthorizationUrl });
      assert.ok(explained instanceof Error);
      assert.equal(explained.message, `the authorization server refused: access_denied: ${refusal.errorDescription}, asked for the resource ${app.url}`);
    } finally {
      await listener.close();
    }
  });
});

describe('examples/sdk-client.ts when nothing answers', () => {
  it('names the authorization server that refused the connection, with the auth-server hint', { timeout: 60_000 }, async () => {
    // A port that was free a moment ago: the issuer the server names is not running.
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const app = await startGuardedApp(helloServer(issuer));
    try {
      const { code, stdout, stderr } = await runClient([app.url, '--user', 'demo:demo-password']);
      assert.equal(code, 1, stdout + stderr);
      const last = stderr.trim().split('\n').at(-1) ?? '';
      assert.equal(last, `client: could not reach the authorization server (127.0.0.1:${new URL(issuer).port} refused the connection): ${DEV_AUTH_SERVER_HINT}`);
    } finally {
      await app.close();
    }
  });

  it('names the MCP server when it is the one not answering, without the auth-server hint', { timeout: 60_000 }, async () => {
    const url = `http://127.0.0.1:${await freePort()}/mcp`;
    const { code, stdout, stderr } = await runClient([url, '--user', 'demo:demo-password']);
    assert.equal(code, 1, stdout + stderr);
    const last = stderr.trim().split('\n').at(-1) ?? '';
    assert.match(last, new RegExp(`^client: nothing answers at ${url.replace(/[.]/g, '\\.')} \\(.+ refused the connection\\): is the MCP server running there\\?$`), last);
  });
});
