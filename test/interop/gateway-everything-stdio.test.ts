/**
 * The gateway in front of a real third-party stdio MCP server: `@modelcontextprotocol/server-everything` in
 * stdio mode (`node dist/index.js stdio`), one process per session, with the official SDK client on the
 * other side and real JWT access tokens. Progress, sampling and elicitation make the round trips a stdio
 * bridge must get right: notifications and the server's own requests on the call's event stream, the
 * client's answers back to the right process. The suite runs twice: with the upstream set by
 * `MCP_AUTH_UPSTREAM_COMMAND`, and as the one server of a configuration file (test/helpers/gateway-modes.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningGateway } from '../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../src/gateway/upstream/stdio/stdio-upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { EVERYTHING, withTimeout } from '../helpers/everything-server.js';
import { GATEWAY_MODES, startGatewayInMode, type GatewayMode } from '../helpers/gateway-modes.js';
import { childEvents, waitUntilGone } from '../helpers/stdio-gateway.js';

const BASE = 'mcp:basic';
const TOOLS = 'mcp:tools';
const ADMIN = 'mcp:admin';
const POLICY = { scopesSupported: [BASE, TOOLS, ADMIN], requiredScopes: [BASE], tools: { '*': [TOOLS], 'get-env': [ADMIN] }, prompts: { '*': [] }, resources: { '*': [] } };

let as: AuthorizationServer;
let gateway: RunningGateway;
let upstream: StdioUpstream;
const logs: string[] = [];
let dir: string;
const open: { client: Client; transport: StreamableHTTPClientTransport }[] = [];

async function connect(sub: string, scope = `${BASE} ${TOOLS}`): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const token = await as.issueAccessToken({ resource: gateway.resource, scope, sub });
  const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'stdio-interop', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
    model: 'test-model',
    role: 'assistant',
    content: { type: 'text', text: `sampled reply to ${request.params.messages.length} message(s) for ${sub}` },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: `Ada for ${sub}`, check: true } }));
  await withTimeout(client.connect(transport), 15_000, 'initialize');
  open.push({ client, transport });
  return { client, transport };
}

/** The suite, with the upstream configured as `mode` says. */
function suite(mode: GatewayMode): void {
  const tool = (name: string): string => mode.exposed(name);
  describe(`gateway in front of @modelcontextprotocol/server-everything over stdio (${mode.label})`, { timeout: 90_000 }, () => {
    before(async () => {
      logs.length = 0;
      open.length = 0;
      dir = mkdtempSync(join(tmpdir(), 'everything-stdio-'));
      const policyFile = join(dir, 'policy.json');
      writeFileSync(policyFile, JSON.stringify(POLICY));
      as = await startAuthorizationServer({ extraScopes: [BASE, TOOLS, ADMIN] });
      const started = await startGatewayInMode(mode, as, { command: [process.execPath, EVERYTHING, 'stdio'], policyFile, identity: true }, dir, {
        log: (line) => logs.push(line),
        scopes: [BASE, TOOLS, ADMIN],
      });
      gateway = started.gateway;
      upstream = started.upstream as StdioUpstream;
    });

    after(async () => {
      for (const { client } of open) await client.close().catch(() => {});
      await gateway?.shutdown();
      assert.equal(upstream?.processes ?? 0, 0, 'no process outlives the gateway');
      await as?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('lists tools filtered by the policy and calls them', async () => {
      const { client } = await connect('alice');
      const names = (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((t) => t.name);
      for (const name of ['echo', 'get-sum', 'trigger-long-running-operation', 'trigger-sampling-request', 'trigger-elicitation-request']) assert.ok(names.includes(tool(name)), `${tool(name)}: ${names.join(', ')}`);
      assert.ok(!names.includes(tool('get-env')), 'get-env needs mcp:admin');
      const echo = await withTimeout(client.callTool({ name: tool('echo'), arguments: { message: 'over stdio' } }), 10_000, 'echo');
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: over stdio' }]);
      const prompts = (await withTimeout(client.listPrompts(), 10_000, 'prompts/list')).prompts;
      assert.ok(prompts.length > 0);
    });

    it('streams progress notifications on the call\'s answer', async () => {
      const { client } = await connect('bob');
      const progress: Progress[] = [];
      const result = await withTimeout(
        client.callTool({ name: tool('trigger-long-running-operation'), arguments: { duration: 0.6, steps: 3 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p), timeout: 15_000 }),
        20_000,
        'trigger-long-running-operation',
      );
      assert.match(JSON.stringify(result.content), /Long running operation completed/);
      assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
    });

    it('completes sampling and elicitation round trips, each user with their own process', async () => {
      const carol = await connect('carol');
      const dave = await connect('dave');
      const [sampledCarol, sampledDave] = await Promise.all([
        withTimeout(carol.client.callTool({ name: tool('trigger-sampling-request'), arguments: { prompt: 'hello', maxTokens: 20 } }), 20_000, 'sampling (carol)'),
        withTimeout(dave.client.callTool({ name: tool('trigger-sampling-request'), arguments: { prompt: 'hello', maxTokens: 20 } }), 20_000, 'sampling (dave)'),
      ]);
      assert.match(JSON.stringify(sampledCarol.content), /sampled reply to 1 message\(s\) for carol/);
      assert.match(JSON.stringify(sampledDave.content), /sampled reply to 1 message\(s\) for dave/);
      const elicited = await withTimeout(carol.client.callTool({ name: tool('trigger-elicitation-request'), arguments: {} }), 20_000, 'elicitation');
      assert.match(JSON.stringify(elicited.content), /Ada for carol/);
      assert.notEqual(carol.transport.sessionId, dave.transport.sessionId);
    });

    it('an admin sees get-env: the process has only the whitelisted variables and its caller\'s identity', async () => {
      const { client } = await connect('erin', `${BASE} ${TOOLS} ${ADMIN}`);
      const env = await withTimeout(client.callTool({ name: tool('get-env'), arguments: {} }), 10_000, 'get-env');
      const text = JSON.stringify(env.content);
      assert.match(text, /MCP_CALLER_SUBJECT[^,]*erin/);
      assert.doesNotMatch(text, /MCP_AUTH_ISSUER|NODE_TEST_CONTEXT/);
    });

    it('terminating the session stops its process', async () => {
      const logStart = logs.length;
      const { client, transport } = await connect('frank');
      // A server set opens its server's session, and so the process, when the client first uses it (only the very
      // first session opens it at initialize, to learn its capabilities): a call makes sure it runs in both modes.
      const echo = await withTimeout(client.callTool({ name: tool('echo'), arguments: { message: 'before the end' } }), 10_000, 'echo');
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: before the end' }]);
      const started = childEvents(logs.slice(logStart)).filter((e) => e.event === 'upstream_started');
      assert.equal(started.length, 1, 'the session has its own process');
      // The single upstream runs the process under the client's session id; a server set gives the client a session
      // of its own and runs the process under the server's session, which the client never sees.
      if (mode.viaConfigFile) assert.notEqual(started[0]!.session, transport.sessionId);
      else assert.equal(started[0]!.session, transport.sessionId);
      await withTimeout(transport.terminateSession(), 10_000, 'DELETE');
      assert.ok(await waitUntilGone(started[0]!.pid as number));
    });
  });
}

for (const mode of GATEWAY_MODES) suite(mode);
