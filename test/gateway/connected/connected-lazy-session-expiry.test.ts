// Connected accounts, 2025-11-25 and a single upstream: the session the gateway opens for a user who has not
// connected yet (it answers the client's initialize itself) expires after MCP_AUTH_SESSION_IDLE_TIMEOUT_MS of idleness,
// as the gateway's other sessions do, and is then answered as an unknown session: 404 with -32001. With sealed ids the
// id still opens after that time, so only the gateway's own expiry can refuse it. A session in use does not expire.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';

const VERSION = '2025-11-25';
/** The idle timeout under test, in milliseconds: short, yet long beside one loopback round trip. */
const IDLE_MS = 1_000;

for (const sealed of [false, true]) {
  describe(`connected accounts: a session opened before the user connected expires when idle (${sealed ? 'sealed session ids' : 'session ids held by the gateway'})`, { timeout: 60_000 }, () => {
    let parts: ConnectedAccountsParts;
    let gateway: RunningGateway | undefined;
    let token = '';
    let nextId = 1;

    before(async () => {
      parts = await startConnectedAccountsParts();
      const secret: Record<string, string> = sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {};
      gateway = await startConnectedGateway(parts, { ...singleUpstreamSettings(parts), MCP_AUTH_SESSION_IDLE_TIMEOUT_MS: String(IDLE_MS), ...secret });
      token = await parts.callerToken(gateway.resource, 'bob');
    });

    after(async () => {
      await gateway?.shutdown();
      await parts?.close();
    });

    async function openSession(): Promise<string> {
      const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
      const opened = await postMcp(`${parts.origin}/mcp`, initialize, token);
      assert.equal(opened.status, 200, opened.text);
      const id = opened.headers['mcp-session-id'];
      assert.equal(typeof id, 'string');
      return id as string;
    }
    const call = (sessionId: string): Promise<HttpAnswer> =>
      postMcp(`${parts.origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'notes_list', arguments: {} } }, token, {
        'mcp-protocol-version': VERSION,
        'mcp-session-id': sessionId,
      });

    it('is answered with the connect link while in use, however long that lasts', async () => {
      const sessionId = await openSession();
      const started = Date.now();
      while (Date.now() - started < IDLE_MS * 2) {
        const answer = await call(sessionId);
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.json.result.isError, true);
        assert.match(JSON.stringify(answer.json.result.content), /\/connect\//);
        await sleep(IDLE_MS / 4);
      }
    });

    it('answers 404 Session not found once idle past the timeout, and a new session works', async () => {
      const sessionId = await openSession();
      assert.equal((await call(sessionId)).status, 200);
      await sleep(IDLE_MS + 200);
      const expired = await call(sessionId);
      assert.equal(expired.status, 404, expired.text);
      assert.deepEqual(expired.json.error, { code: -32001, message: 'Session not found' });
      assert.equal(expired.headers['www-authenticate'], undefined, 'a session refusal, not a token challenge');
      assert.doesNotMatch(expired.text, /\/connect\//, 'no connect link for an expired session');
      // Expired stays expired.
      assert.equal((await call(sessionId)).status, 404);
      const fresh = await call(await openSession());
      assert.equal(fresh.status, 200, fresh.text);
    });
  });
}
