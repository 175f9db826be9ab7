/**
 * The gateway in front of a real third-party MCP server: `@modelcontextprotocol/server-everything` in
 * Streamable HTTP mode, with the demo authorization server minting real JWT access tokens and the MCP
 * SDK client talking to the gateway. The upstream runs with a preload that keeps it on 127.0.0.1 and
 * records the headers of every request it receives. The suite runs twice: with the upstream set by
 * `MCP_AUTH_UPSTREAM`, and as the one server of a configuration file (test/helpers/gateway-modes.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import type { RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startEverythingServer, withTimeout, type EverythingServer } from '../helpers/everything-server.js';
import { GATEWAY_MODES, startGatewayInMode, type GatewayMode } from '../helpers/gateway-modes.js';

const BASE = 'mcp:basic';
const TOOLS = 'mcp:tools';
const ADMIN = 'mcp:admin';

/** get-env reveals the server's environment: admin only. Everything else needs mcp:tools. */
const POLICY = {
  scopesSupported: [BASE, TOOLS, ADMIN],
  requiredScopes: [BASE],
  tools: { '*': [TOOLS], 'get-env': [ADMIN] },
  prompts: { '*': [] },
  resources: { '*': [] },
};

interface Recorded {
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
}

let dir: string;
let recordFile: string;
let as: AuthorizationServer;
let everything: EverythingServer;
let gateway: RunningGateway;
const logLines: string[] = [];
const clients: Client[] = [];

async function connect(scope: string, extraHeaders: Record<string, string> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport; token: string }> {
  const token = await as.issueAccessToken({ resource: gateway.resource, scope, sub: 'demo-user' });
  const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...extraHeaders } },
  });
  const client = new Client({ name: 'gateway-interop', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
    model: 'test-model',
    role: 'assistant',
    content: { type: 'text', text: `sampled reply to ${request.params.messages.length} message(s)` },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada Lovelace', check: true } }));
  clients.push(client);
  await withTimeout(client.connect(transport), 10_000, 'initialize');
  return { client, transport, token };
}

function recorded(): Recorded[] {
  return readFileSync(recordFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Recorded);
}

/**
 * The session the upstream saw for the client that sent `userAgent`: the one session id its forwarded requests
 * carried (the gateway forwards a client's User-Agent on the requests it passes on).
 */
function upstreamSessionOf(userAgent: string): string {
  const ids = new Set(recorded().flatMap((r) => (r.headers['user-agent'] === userAgent && r.headers['mcp-session-id'] !== undefined ? [r.headers['mcp-session-id']] : [])));
  assert.equal(ids.size, 1, `one upstream session for ${userAgent}: ${[...ids].join(', ')}`);
  return [...ids][0]!;
}

/**
 * Checks how the client's session id relates to the upstream's: a single upstream's session id is passed through to
 * the client, while a server set answers `initialize` itself, gives the client a session of its own and opens the
 * server's session on first use (one client session may span several servers), so there the two differ by design.
 */
function assertSessionMapping(mode: GatewayMode, clientSession: string, upstreamSession: string): void {
  if (mode.viaConfigFile) assert.notEqual(upstreamSession, clientSession, 'the server set keeps its own session id for the client');
  else assert.equal(upstreamSession, clientSession, 'the single upstream\'s session id is passed through');
}

function logged(): Record<string, unknown>[] {
  return logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The suite, with the upstream configured as `mode` says. */
function suite(mode: GatewayMode): void {
  const tool = (name: string): string => mode.exposed(name);
  describe(`gateway in front of @modelcontextprotocol/server-everything (${mode.label})`, { timeout: 60_000 }, () => {
    before(async () => {
      logLines.length = 0;
      clients.length = 0;
      dir = mkdtempSync(join(tmpdir(), 'gateway-everything-'));
      recordFile = join(dir, 'upstream-requests.jsonl');
      writeFileSync(recordFile, '');
      const policyFile = join(dir, 'policy.json');
      writeFileSync(policyFile, JSON.stringify(POLICY));
      as = await startAuthorizationServer({ extraScopes: [BASE, TOOLS, ADMIN] });
      everything = await startEverythingServer({ recordFile });
      ({ gateway } = await startGatewayInMode(mode, as, { url: everything.url, policyFile, identity: true }, dir, {
        log: (line) => logLines.push(line),
        scopes: [BASE, TOOLS, ADMIN],
      }));
    });

    after(async () => {
      for (const client of clients) await client.close().catch(() => {});
      await gateway?.shutdown();
      everything?.stop();
      await as?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('filters tools/list by the token\'s scopes', async () => {
      const { client } = await connect(`${BASE} ${TOOLS}`);
      const names = (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((t) => t.name);
      for (const name of ['echo', 'get-sum', 'trigger-long-running-operation', 'trigger-sampling-request', 'trigger-elicitation-request']) {
        assert.ok(names.includes(tool(name)), `${tool(name)} is listed: ${names.join(', ')}`);
      }
      assert.ok(!names.includes(tool('get-env')), 'get-env needs mcp:admin and must not be listed');

      const admin = await connect(`${BASE} ${TOOLS} ${ADMIN}`);
      const adminNames = (await withTimeout(admin.client.listTools(), 10_000, 'tools/list (admin)')).tools.map((t) => t.name);
      assert.ok(adminNames.includes(tool('get-env')));
      assert.ok(adminNames.length > names.length);
    });

    it('calls tools, including one that streams progress notifications over SSE', async () => {
      const { client } = await connect(`${BASE} ${TOOLS}`);
      const echo = await withTimeout(client.callTool({ name: tool('echo'), arguments: { message: 'through the gateway' } }), 10_000, 'echo');
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: through the gateway' }]);
      const sum = await withTimeout(client.callTool({ name: tool('get-sum'), arguments: { a: 2, b: 40 } }), 10_000, 'get-sum');
      assert.match(JSON.stringify(sum.content), /42/);

      const progress: Progress[] = [];
      const long = await withTimeout(
        client.callTool({ name: tool('trigger-long-running-operation'), arguments: { duration: 0.6, steps: 3 } }, CallToolResultSchema, {
          onprogress: (p) => progress.push(p),
          timeout: 10_000,
        }),
        15_000,
        'trigger-long-running-operation',
      );
      assert.match(JSON.stringify(long.content), /Long running operation completed/);
      assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
      assert.ok(progress.every((p) => p.total === 3));
    });

    it('serves prompts and resources', async () => {
      const { client } = await connect(`${BASE} ${TOOLS}`);
      const prompts = (await withTimeout(client.listPrompts(), 10_000, 'prompts/list')).prompts.map((p) => p.name);
      assert.ok(prompts.includes(tool('simple-prompt')), prompts.join(', '));
      const prompt = await withTimeout(client.getPrompt({ name: tool('simple-prompt') }), 10_000, 'prompts/get');
      assert.ok(prompt.messages.length > 0);
      const args = await withTimeout(client.getPrompt({ name: tool('args-prompt'), arguments: { city: 'Lisbon' } }), 10_000, 'prompts/get args');
      assert.match(JSON.stringify(args.messages), /Lisbon/);

      const resources = (await withTimeout(client.listResources(), 10_000, 'resources/list')).resources;
      assert.ok(resources.length > 0);
      const read = await withTimeout(client.readResource({ uri: resources[0]!.uri }), 10_000, 'resources/read');
      assert.equal(read.contents[0]?.uri, resources[0]!.uri);
      const templates = (await withTimeout(client.listResourceTemplates(), 10_000, 'resources/templates/list')).resourceTemplates;
      assert.ok(templates.some((t) => t.uriTemplate.startsWith('demo://resource/dynamic/text/')));
      const dynamic = await withTimeout(client.readResource({ uri: 'demo://resource/dynamic/text/1' }), 10_000, 'resources/read dynamic');
      assert.equal(dynamic.contents[0]?.uri, 'demo://resource/dynamic/text/1');
    });

    it('refuses a call the token has no scope for with 403 before it reaches the upstream', async () => {
      const { transport, token } = await connect(`${BASE} ${TOOLS}`);
      // A tools/call in the client's session, sent by hand; its User-Agent is forwarded when a request passes, so the
      // upstream's record shows whether this one did.
      const callInSession = (id: number, name: string, args: Record<string, unknown>, userAgent: string): Promise<Response> =>
        fetch(gateway.resource, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            'Mcp-Session-Id': transport.sessionId!,
            'MCP-Protocol-Version': transport.protocolVersion ?? '2025-11-25',
            'User-Agent': userAgent,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
          signal: AbortSignal.timeout(10_000),
        });
      const res = await callInSession(99, tool('get-env'), {}, 'refused-call-probe');
      assert.equal(res.status, 403);
      const challenge = res.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer /);
      assert.match(challenge, /error="insufficient_scope"/);
      assert.match(challenge, /mcp:admin/);
      const body = (await res.json()) as { id: unknown; error: { code: number } };
      assert.equal(body.id, 99);
      assert.ok(!recorded().some((r) => r.headers['user-agent'] === 'refused-call-probe'), 'the refused call never reached the upstream');
      // The probe can fail: a call that passes on the same session does reach the upstream with its User-Agent.
      const allowed = await callInSession(100, tool('echo'), { message: 'allowed' }, 'allowed-call-probe');
      assert.equal(allowed.status, 200);
      await allowed.arrayBuffer();
      assert.ok(recorded().some((r) => r.headers['user-agent'] === 'allowed-call-probe'), 'the allowed call reached the upstream');
      const line = logged().find((l) => l.name === tool('get-env') && l.decision === 'deny');
      assert.ok(line, 'the refusal is logged');
      assert.equal(line.status, 403);
      assert.equal(line.reason, 'scope_insufficient');
    });

    it('completes sampling and elicitation round trips: the client\'s response reaches the upstream on the same session (202)', async () => {
      const { client, transport } = await connect(`${BASE} ${TOOLS}`, { 'User-Agent': 'round-trip-client' });
      const logStart = logLines.length;
      const sampled = await withTimeout(client.callTool({ name: tool('trigger-sampling-request'), arguments: { prompt: 'hello', maxTokens: 20 } }), 15_000, 'sampling');
      assert.match(JSON.stringify(sampled.content), /sampled reply to 1 message/);

      const elicited = await withTimeout(client.callTool({ name: tool('trigger-elicitation-request'), arguments: {} }), 15_000, 'elicitation');
      assert.match(JSON.stringify(elicited.content), /Ada Lovelace/);

      // Each answer the client posted is a JSON-RPC response (no method): allowed with the base scopes, 202.
      const responses = logged()
        .slice(logStart)
        .filter((l) => l.httpMethod === 'POST' && l.method === undefined && l.decision === 'allow');
      assert.equal(responses.length, 2, JSON.stringify(logged().slice(logStart)));
      assert.ok(responses.every((l) => l.status === 202));
      const upstreamSession = upstreamSessionOf('round-trip-client');
      assertSessionMapping(mode, transport.sessionId!, upstreamSession);
      // Counted by the upstream's session id: a server set opens that session itself (its own initialized
      // notification carries none of the client's headers), so the client's User-Agent would miss that one.
      const upstreamPosts = recorded().filter((r) => r.method === 'POST' && r.headers['mcp-session-id'] === upstreamSession);
      assert.ok(upstreamPosts.length >= 5, 'initialized notification, two calls and two client responses, on one session');
    });

    it('binds the upstream session to its user: another user\'s token naming it gets 404 and never reaches the upstream', async () => {
      const { client, transport } = await connect(`${BASE} ${TOOLS}`);
      const sessionId = transport.sessionId!;
      const intruder = await as.issueAccessToken({ resource: gateway.resource, scope: `${BASE} ${TOOLS}`, sub: 'other-user' });
      const headers = {
        Authorization: `Bearer ${intruder}`,
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sessionId,
        'MCP-Protocol-Version': transport.protocolVersion ?? '2025-11-25',
        'User-Agent': 'session-hijack-probe',
      };
      const logStart = logLines.length;
      const call = await fetch(gateway.resource, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: tool('echo'), arguments: { message: 'hijack' } } }),
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(call.status, 404);
      assert.deepEqual(await call.json(), { jsonrpc: '2.0', id: 41, error: { code: -32001, message: 'Session not found' } });
      const stream = await fetch(gateway.resource, { headers: { ...headers, Accept: 'text/event-stream' }, signal: AbortSignal.timeout(10_000) });
      assert.equal(stream.status, 404);
      await stream.arrayBuffer();
      const del = await fetch(gateway.resource, { method: 'DELETE', headers, signal: AbortSignal.timeout(10_000) });
      assert.equal(del.status, 404);
      await del.arrayBuffer();
      assert.ok(!recorded().some((r) => r.headers['user-agent'] === 'session-hijack-probe'), 'no refused request reached the upstream');
      const refusals = logged()
        .slice(logStart)
        .filter((l) => l.subject === 'other-user');
      assert.deepEqual(
        refusals.map((l) => [l.httpMethod, l.decision, l.reason, l.subject, l.status]),
        [
          ['POST', 'deny', 'session_owner_mismatch', 'other-user', 404],
          ['GET', 'deny', 'session_owner_mismatch', 'other-user', 404],
          ['DELETE', 'deny', 'session_owner_mismatch', 'other-user', 404],
        ],
      );
      // The owner's session still works.
      const echo = await withTimeout(client.callTool({ name: tool('echo'), arguments: { message: 'still mine' } }), 10_000, 'echo');
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: still mine' }]);
    });

    it('never forwards the Authorization header or cookies, and sends identity headers instead', async () => {
      const { client, transport } = await connect(`${BASE} ${TOOLS}`, { Cookie: 'sid=browser-cookie', 'User-Agent': 'terminating-client' });
      await withTimeout(client.callTool({ name: tool('echo'), arguments: { message: 'x' } }), 10_000, 'echo');
      const sessionId = upstreamSessionOf('terminating-client');
      assertSessionMapping(mode, transport.sessionId!, sessionId);
      await withTimeout(transport.terminateSession(), 10_000, 'DELETE');
      const all = recorded();
      assert.ok(all.length > 10);
      for (const r of all) {
        assert.equal(r.headers.authorization, undefined, `${r.method} ${r.url} carried Authorization`);
        assert.equal(r.headers.cookie, undefined, `${r.method} ${r.url} carried a cookie`);
        assert.equal(r.headers['x-mcp-subject'], 'demo-user');
        assert.ok(r.headers['x-mcp-scopes']?.includes(BASE));
      }
      assert.ok(all.some((r) => r.method === 'GET'), 'the standalone SSE stream (GET) was proxied');
      assert.ok(all.some((r) => r.method === 'DELETE' && r.headers['mcp-session-id'] === sessionId), 'DELETE was proxied with the session');
      const tokens = new Set(logLines.join('\n').match(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g) ?? []);
      assert.equal(tokens.size, 0, 'no token in the request log');
    });
  });
}

for (const mode of GATEWAY_MODES) suite(mode);
