// With the stateful SDK 1.x adapter, the 2026-07-28 header check runs before any session lookup: a request
// whose Mcp-Name disagrees with its body gets 400 -32020 whether or not its Mcp-Session-Id is known,
// never a 404 that would tell a caller which session ids exist.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { createSdkNotesServer } from '../../examples/sdk-server.js';
import { NotesStore, notesChallengeScopes, notesPolicy } from '../../examples/notes-server.js';
import { listenWithGuard, type GuardedServer } from '../../examples/serve-guarded.js';
import { mcpOAuthGuard } from '../../src/index.js';
import { sdkStreamableHttpHandler, type SdkStreamableHttpHandler, type SessionRefusedEvent } from '../../src/sdk/index.js';
import { postMcp } from '../helpers/http-client.js';

const V2026 = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': V2026, 'io.modelcontextprotocol/clientCapabilities': {} };

let as: AuthorizationServer;
let running: GuardedServer;
let handler: SdkStreamableHttpHandler;
let token: string;
const refused: SessionRefusedEvent[] = [];

before(async () => {
  as = await startAuthorizationServer();
  const store = new NotesStore();
  handler = sdkStreamableHttpHandler({ createServer: () => createSdkNotesServer(store), stateful: true, onSessionRefused: (e) => refused.push(e) });
  running = await listenWithGuard('127.0.0.1', 0, (resource) =>
    mcpOAuthGuard({ issuer: as.issuer, resource, policy: notesPolicy, challengeScopes: notesChallengeScopes, handler }),
  );
  as.addResource(running.url, { scopes: ['notes:read', 'notes:write', 'notes:admin'] });
  token = await as.issueAccessToken({ resource: running.url, scope: 'notes:read', sub: 'alice' });
});
after(async () => {
  await handler?.close();
  await running?.close();
  await as?.close();
});

/** A 2026-07-28-style tools/call: `_meta` in the body and the mirrored headers. */
function call2026(name: string, headers: Record<string, string>) {
  return postMcp(
    running.url,
    { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: {}, _meta: META } },
    token,
    { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', ...headers },
  );
}

describe('stateful SDK adapter: header check before session lookup', () => {
  test('an unknown Mcp-Session-Id with a mismatched Mcp-Name gets 400 -32020, not 404', async () => {
    const res = await call2026('notes_list', { 'mcp-name': 'notes_clear', 'mcp-session-id': 'no-such-session' });
    assert.equal(res.status, 400);
    assert.equal(res.json.id, 7);
    assert.equal(res.json.error.code, -32020);
    assert.equal(res.json.error.message, "Header mismatch: Mcp-Name header value 'notes_clear' does not match body value 'notes_list'");
    assert.equal(refused.length, 0, 'no session was looked up');
  });

  test('an unknown Mcp-Session-Id with a mismatched Mcp-Method gets 400 -32020 too', async () => {
    const res = await call2026('notes_list', { 'mcp-method': 'tools/list', 'mcp-name': 'notes_list', 'mcp-session-id': 'no-such-session' });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, -32020);
    assert.equal(refused.length, 0);
  });

  test('control: with matching headers the same unknown session is looked up and gets 404 -32001', async () => {
    const res = await call2026('notes_list', { 'mcp-name': 'notes_list', 'mcp-session-id': 'no-such-session' });
    assert.equal(res.status, 404);
    assert.equal(res.json.error.code, -32001);
    assert.equal(res.json.error.message, 'Session not found');
    assert.deepEqual(refused.map((e) => [e.reason, e.sessionId]), [['session_unknown', 'no-such-session']]);
  });

  test('a known session gets the same 400 for a mismatch, and stays usable', async () => {
    const init = await postMcp(
      running.url,
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      token,
    );
    assert.equal(init.status, 200);
    const sid = init.headers['mcp-session-id'];
    assert.equal(typeof sid, 'string');
    const mismatch = await call2026('notes_list', { 'mcp-name': 'notes_clear', 'mcp-session-id': sid as string });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json.error.code, -32020);
    assert.equal(handler.sessionCount, 1);
  });
});
