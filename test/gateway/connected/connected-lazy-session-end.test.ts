// Connected accounts, 2025-11-25 and a single upstream that keeps sessions of its own: when the gateway forgets a
// session it opened before the user connected (idle expiry, eviction at MCP_AUTH_MAX_SESSIONS), it ends the upstream's
// session it had opened for it with one DELETE, naming the upstream's id and the protocol version, sent with the
// user's own upstream token. The client's next request gets 404, as for any forgotten session.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { assertOneDelete, connectThroughSession, deletes, echo, openSession, startSetup, stopSetup, waitForDeletes, type Setup } from './lazy-session-setup.js';

/** The idle timeout of the expiry case, in milliseconds: short, yet long beside a few loopback round trips on a loaded machine. */
const IDLE_MS = 3_000;

for (const sealed of [false, true]) {
  const secret: Record<string, string> = sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {};
  const label = sealed ? 'sealed session ids' : 'session ids held by the gateway';

  describe(`connected accounts: an idle session opened before the user connected ends the upstream's (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup({ MCP_AUTH_SESSION_IDLE_TIMEOUT_MS: String(IDLE_MS), ...secret });
    });
    after(() => stopSetup(setup));

    it('sends one DELETE once the session expired, without any request of the client, which then gets 404', async () => {
      const s = setup!;
      const { clientId, opened, upstreamId } = await connectThroughSession(s);
      assert.equal(deletes(s.upstream).length, 0, 'nothing ended while in use');
      await waitForDeletes(s.upstream, 1);
      assertOneDelete(s, upstreamId, opened);
      const expired = await echo(s, 'alice', clientId, 'after');
      assert.equal(expired.status, 404, expired.text);
      assert.deepEqual(expired.json.error, { code: -32001, message: 'Session not found' });
      await sleep(IDLE_MS / 2);
      assert.equal(deletes(s.upstream).length, 1, 'still one DELETE');
      assert.equal(s.upstream.issued.length, 1, 'no upstream session opened for a forgotten one');
    });
  });

  describe(`connected accounts: an evicted session opened before the user connected ends the upstream's (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup({ MCP_AUTH_MAX_SESSIONS: '2', ...secret });
    });
    after(() => stopSetup(setup));

    it("another caller's sessions push it out: one DELETE with alice's token, and her client gets 404", async () => {
      const s = setup!;
      const { clientId, opened, upstreamId } = await connectThroughSession(s);
      // Bob has not connected: his sessions are the gateway's too, and the second one is past the bound of two.
      await openSession(s, 'bob');
      assert.equal(deletes(s.upstream).length, 0, 'nothing forgotten within the bound');
      await openSession(s, 'bob');
      await waitForDeletes(s.upstream, 1);
      assertOneDelete(s, upstreamId, opened);
      const evicted = await echo(s, 'alice', clientId, 'after');
      assert.equal(evicted.status, 404, evicted.text);
      assert.deepEqual(evicted.json.error, { code: -32001, message: 'Session not found' });
      assert.equal(deletes(s.upstream).length, 1, 'still one DELETE');
    });
  });
}
