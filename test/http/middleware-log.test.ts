// What the middleware says: an Express app on loopback with mcpOAuthGuard in front of the SDK 1.x and 2.x adapters
// (and a plain function), tokens from a real oidc-provider, and a logger that keeps each line with its level. Also
// the gateway's log level and request log switch, on a gateway started on a free port.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServer2 } from '@modelcontextprotocol/server';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { mcpOAuthGuard, type McpOAuthGuardOptions } from '../../src/express/mcp-oauth-guard.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { dispatchTable, JsonRpcMethodError } from '../../src/core/mcp/dispatch-table.js';
import { sdkStreamableHttpHandler } from '../../src/sdk/sdk-streamable-http-handler.js';
import { sdk2McpHandler } from '../../src/sdk/sdk2.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway } from '../../src/gateway/server/start-gateway.js';
import { postMcp, send } from '../helpers/http-client.js';

const SCOPES = ['x:read', 'x:admin'];
/** The policy: `echo` protected, `planted` (registered by the servers below) left without a rule, `ecoh` a typo. */
const POLICY = { scopesSupported: SCOPES, requiredScopes: ['x:read'], tools: { echo: ['x:read'], ecoh: ['x:admin'] } };

let as: AuthorizationServer;
before(async () => {
  as = await startAuthorizationServer();
});
after(async () => {
  await as?.close();
});

/** One line the logger was given, parsed, with the method it came through. */
interface Logged {
  level: 'info' | 'warn';
  line: string;
  entry: Record<string, unknown>;
}

interface App {
  url: string;
  logged: Logged[];
  close(): void;
}

/** An Express app on a free loopback port with the guard mounted, its lines kept in `logged`. */
async function startApp(options: Omit<McpOAuthGuardOptions, 'issuer' | 'resource'>): Promise<App> {
  const logged: Logged[] = [];
  const keep = (level: Logged['level']) => (line: string) => void logged.push({ level, line, entry: JSON.parse(line) as Record<string, unknown> });
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  app.get('/other', (_req, res) => void res.json({ ok: true }));
  app.use(mcpOAuthGuard({ issuer: as.issuer, resource: url, logger: { info: keep('info'), warn: keep('warn') }, ...options }));
  as.addResource(url, { scopes: SCOPES });
  return {
    url,
    logged,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Resolves with the start-up line once it is written (after the handler has been listed). */
async function startedLine(app: App): Promise<Logged> {
  for (let i = 0; i < 200; i++) {
    const started = app.logged.find((l) => l.entry.event === 'started');
    if (started) return started;
    await delay(10);
  }
  assert.fail(`no start-up line: ${JSON.stringify(app.logged)}`);
}

/** An SDK 1.x server with `echo` (covered by the policy), `planted` (not covered), a prompt and a resource. */
function sdk1Server(): McpServer {
  const server = new McpServer({ name: 'speaks', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes.' }, async () => ({ content: [{ type: 'text', text: 'echo' }] }));
  server.registerTool('planted', { description: 'No rule covers it.' }, async () => ({ content: [{ type: 'text', text: 'planted' }] }));
  server.registerPrompt('greet', { description: 'A prompt.' }, async () => ({ messages: [] }));
  server.registerResource('readme', 'file:///readme', { description: 'A resource.' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'hi' }] }));
  return server;
}

const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } });
/** Lets an answer's 'close' run, after which its request line (if any) is written. */
const settle = () => delay(50);

describe('mcpOAuthGuard: the start-up line and the coverage warnings', () => {
  test('with the SDK 1.x adapter: the open tool and the typo are warned about, then one started line', async () => {
    const app = await startApp({ policy: POLICY, handler: sdkStreamableHttpHandler({ createServer: sdk1Server }) });
    try {
      const started = await startedLine(app);
      assert.equal(started.level, 'info');
      const { time, ...fields } = started.entry;
      assert.match(String(time), /^\d{4}-\d\d-\d\dT/);
      assert.deepEqual(fields, {
        event: 'started',
        resource: app.url,
        issuers: [as.issuer],
        policy: { requiredScopes: 1, methods: 0, tools: 2, prompts: 0, resources: 0, scopeHierarchy: 0, toolRateLimits: 0 },
        tools: { protected: 1, open: 1 },
        prompts: { protected: 0, open: 1 },
        resources: { protected: 0, open: 1 },
        unmatchedRules: 1,
        openTools: ['planted'],
      });
      const warnings = app.logged.filter((l) => l.level === 'warn').map((l) => l.entry);
      assert.ok(warnings.every((w) => w.event === 'warning'));
      const openTools = warnings.find((w) => w.kind === 'tools');
      assert.deepEqual(openTools?.names, ['planted']);
      assert.match(String(openTools?.message), /^policy: 1 of 2 tools has no rule .*a token with only the base scopes/);
      const typo = warnings.find((w) => w.rule === 'ecoh');
      assert.equal(typo?.message, 'policy: the tool rule "ecoh" matches nothing the server lists; did you mean "echo"?');
      assert.equal(typo?.suggestion, 'echo');
      // The warnings come first, as the gateway writes them before its summary.
      assert.equal(app.logged.at(-1), started);
    } finally {
      app.close();
    }
  });

  test('with the SDK 2.x adapter: the planted tool is warned about', async () => {
    const createServer = () => {
      const server = new McpServer2({ name: 'speaks2', version: '1.0.0' });
      server.registerTool('echo', { description: 'Echoes.' }, async () => ({ content: [{ type: 'text' as const, text: 'echo' }] }));
      server.registerTool('planted', { description: 'No rule covers it.' }, async () => ({ content: [{ type: 'text' as const, text: 'planted' }] }));
      return server;
    };
    const app = await startApp({ policy: POLICY, handler: sdk2McpHandler({ createServer }) });
    try {
      const started = await startedLine(app);
      assert.deepEqual(started.entry.tools, { protected: 1, open: 1 });
      assert.deepEqual(started.entry.openTools, ['planted']);
      assert.deepEqual(app.logged.find((l) => l.entry.kind === 'tools')?.entry.names, ['planted']);
    } finally {
      app.close();
    }
  });

  test('a dispatchTable handler is asked its own lists: the open tool and the typo are warned about', async () => {
    const handler = dispatchTable({
      'tools/list': (_params, context) => {
        // Asked at start-up by nobody: no token, no scope.
        assert.equal(context.auth.token, '');
        assert.deepEqual(context.auth.scopes, []);
        return { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'planted', inputSchema: { type: 'object' } }] };
      },
    });
    const app = await startApp({ policy: POLICY, handler });
    try {
      const started = await startedLine(app);
      assert.deepEqual(started.entry.tools, { protected: 1, open: 1 });
      assert.deepEqual(started.entry.openTools, ['planted']);
      // No prompts/list or resources/list in the table: empty lists, not a failure.
      assert.deepEqual(started.entry.prompts, { protected: 0, open: 0 });
      assert.equal(started.entry.unmatchedRules, 1);
      assert.deepEqual(app.logged.find((l) => l.entry.kind === 'tools')?.entry.names, ['planted']);
    } finally {
      app.close();
    }
  });

  test('a dispatchTable whose list fails: the started line says coverage was skipped and why', async () => {
    const handler = dispatchTable({ 'tools/list': () => { throw new JsonRpcMethodError(-32603, 'backend down'); } });
    const app = await startApp({ policy: POLICY, handler });
    try {
      const started = await startedLine(app);
      assert.equal(started.entry.coverage, 'skipped');
      assert.match(String(started.entry.reason), /could not be listed: tools\/list: the handler answered error -32603/);
    } finally {
      app.close();
    }
  });

  test('a plain function handler cannot be listed: the started line says so, with no coverage', async () => {
    const app = await startApp({ policy: POLICY, handler: async () => undefined });
    try {
      const started = await startedLine(app);
      assert.equal(started.entry.tools, null);
      assert.equal(started.entry.coverage, 'skipped');
      assert.match(String(started.entry.reason), /does not list what it offers/);
      assert.equal(app.logged.filter((l) => l.level === 'warn').length, 0);
    } finally {
      app.close();
    }
  });

  test('a bad logLevel or logger is refused at construction, naming the option', () => {
    assert.throws(
      () => mcpOAuthGuard({ issuer: as.issuer, resource: 'http://127.0.0.1:1/mcp', handler: async () => undefined, logLevel: 'debug' as 'info', logger: {} as never }),
      (e: unknown) => e instanceof ConfigurationError && e.problems.some((p) => p.setting === 'options.logLevel') && e.problems.some((p) => p.setting === 'options.logger'),
    );
  });
});

describe('mcpOAuthGuard: the request log and the level', () => {
  const echoHandler = async () => ({ jsonrpc: '2.0' as const, id: 1, result: { content: [] } });

  test('off by default: a request writes nothing after the start-up line', async () => {
    const app = await startApp({ policy: POLICY, handler: echoHandler });
    try {
      await startedLine(app);
      const token = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
      assert.equal((await postMcp(app.url, call('echo'), token)).status, 200);
      await settle();
      assert.deepEqual(app.logged.map((l) => l.entry.event), ['started']);
    } finally {
      app.close();
    }
  });

  test('on: one line per request the guard serves, the gateway\'s fields, never the token; other routes are not logged', async () => {
    const app = await startApp({ policy: POLICY, handler: echoHandler, requestLog: true });
    try {
      await startedLine(app);
      const token = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
      assert.equal((await postMcp(app.url, call('echo'), token)).status, 200);
      assert.equal((await postMcp(`${app.url}?access_token=${token}`, call('echo'), token)).status, 400);
      assert.equal((await send(app.url.replace('/mcp', '/other'), { method: 'GET' })).status, 200);
      await settle();
      const requests = app.logged.filter((l) => l.entry.httpMethod !== undefined);
      assert.equal(requests.length, 2, JSON.stringify(app.logged));
      assert.ok(requests.every((l) => l.level === 'info'));
      const [allowed, refused] = requests.map((l) => l.entry);
      assert.deepEqual(
        { path: allowed!.path, method: allowed!.method, name: allowed!.name, decision: allowed!.decision, subject: allowed!.subject, status: allowed!.status },
        { path: '/mcp', method: 'tools/call', name: 'echo', decision: 'allow', subject: 'alice', status: 200 },
      );
      assert.deepEqual({ decision: refused!.decision, reason: refused!.reason, status: refused!.status }, { decision: 'deny', reason: 'token_in_query', status: 400 });
      for (const { line } of app.logged) assert.ok(!line.includes(token), line);
    } finally {
      app.close();
    }
  });

  test('warn: the warnings only, no start-up line and no request lines even with the request log on', async () => {
    const app = await startApp({ policy: POLICY, handler: sdkStreamableHttpHandler({ createServer: sdk1Server }), requestLog: true, logLevel: 'warn' });
    try {
      for (let i = 0; i < 200 && app.logged.length < 2; i++) await delay(10);
      const token = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
      await postMcp(app.url, call('echo'), token);
      await settle();
      assert.ok(app.logged.length >= 2, JSON.stringify(app.logged));
      assert.ok(app.logged.every((l) => l.level === 'warn' && l.entry.event === 'warning'), JSON.stringify(app.logged));
    } finally {
      app.close();
    }
  });

  test('off: nothing at all', async () => {
    const app = await startApp({ policy: POLICY, handler: sdkStreamableHttpHandler({ createServer: sdk1Server }), requestLog: true, logLevel: 'off' });
    try {
      const token = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
      assert.equal((await postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, token)).status, 200);
      await delay(200);
      assert.deepEqual(app.logged, []);
    } finally {
      app.close();
    }
  });
});

describe('the gateway: MCP_AUTH_REQUEST_LOG and MCP_AUTH_LOG_LEVEL', () => {
  /** A gateway on a free loopback port in front of an upstream nobody listens at; its lines kept. */
  async function gatewayWith(settings: Record<string, string>): Promise<{ lines: string[]; warnings: string[]; url: string; stop(): Promise<void> }> {
    const lines: string[] = [];
    const warnings: string[] = [];
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp', HOST: '127.0.0.1', PORT: '0', ...settings });
    const gateway = await startGateway(config, { log: (line) => lines.push(line), warn: (line) => warnings.push(line), readinessCacheMs: 0 });
    return { lines, warnings, url: gateway.url, stop: () => gateway.shutdown() };
  }

  test('the request log is on by default, and MCP_AUTH_REQUEST_LOG=off (or level warn) turns it off', async () => {
    for (const [settings, expected] of [[{}, 1], [{ MCP_AUTH_REQUEST_LOG: 'off' }, 0], [{ MCP_AUTH_LOG_LEVEL: 'warn' }, 0]] as const) {
      const gateway = await gatewayWith(settings);
      try {
        assert.equal((await send(`${gateway.url}/healthz`, { method: 'GET' })).status, 200);
        await settle();
        assert.equal(gateway.lines.filter((l) => (JSON.parse(l) as { path?: string }).path === '/healthz').length, expected, JSON.stringify(settings));
      } finally {
        await gateway.stop();
      }
    }
  });

  test('MCP_AUTH_LOG_LEVEL=off silences the warnings too', async () => {
    // Sealed sessions with no rate limit warn at start-up; at off, the warning is not written.
    const secret = randomBytes(32).toString('base64');
    const warned = await gatewayWith({ MCP_AUTH_SESSION_SECRET: secret });
    await warned.stop();
    assert.ok(warned.warnings.length > 0, 'the warning is written at the default level');
    const silent = await gatewayWith({ MCP_AUTH_SESSION_SECRET: secret, MCP_AUTH_LOG_LEVEL: 'off' });
    await silent.stop();
    assert.deepEqual(silent.warnings, []);
  });
});
