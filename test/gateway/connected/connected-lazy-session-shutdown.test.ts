// Connected accounts, 2025-11-25 and a single upstream that keeps sessions of its own: shutdown that begins while the
// gateway is opening the upstream's session for a session of its own (the upstream has not answered `initialize`
// yet) waits for that opening within its bound, and ends what it opened with one DELETE: no upstream session is left.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { assertOneDelete, connectAlice, echo, openedUpstream, openSession, startSetup, stopSetup, waitForInitialize, type Setup } from './lazy-session-setup.js';

for (const sealed of [false, true]) {
  const secret: Record<string, string> = sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {};
  const label = sealed ? 'sealed session ids' : 'session ids held by the gateway';

  describe(`connected accounts: shutdown during the opening of an upstream session (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup(secret);
    });
    after(() => stopSetup(setup));

    it('the opening completes after shutdown began: the upstream session it opened gets one DELETE', async () => {
      const s = setup!;
      const clientId = await openSession(s, 'alice');
      await connectAlice(s, clientId);
      const release = s.upstream.holdInitialize();
      const waiting = echo(s, 'alice', clientId, 'racing').catch(() => undefined);
      await waitForInitialize(s.upstream);
      const stopping = s.gateway.shutdown();
      // Shutdown is under way (nothing else is in flight) before the upstream answers.
      await sleep(300);
      release();
      const started = Date.now();
      await stopping;
      assert.ok(Date.now() - started < 8_000, 'shutdown stays bounded');
      await waiting;
      const { opened, upstreamId } = openedUpstream(s);
      assertOneDelete(s, upstreamId, opened);
      assert.equal(s.upstream.sessions.size, 0, 'no upstream session is left');
    });
  });
}
