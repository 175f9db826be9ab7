// Connected accounts, 2025-11-25 and a single upstream that keeps sessions of its own: the upstream session the
// gateway opened for a session of its own is ended there in the cases where nobody else would end it.
// - The client's DELETE arrives while another request of the session is opening the upstream's session: the DELETE is
//   answered 200, the opening, once complete, ends what it opened with one DELETE, and the request that waited for it
//   gets 404 -32001 (the session no longer exists) without reaching the upstream.
// - Shutdown ends the upstream sessions the gateway opened; a DELETE the upstream refuses with 401 is sent once more
//   with the user's token renewed (a refresh at the upstream's authorization server).
// - With session ids held by the gateway, a session evicted from the gate's registry by the caller's other sessions
//   is ended at once, its upstream session with it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { assertOneDelete, connectAlice, connectThroughSession, deleteSession, deletes, echo, openedUpstream, openSession, startSetup, stopSetup, waitForDeletes, waitForInitialize, type Setup } from './lazy-session-setup.js';

for (const sealed of [false, true]) {
  const secret: Record<string, string> = sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {};
  const label = sealed ? 'sealed session ids' : 'session ids held by the gateway';

  describe(`connected accounts: ending the upstream session of a session opened before the user connected (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup(secret);
    });
    after(() => stopSetup(setup));

    it('a DELETE during the opening: the opening ends what it opened, and the request that waited gets 404', async () => {
      const s = setup!;
      const clientId = await openSession(s, 'alice');
      await connectAlice(s, clientId);
      const release = s.upstream.holdInitialize();
      const waiting = echo(s, 'alice', clientId, 'racing');
      await waitForInitialize(s.upstream);
      assert.equal(await deleteSession(s, 'alice', clientId), 200, 'the session is ended for the client at once');
      release();
      const answer = await waiting;
      assert.equal(answer.status, 404, answer.text);
      assert.equal(answer.json.error.code, -32001);
      const { opened, upstreamId } = openedUpstream(s);
      await waitForDeletes(s.upstream, 1);
      assertOneDelete(s, upstreamId, opened);
      assert.equal(s.upstream.received.filter((entry) => entry.method === 'tools/call').length, 0, 'nothing was sent in the ended session');
      const later = await echo(s, 'alice', clientId, 'after');
      assert.equal(later.status, 404, later.text);
      await sleep(200);
      assert.equal(deletes(s.upstream).length, 1, 'still one DELETE');
    });
  });

  describe(`connected accounts: shutdown ends the upstream sessions the gateway opened (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup(secret);
    });
    after(() => stopSetup(setup));

    it("sends one DELETE per session, renewing alice's token once when the upstream refuses it with 401", async () => {
      const s = setup!;
      const { opened, upstreamId } = await connectThroughSession(s);
      s.upstream.control.refuseDeletes = 1;
      const started = Date.now();
      await s.gateway.shutdown();
      assert.ok(Date.now() - started < 8_000, 'shutdown is not held up');
      const received = deletes(s.upstream);
      assert.deepEqual(received.map((entry) => [entry.sessionId, entry.status]), [[upstreamId, 401], [upstreamId, 200]]);
      assert.equal(received[0]!.authorization, opened.authorization, 'first with the token the session was opened with');
      assert.ok(received[1]!.authorization?.startsWith('Bearer '));
      assert.notEqual(received[1]!.authorization, opened.authorization, 'then with the renewed token');
      assert.notEqual(received[1]!.authorization, `Bearer ${s.tokens.alice}`, "never the caller's token");
      assert.equal(s.upstream.sessions.has(upstreamId), false, "the upstream's session ended");
    });
  });
}

describe("connected accounts: a session evicted from the gate's registry ends the upstream's at once (session ids held by the gateway)", { timeout: 60_000 }, () => {
  let setup: Setup | undefined;
  before(async () => {
    setup = await startSetup({ MCP_AUTH_MAX_SESSIONS: '2' });
  });
  after(() => stopSetup(setup));

  it("alice's sessions opened at the upstream directly push it out: one DELETE, and her client gets 404", async () => {
    const s = setup!;
    const { clientId, opened, upstreamId } = await connectThroughSession(s);
    // Connected now: her new sessions are the upstream's own, held in the gate's registry only.
    await openSession(s, 'alice');
    assert.equal(deletes(s.upstream).length, 0, 'nothing forgotten within the bound');
    await openSession(s, 'alice');
    await waitForDeletes(s.upstream, 1);
    assertOneDelete(s, upstreamId, opened);
    const evicted = await echo(s, 'alice', clientId, 'after');
    assert.equal(evicted.status, 404, evicted.text);
    assert.deepEqual(evicted.json.error, { code: -32001, message: 'Session not found' });
  });
});
