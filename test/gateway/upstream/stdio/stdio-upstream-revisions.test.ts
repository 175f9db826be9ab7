/**
 * What each MCP revision allows on a stdio upstream's streams: 2026-07-28 (stateless) request streams carry only
 * what relates to their request, and its clients send no responses; a 2025 request outside a session is refused
 * as that revision's transport says. Real Node children, real HTTP on 127.0.0.1, the real authorization server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../../../src/gateway/upstream/stdio/stdio-upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { messages, postMcp } from '../../../helpers/http-client.js';
import { NODE_SERVER, PROTOCOL_VERSION, quote, startStdioGateway } from '../../../helpers/stdio-gateway.js';

const NODE_COMMAND = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;
const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } };

let as: AuthorizationServer;
before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
});
after(async () => {
  await as?.close();
});

describe('a stdio upstream and the revisions', { timeout: 60_000 }, () => {
  let gateway: RunningGateway;
  let upstream: StdioUpstream;
  const token = (sub: string): Promise<string> => as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub });

  /** A 2026-07-28 tools/call, its headers mirroring the body. */
  async function statelessCall(sub: string, name: string, id: number | string = 1) {
    return postMcp(gateway.resource, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: META } }, await token(sub), {
      'mcp-protocol-version': STATELESS,
      'mcp-method': 'tools/call',
      'mcp-name': name,
    });
  }

  before(async () => {
    // A short idle timeout: a request the gateway wrongly leaves waiting ends in seconds, not minutes.
    ({ gateway, upstream } = await startStdioGateway(as, NODE_COMMAND, { MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '4000', MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '2000' }));
  });
  after(async () => {
    await gateway?.shutdown();
    assert.equal(upstream.processes, 0);
  });

  it('2026-07-28: a request of the child\'s is never sent on a request stream; the child gets an error at once', async () => {
    const answer = await statelessCall('alice', 'ask_client');
    assert.equal(answer.status, 200, answer.text);
    assert.doesNotMatch(answer.text, /sampling\/createMessage/);
    const [last] = messages(answer).slice(-1);
    assert.equal(last.result.content[0].text, 'client said: no answer');
  });

  it('2026-07-28: a notification about no request (list_changed) is not put on the request that waits', async () => {
    const answer = await statelessCall('alice', 'changed');
    assert.equal(answer.status, 200, answer.text);
    assert.doesNotMatch(answer.text, /list_changed/);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.equal(answer.json.result.content[0].text, 'changed');
  });

  it('2026-07-28: a POSTed JSON-RPC response is refused with 400, its clients must not send one', async () => {
    const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, result: {} }, await token('alice'), { 'mcp-protocol-version': STATELESS });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.error.code, -32600);
    assert.equal(answer.json.id, null);
  });

  it('2025: a request without Mcp-Session-Id that is not initialize gets 400 and starts no process', async () => {
    const before = upstream.processes;
    const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } }, await token('bob'), { 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.json.id, 3);
    assert.equal(answer.json.error.code, -32600);
    assert.match(answer.json.error.message, /Mcp-Session-Id/);
    const note = await postMcp(gateway.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, await token('bob'), { 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(note.status, 400, note.text);
    assert.equal(upstream.processes, before);
  });
});
