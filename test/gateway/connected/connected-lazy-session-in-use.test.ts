// Connected accounts, 2025-11-25 and a single upstream that keeps sessions of its own, with session ids held by the
// gateway (its gate's registry then holds the sessions it opened before the user connected; sealed ids are held in no
// registry of the gate): a request of such a session is in use for the whole time the gateway holds it, so the session
// neither expires nor is ended meanwhile, however many requests the gateway answered itself before (the connect
// answer, 202 for a notification), and however long the opening of the upstream's session takes.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { postMcp } from '../../helpers/http-client.js';
import { connectAlice, deletes, echo, openSession, startSetup, stopSetup, VERSION, type Setup } from './lazy-session-setup.js';

/** The idle timeout under test, in milliseconds: short, yet long beside the connect flow's few round trips. */
const IDLE_MS = 4_000;

/** `notifications/initialized` in the session `sessionId`: the gateway answers it 202 itself until the upstream's session is open. */
async function notify(setup: Setup, sessionId: string): Promise<void> {
  const answer = await postMcp(`${setup.parts.origin}/mcp`, { jsonrpc: '2.0', method: 'notifications/initialized' }, setup.tokens.alice!, {
    'mcp-protocol-version': VERSION,
    'mcp-session-id': sessionId,
  });
  assert.equal(answer.status, 202, answer.text);
}

/** Waits (up to 5 s) until the upstream has received a request of `method`. */
async function waitForUpstream(setup: Setup, method: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!setup.upstream.received.some((entry) => entry.method === method) && Date.now() < deadline) await sleep(10);
  assert.ok(setup.upstream.received.some((entry) => entry.method === method), `the upstream received ${method}`);
}

/**
 * Alice calls `echo` in the session `clientId` while the upstream holds its answers to `method` (`hold`): the idle
 * timeout passes meanwhile and bob opens a session (which sweeps the gate's idle sessions). Then her call is answered,
 * and her session still serves her, its upstream session never ended.
 */
async function callPastIdleTimeout(setup: Setup, clientId: string, hold: () => () => void, method: string): Promise<void> {
  const release = hold();
  const pending = echo(setup, 'alice', clientId, 'held');
  await waitForUpstream(setup, method);
  await sleep(IDLE_MS + 300);
  await openSession(setup, 'bob');
  release();
  const answer = await pending;
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.result.content[0].text, 'echo: held');
  const later = await echo(setup, 'alice', clientId, 'after');
  assert.equal(later.status, 200, later.text);
  assert.equal(later.json.result.content[0].text, 'echo: after');
  assert.equal(deletes(setup.upstream).length, 0, "the upstream's session was not ended");
}

/** A suite of one case, with its own parts, upstream and gateway (whose sessions idle out after `IDLE_MS`). */
function withSetup(suite: string, name: string, body: (setup: Setup) => Promise<void>): void {
  describe(`connected accounts: a session opened before the user connected stays in use ${suite}`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup({ MCP_AUTH_SESSION_IDLE_TIMEOUT_MS: String(IDLE_MS) });
    });
    after(() => stopSetup(setup));
    it(name, () => body(setup!));
  });
}

withSetup('while a request is held', 'a slow call after requests the gateway answered itself is served, and so is the next one', async (s) => {
  const clientId = await openSession(s, 'alice');
  for (let i = 0; i < 3; i++) await notify(s, clientId);
  await connectAlice(s, clientId);
  // The connect flow's call opened the upstream's session: this one waits for the upstream's answer alone.
  await callPastIdleTimeout(s, clientId, s.upstream.holdCalls, 'tools/call');
});

withSetup('while its upstream session opens', 'a request waiting past the idle timeout for the opening is served, and so is the next one', async (s) => {
  const connecting = await openSession(s, 'alice');
  const clientId = await openSession(s, 'alice');
  await connectAlice(s, connecting);
  // Used once since the connect flow: the opening alone, not the time before it, outlasts the idle timeout.
  await notify(s, clientId);
  await callPastIdleTimeout(s, clientId, s.upstream.holdInitialize, 'initialize');
});
