// Connecting again replaces the connection and revokes the one replaced at the upstream's authorization server
// (RFC 7009), so that its refresh token does not stay live there, unkept; and revokes it before the browser reaches
// that server, since this one (oidc-provider) adds a new authorization of the same browser session to the old grant
// and revokes the whole grant with a refresh token: revoked afterwards, the new tokens would go too. Real parts: the
// gateway, the notes example behind its own oidc-provider, a scripted browser; activity seen by RFC 7662
// introspection at that server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, tokenActive, watchIssuedTokens, type ConnectedAccountsParts, type IssuedTokens } from '../../helpers/connected-accounts.js';
import { postMcp } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';

const STATELESS = '2026-07-28';
const ALICE = CONNECTED_USERS[0];
const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };

let parts: ConnectedAccountsParts;
let gateway: RunningGateway | undefined;
let issued: IssuedTokens;

before(async () => {
  parts = await startConnectedAccountsParts();
  gateway = await startConnectedGateway(parts, singleUpstreamSettings(parts));
  issued = watchIssuedTokens(parts.notesAs);
});

after(async () => {
  await gateway?.shutdown();
  await parts?.close();
});

/** alice calls `name`: the answer's result. */
async function call(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const token = await parts.callerToken(gateway!.resource, 'alice');
  const answer = await postMcp(`${parts.origin}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: meta } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': name });
  assert.equal(answer.status, 200, answer.text);
  return answer.json.result;
}

/** The connect link of an input-required result. */
function linkOf(result: Record<string, unknown>): string {
  assert.equal(result.resultType, 'input_required', JSON.stringify(result));
  const [request] = Object.values(result.inputRequests as Record<string, { params: { url: string } }>);
  return request!.params.url;
}

describe('connected accounts: connecting again revokes the connection replaced', { timeout: 60_000 }, () => {
  it('a step-up: the old refresh token is revoked, the new connection works', async () => {
    const browser = new PageBrowser(parts.origin);
    const first = await browser.connect(linkOf(await call('notes_list')), ALICE, parts.callback, parts.upstreamCallback);
    assert.equal(first.status, 200, first.body);
    assert.equal(issued.refreshTokens.length, 1);
    const [oldRefresh] = issued.refreshTokens;
    assert.equal((await call('notes_list')).isError, undefined);

    // notes_clear needs notes:admin, which the connection lacks: a step-up, in the same browser.
    const again = await browser.connect(linkOf(await call('notes_clear')), ALICE, parts.callback, parts.upstreamCallback);
    assert.equal(again.status, 200, again.body);
    assert.equal(issued.refreshTokens.length, 2);
    const newRefresh = issued.refreshTokens[1]!;
    assert.equal(await tokenActive(parts.notesAs, oldRefresh!), false, 'the replaced refresh token is revoked');
    assert.equal(await tokenActive(parts.notesAs, newRefresh), true, 'the new one is not');
    assert.equal((await call('notes_clear')).isError, undefined, 'the new connection works');
  });
});
