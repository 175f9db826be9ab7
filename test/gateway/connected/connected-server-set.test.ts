// A server of a configuration file in connected mode, beside a plain one, for a user who has not connected it: lists
// leave its part empty and say why, with the link (MCP_AUTH_CONNECT_LISTS=show), or say nothing (hide), and never call
// it a server that is down; in a 2025-11-25 session, every call of its tools gets the URL elicitation error when the
// client declared URL elicitation, the tool result with the link when it did not. The notes server is never contacted.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONNECT_INPUT_KEY } from '../../../src/gateway/connected/flow/connection-required-answer.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { UNAVAILABLE_META_KEY } from '../../../src/gateway/multiplex/merge-lists.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { LOGIN_CLIENT, STORE_KEY, startConnectedAccountsParts, UPSTREAM_CLIENT, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { messages, postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';

const STATELESS = '2026-07-28';
const SESSION_VERSION = '2025-11-25';

let parts: ConnectedAccountsParts;
let plain: PlainMcpServer;
const gateways: RunningGateway[] = [];
const warnings: string[] = [];
let notesRequests = 0;

before(async () => {
  parts = await startConnectedAccountsParts();
  plain = await startPlainMcpServer();
  parts.notes.server.on('request', () => void notesRequests++);
});

after(async () => {
  for (const gateway of gateways) await gateway.shutdown();
  plain?.close();
  await parts?.close();
});

/** A gateway from a configuration file: notes in connected mode, and the plain server; `lists` is MCP_AUTH_CONNECT_LISTS. */
async function startSet(lists: 'show' | 'hide'): Promise<RunningGateway> {
  const file = join(parts.tempDir, `gateway-${lists}.json`);
  const servers = { notes: { url: parts.notes.url, auth: { mode: 'connected', clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: 'NOTES_SECRET', scope: 'notes:read' } }, plain: { url: plain.url } };
  writeFileSync(file, JSON.stringify({ gateway: { issuer: parts.gatewayAs.issuer, host: '127.0.0.1', port: 0, loginClientId: LOGIN_CLIENT.clientId, tokenStore: join(parts.tempDir, `tokens-${lists}`), connectLists: lists }, servers }));
  const env = { PATH: process.env.PATH, MCP_AUTH_CONFIG: file, NOTES_SECRET: UPSTREAM_CLIENT.clientSecret, MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY, MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret };
  const gateway = await startGateway(loadGatewayConfig(env), { log: () => {}, warn: (line) => warnings.push(line) });
  gateways.push(gateway);
  parts.trustGateway(gateway.resource);
  return gateway;
}

/** A 2025-11-25 session of alice with `gateway`, declaring `capabilities`; posts messages in it. */
async function openSession(gateway: RunningGateway, capabilities: object): Promise<(message: object) => Promise<HttpAnswer>> {
  const token = await parts.callerToken(gateway.resource, 'alice');
  const init = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities, clientInfo: { name: 't', version: '1' } } }, token);
  assert.equal(init.status, 200, init.text);
  const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': SESSION_VERSION };
  await postMcp(gateway.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
  return (message) => postMcp(gateway.resource, { jsonrpc: '2.0', ...message }, token, headers);
}

/** The JSON-RPC response of an answer (JSON or an event stream). */
const responseOf = (answer: HttpAnswer): any => messages(answer).find((message) => 'result' in message || 'error' in message);

describe('connected accounts in a server set, before the user connects', () => {
  it('show: lists keep the plain server, leave notes empty, and say why with the link, in 2026-07-28 and in a 2025-11-25 session', async () => {
    const gateway = await startSet('show');
    const token = await parts.callerToken(gateway.resource, 'alice');
    const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
    const stateless = responseOf(await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' }));
    const post = await openSession(gateway, {});
    const session = responseOf(await post({ id: 2, method: 'tools/list' }));
    for (const [revision, answer] of [[STATELESS, stateless], [SESSION_VERSION, session]] as const) {
      assert.deepEqual(answer.result.tools.map((tool: { name: string }) => tool.name), ['plain__echo'], revision);
      assert.equal(answer.result._meta?.[UNAVAILABLE_META_KEY], undefined, `${revision}: notes is not down`);
      const note = answer.result._meta?.[CONNECT_INPUT_KEY]?.notes as { message: string; url: string } | undefined;
      assert.match(note?.message ?? '', /"notes" is not connected/, `${revision}: ${JSON.stringify(answer.result)}`);
      assert.match(note!.url, new RegExp(`^${new URL(gateway.resource).origin}/connect/[A-Za-z0-9_-]{43}$`));
    }
    assert.ok(!warnings.some((line) => line.includes('"notes"')), warnings.join('\n'));
  });

  it('hide: notes is left out of lists without a word', async () => {
    const gateway = await startSet('hide');
    const post = await openSession(gateway, { elicitation: { url: {} } });
    const answer = responseOf(await post({ id: 1, method: 'tools/list' }));
    assert.deepEqual(answer.result.tools.map((tool: { name: string }) => tool.name), ['plain__echo']);
    assert.equal(answer.result._meta, undefined, JSON.stringify(answer.result));
  });

  it('2025-11-25: each call of its tools gets the URL elicitation error when the client declared it, the link as a tool result when not', async () => {
    const gateway = gateways[0]!;
    const declared = await openSession(gateway, { elicitation: { url: {} } });
    for (const id of [1, 2]) {
      const error = responseOf(await declared({ id, method: 'tools/call', params: { name: 'notes__notes_list', arguments: {} } })).error;
      assert.equal(error?.code, -32042, `call ${id}: ${JSON.stringify(error)}`);
      assert.equal(error.data.elicitations[0].mode, 'url');
    }
    const plainClient = await openSession(gateway, { elicitation: {} });
    for (const id of [1, 2]) {
      const result = responseOf(await plainClient({ id, method: 'tools/call', params: { name: 'notes__notes_list', arguments: {} } })).result;
      assert.equal(result?.isError, true, `call ${id}: ${JSON.stringify(result)}`);
      assert.match(result.content[0].text, /Open http:\/\/127\.0\.0\.1:\d+\/connect\/\S+ in a browser/);
    }
    assert.equal(notesRequests, 0, 'the notes server was never contacted');
  });
});
