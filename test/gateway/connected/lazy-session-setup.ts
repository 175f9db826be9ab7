// What the tests of sessions the gateway opens before the user connected share: the connected-accounts parts, an
// upstream with sessions of its own (see session-upstream.ts) and a gateway in front of it, and the client's steps.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, NOTES_SCOPES, singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';
import { startSessionUpstream, type Received, type SessionUpstream } from './session-upstream.js';

export const VERSION = '2025-11-25';

/** The parts, the upstream, the gateway, and a caller token per user (alice, bob). */
export interface Setup {
  readonly parts: ConnectedAccountsParts;
  readonly upstream: SessionUpstream;
  readonly gateway: RunningGateway;
  readonly tokens: Record<string, string>;
}

/** The parts, an upstream with sessions, and a gateway in front of it with `settings` besides the usual. */
export async function startSetup(settings: Record<string, string>): Promise<Setup> {
  const parts = await startConnectedAccountsParts();
  const upstream = await startSessionUpstream();
  parts.notesAs.addResource(upstream.url, { scopes: NOTES_SCOPES });
  const gateway = await startConnectedGateway(parts, {
    ...singleUpstreamSettings(parts),
    MCP_AUTH_UPSTREAM: upstream.url,
    MCP_AUTH_UPSTREAM_ISSUER: parts.notesAs.issuer,
    MCP_AUTH_UPSTREAM_RESOURCE: upstream.url,
    ...settings,
  });
  const tokens: Record<string, string> = {};
  for (const user of ['alice', 'bob']) tokens[user] = await parts.callerToken(gateway.resource, user);
  return { parts, upstream, gateway, tokens };
}

export async function stopSetup(setup: Setup | undefined): Promise<void> {
  await setup?.gateway.shutdown();
  await setup?.upstream.close();
  await setup?.parts.close();
}

let nextId = 1;

/** A new session of `user`'s (`initialize` without a session): the id the gateway gave. */
export async function openSession(setup: Setup, user: string): Promise<string> {
  const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
  const opened = await postMcp(`${setup.parts.origin}/mcp`, initialize, setup.tokens[user]!);
  assert.equal(opened.status, 200, opened.text);
  const id = opened.headers['mcp-session-id'];
  assert.equal(typeof id, 'string');
  return id as string;
}

/** A `tools/call` of `echo` in the session `sessionId`. */
export const echo = (setup: Setup, user: string, sessionId: string, text: string): Promise<HttpAnswer> =>
  postMcp(`${setup.parts.origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'echo', arguments: { text } } }, setup.tokens[user]!, {
    'mcp-protocol-version': VERSION,
    'mcp-session-id': sessionId,
  });

/** The client's DELETE of the session `sessionId`. */
export async function deleteSession(setup: Setup, user: string, sessionId: string): Promise<number> {
  const answer = await fetch(`${setup.parts.origin}/mcp`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${setup.tokens[user]!}`, 'mcp-protocol-version': VERSION, 'mcp-session-id': sessionId },
    signal: AbortSignal.timeout(10_000),
  });
  await answer.arrayBuffer();
  return answer.status;
}

/** Alice, in the session `clientId` opened before she connected, gets the connect answer and connects through its link. */
export async function connectAlice(setup: Setup, clientId: string): Promise<void> {
  const first = await echo(setup, 'alice', clientId, 'before');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.result.isError, true);
  const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.json.result.content))![1]!;
  const done = await new PageBrowser(setup.parts.origin).connect(link, CONNECTED_USERS[0], setup.parts.callback, setup.parts.upstreamCallback);
  assert.equal(done.status, 200, done.body);
}

/** The upstream's `initialize` answered 200 (the session the gateway opened there), and the id it issued. */
export function openedUpstream(setup: Setup): { opened: Received; upstreamId: string } {
  const opened = setup.upstream.received.find((entry) => entry.method === 'initialize' && entry.status === 200);
  assert.ok(opened, 'the upstream session was opened');
  assert.equal(setup.upstream.issued.length, 1);
  return { opened, upstreamId: setup.upstream.issued[0]! };
}

/**
 * Alice opens a session before connecting, connects through its link, and calls through it: the upstream's session is
 * then open. Gives the client's id, and the upstream's initialize as received (its id, alice's upstream token).
 */
export async function connectThroughSession(setup: Setup): Promise<{ clientId: string; opened: Received; upstreamId: string }> {
  const clientId = await openSession(setup, 'alice');
  await connectAlice(setup, clientId);
  const called = await echo(setup, 'alice', clientId, 'connected');
  assert.equal(called.status, 200, called.text);
  assert.equal(called.json.result.content[0].text, 'echo: connected');
  return { clientId, ...openedUpstream(setup) };
}

/** Waits (up to 5 s) until the upstream has received an `initialize` (one it may be holding). */
export async function waitForInitialize(upstream: SessionUpstream): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!upstream.received.some((entry) => entry.method === 'initialize') && Date.now() < deadline) await sleep(10);
}

/** The DELETEs the upstream received. */
export const deletes = (upstream: SessionUpstream): Received[] => upstream.received.filter((entry) => entry.httpMethod === 'DELETE');

/** Waits (up to 5 s) until the upstream has received `count` DELETEs. */
export async function waitForDeletes(upstream: SessionUpstream, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (deletes(upstream).length < count && Date.now() < deadline) await sleep(20);
}

/** The one DELETE the upstream received ended `upstreamId`, with the protocol version and the token it was opened with. */
export function assertOneDelete(setup: Setup, upstreamId: string, opened: Received): void {
  const received = deletes(setup.upstream);
  assert.equal(received.length, 1, 'exactly one DELETE');
  const [ended] = received;
  assert.equal(ended!.sessionId, upstreamId);
  assert.equal(ended!.protocolVersion, VERSION);
  assert.equal(ended!.status, 200, 'the upstream knew the session and its token');
  assert.ok(ended!.authorization?.startsWith('Bearer '));
  assert.equal(ended!.authorization, opened.authorization, "alice's own upstream token");
  assert.notEqual(ended!.authorization, `Bearer ${setup.tokens.alice}`, "never the caller's token");
  assert.equal(setup.upstream.sessions.has(upstreamId), false, "the upstream's session ended");
}
