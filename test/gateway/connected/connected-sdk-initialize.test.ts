// Connected accounts with the official SDK client (2025-11-25, sessions) in front of a single upstream in connected
// mode: the client's `connect()` (initialize) should not need the user's connection, and the URL-elicitation
// capability it declared there should decide the later connect answer (-32042 rather than a tool-result link).
// Once the user has connected in the browser, the same client session reaches the upstream: the gateway opens the
// upstream's session then, with the client's own initialize.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, singleUpstreamSettings, startConnectedAccountsParts, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { PageBrowser } from './pages/page-browser.js';

for (const sealed of [false, true]) {
  describe(`connected accounts: the SDK client before the user connected (${sealed ? 'sealed session ids' : 'session ids held by the gateway'})`, { timeout: 60_000 }, () => {
    let parts: ConnectedAccountsParts;
    let gateway: RunningGateway | undefined;

    before(async () => {
      parts = await startConnectedAccountsParts();
      const settings = { ...singleUpstreamSettings(parts), ...(sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {}) };
      gateway = await startGateway(loadGatewayConfig(settings), { log: () => undefined, warn: () => undefined });
      parts.trustGateway(gateway.resource);
    });

    after(async () => {
      await gateway?.shutdown();
      await parts?.close();
    });

    sessionCases(() => ({ parts, gateway: gateway! }));
  });
}

/** The cases, against the gateway `running` gives. */
function sessionCases(running: () => { parts: ConnectedAccountsParts; gateway: RunningGateway }): void {
  async function sdkClient(capabilities: Record<string, unknown>): Promise<Client> {
    const { parts, gateway } = running();
    const token = await parts.callerToken(gateway.resource, 'alice');
    const transport = new StreamableHTTPClientTransport(new URL(`${parts.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'connected-sdk-test', version: '1.0.0' }, { capabilities });
    await client.connect(transport, { timeout: 10_000 });
    return client;
  }

  it('connects; a call gets -32042 for a client that declared URL elicitation, a tool result with the link for one that did not', async () => {
    const withUrl = await sdkClient({ elicitation: { url: {} } });
    const plain = await sdkClient({});
    try {
      await assert.rejects(withUrl.callTool({ name: 'notes_list', arguments: {} }), (error: unknown) => error instanceof McpError && error.code === -32042);
      const result = await plain.callTool({ name: 'notes_list', arguments: {} });
      assert.equal(result.isError, true);
      assert.match(JSON.stringify(result.content), /\/connect\//);
    } finally {
      await withUrl.close();
      await plain.close();
    }
  });

  it('after connecting in the browser, the same session reaches the upstream as the user', async () => {
    const client = await sdkClient({});
    try {
      const first = await client.callTool({ name: 'notes_list', arguments: {} });
      const link = /(http:\/\/\S+\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.content))![1]!;
      const { parts } = running();
      const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
      assert.equal(done.status, 200, done.body);
      const added = await client.callTool({ name: 'notes_add', arguments: { text: 'through a lazy session' } });
      assert.equal(added.isError, undefined, JSON.stringify(added));
      const whoami = await client.callTool({ name: 'whoami', arguments: {} });
      assert.match(JSON.stringify(whoami.content), /alice/);
      const tools = await client.listTools();
      assert.ok(tools.tools.some((tool) => tool.name === 'notes_list'), JSON.stringify(tools));
    } finally {
      await client.close();
    }
  });
}
