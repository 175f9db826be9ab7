// Connected accounts, 2025-11-25 and a single upstream, with sealed session ids: the sessions the gateway opens for a
// user who has not connected yet are held in this process's memory, in the gateway's one session registry, so they
// are bounded per caller as the gateway's other sessions are (MCP_AUTH_MAX_SESSIONS_PER_CALLER). Past the bound a
// caller's own least recently used session is forgotten (404 with -32001); another caller's sessions are untouched.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';

const VERSION = '2025-11-25';
const PER_CALLER = 2;

describe('connected accounts: sessions opened before the user connected are bounded per caller (sealed session ids)', { timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let gateway: RunningGateway | undefined;
  const tokens: Record<string, string> = {};
  let nextId = 1;

  before(async () => {
    parts = await startConnectedAccountsParts();
    gateway = await startConnectedGateway(parts, {
      ...singleUpstreamSettings(parts),
      MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url'),
      MCP_AUTH_MAX_SESSIONS_PER_CALLER: String(PER_CALLER),
    });
    for (const user of ['alice', 'bob'] as const) tokens[user] = await parts.callerToken(gateway.resource, user);
  });

  after(async () => {
    await gateway?.shutdown();
    await parts?.close();
  });

  async function openSession(user: string): Promise<string> {
    const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
    const opened = await postMcp(`${parts.origin}/mcp`, initialize, tokens[user]!);
    assert.equal(opened.status, 200, opened.text);
    const id = opened.headers['mcp-session-id'];
    assert.equal(typeof id, 'string');
    return id as string;
  }
  const call = (user: string, sessionId: string): Promise<HttpAnswer> =>
    postMcp(`${parts.origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'notes_list', arguments: {} } }, tokens[user]!, {
      'mcp-protocol-version': VERSION,
      'mcp-session-id': sessionId,
    });
  const assertConnectAnswer = (answer: HttpAnswer): void => {
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.isError, true);
    assert.match(JSON.stringify(answer.json.result.content), /\/connect\//);
  };

  it("forgets a caller's least recently used session past the bound, and no other caller's", async () => {
    const alices = await openSession('alice');
    const bobs = [await openSession('bob'), await openSession('bob'), await openSession('bob')];
    const forgotten = await call('bob', bobs[0]!);
    assert.equal(forgotten.status, 404, forgotten.text);
    assert.deepEqual(forgotten.json.error, { code: -32001, message: 'Session not found' });
    for (const kept of bobs.slice(1)) assertConnectAnswer(await call('bob', kept));
    // Bob's sessions pushed none of alice's out.
    assertConnectAnswer(await call('alice', alices));
  });
});
