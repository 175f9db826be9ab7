// Connected accounts, 2025-11-25 and a single upstream: before anyone has connected, the gateway answers a user's
// initialize itself with the capabilities a server may offer (tools, prompts, resources). Once it has opened a session
// at the upstream for one user, it has read the upstream's own initialize answer, and its later answers to users who
// have not connected yet carry the upstream's capabilities instead (never the instructions another user's session got). The upstream here offers tools
// only, has instructions, keeps no sessions, and answers initialize as an event stream.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, startConnectedGateway, type ConnectedAccountsParts, connectedSessionClient, startToolsOnlyConnectedParts } from '../../helpers/connected-accounts.js';
import { TOOLS_ONLY_PROFILE, type ToolsOnlyUpstream } from '../../helpers/tools-only-upstream.js';
import { PageBrowser } from './pages/page-browser.js';

const VERSION = TOOLS_ONLY_PROFILE.protocolVersion;
const CAPABILITIES = TOOLS_ONLY_PROFILE.capabilities;

describe('connected accounts: the pre-connect initialize answer learns the upstream capabilities', { timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let upstream: ToolsOnlyUpstream;
  let gateway: RunningGateway | undefined;
  let started: Awaited<ReturnType<typeof startToolsOnlyConnectedParts>> | undefined;

  before(async () => {
    started = await startToolsOnlyConnectedParts();
    ({ parts, upstream } = started);
    const settings = started.settings;
    gateway = await startConnectedGateway(parts, settings);
  });

  after(() => started?.close(gateway));

  const client = connectedSessionClient(() => parts, () => gateway!, VERSION);
  const initialize = client.initialize;
  const request = client.request;

  it('before any session was opened at the upstream, offers tools, prompts and resources', async () => {
    const { result } = await initialize('bob');
    assert.deepEqual(Object.keys(result.capabilities as object).sort(), ['prompts', 'resources', 'tools']);
    assert.equal(result.instructions, undefined);
    assert.equal(upstream.initialized(), 0);
  });

  it("once alice's session was opened there, bob's pre-connect initialize offers only what the upstream offers", async () => {
    const alice = await initialize('alice');
    const first = await request(alice.token, alice.sessionId, 'tools/call', { name: 'echo', arguments: {} });
    const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.json.result.content))![1]!;
    const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
    assert.equal(done.status, 200, done.body);
    const listed = await request(alice.token, alice.sessionId, 'tools/list');
    assert.equal(listed.status, 200, listed.text);
    assert.equal(upstream.initialized(), 1, "alice's session was opened at the upstream");

    const bob = await initialize('bob');
    assert.deepEqual(bob.result.capabilities, CAPABILITIES);
    // Never alice's instructions: they answered her session, and may speak of her account.
    assert.equal(bob.result.instructions, undefined);
    assert.equal(bob.result.protocolVersion, VERSION);
    assert.equal((bob.result.serverInfo as { name: string }).name === 'tools-only', false, "the gateway's own serverInfo");
    assert.equal(upstream.initialized(), 1, "bob's initialize was answered by the gateway");
    // Bob still gets the connect answer.
    const call = await request(bob.token, bob.sessionId, 'tools/call', { name: 'echo', arguments: {} });
    assert.equal(call.json.result.isError, true);
    assert.match(JSON.stringify(call.json.result.content), /\/connect\//);
  });
});
