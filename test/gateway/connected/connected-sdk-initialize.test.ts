// Connected accounts with the official SDK client (2025-11-25, sessions) in front of a single upstream in connected
// mode: the client's `connect()` (initialize) should not need the user's connection, and the URL-elicitation
// capability it declared there should decide the later connect answer (-32042 rather than a tool-result link).
// Marked todo: the gateway does not open the single upstream's session lazily yet, so `initialize` itself asks
// the user to connect.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { singleUpstreamSettings, startConnectedAccountsParts, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';

let parts: ConnectedAccountsParts;
let gateway: RunningGateway | undefined;

before(async () => {
  parts = await startConnectedAccountsParts();
  gateway = await startGateway(loadGatewayConfig(singleUpstreamSettings(parts)), { log: () => undefined, warn: () => undefined });
  parts.trustGateway(gateway.resource);
});

after(async () => {
  await gateway?.shutdown();
  await parts?.close();
});

async function sdkClient(capabilities: Record<string, unknown>): Promise<Client> {
  const token = await parts.callerToken(gateway!.resource, 'alice');
  const transport = new StreamableHTTPClientTransport(new URL(`${parts.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'connected-sdk-test', version: '1.0.0' }, { capabilities });
  await client.connect(transport, { timeout: 10_000 });
  return client;
}

describe('connected accounts: the SDK client before the user connected', { timeout: 60_000 }, () => {
  it('connects, and a call gets -32042 for a client that declared URL elicitation', { todo: 'initialize needs the connection while the upstream session is opened with it' }, async () => {
    const client = await sdkClient({ elicitation: { url: {} } });
    try {
      await assert.rejects(client.callTool({ name: 'notes_list', arguments: {} }), (error: unknown) => error instanceof McpError && error.code === -32042);
    } finally {
      await client.close();
    }
  });

  it('connects, and a call gets a tool result with the link for a client without URL elicitation', { todo: 'initialize needs the connection while the upstream session is opened with it' }, async () => {
    const client = await sdkClient({});
    try {
      const result = await client.callTool({ name: 'notes_list', arguments: {} });
      assert.equal(result.isError, true);
      assert.match(JSON.stringify(result.content), /\/connect\//);
    } finally {
      await client.close();
    }
  });
});
