// Connected accounts in front of an upstream that keeps sessions of its own (2025-11-25): the gateway answers the
// client's initialize before the user has connected, then opens the upstream's session with the user's token. The
// upstream here issues its own Mcp-Session-Id, refuses a request without it (400) or with one it does not know (404),
// and can forget every session as a restart would. The test checks the mapping both ways: the upstream sees its own
// id on every request after initialize, the client only ever the gateway's; the client's DELETE ends the upstream's
// session; and after the upstream forgot its sessions, the gateway opens a new one once, without the client noticing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, NOTES_SCOPES, singleUpstreamSettings, startConnectedAccountsParts, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp, send, type HttpAnswer } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';
import { startSessionUpstream, type SessionUpstream } from './session-upstream.js';

const VERSION = '2025-11-25';

for (const sealed of [false, true]) {
  describe(`connected accounts: an upstream with sessions of its own (${sealed ? 'sealed session ids' : 'session ids held by the gateway'})`, { timeout: 60_000 }, () => {
    let parts: ConnectedAccountsParts;
    let upstream: SessionUpstream;
    let gateway: RunningGateway | undefined;
    let token = '';
    let clientId = '';
    let nextId = 1;

    before(async () => {
      parts = await startConnectedAccountsParts();
      upstream = await startSessionUpstream();
      parts.notesAs.addResource(upstream.url, { scopes: NOTES_SCOPES });
      const settings = {
        ...singleUpstreamSettings(parts),
        MCP_AUTH_UPSTREAM: upstream.url,
        MCP_AUTH_UPSTREAM_ISSUER: parts.notesAs.issuer,
        MCP_AUTH_UPSTREAM_RESOURCE: upstream.url,
        ...(sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {}),
      };
      gateway = await startGateway(loadGatewayConfig(settings), { log: () => undefined, warn: () => undefined });
      parts.trustGateway(gateway.resource);
      token = await parts.callerToken(gateway.resource, 'alice');
    });

    after(async () => {
      await gateway?.shutdown();
      upstream?.close();
      await parts?.close();
    });

    const post = (message: object): Promise<HttpAnswer> =>
      postMcp(`${parts.origin}/mcp`, { jsonrpc: '2.0', ...message }, token, { 'mcp-protocol-version': VERSION, 'mcp-session-id': clientId });
    const request = (method: string, params: object = {}) => post({ id: nextId++, method, params });

    /** The upstream's ids never reach the client: every answer names the client's own id, or none. */
    function assertClientsId(answer: HttpAnswer): void {
      const named = answer.headers['mcp-session-id'];
      if (named !== undefined) assert.equal(named, clientId);
      for (const id of upstream.issued) assert.ok(!answer.text.includes(id), 'no upstream session id in the body');
    }

    it('initialize is answered by the gateway, and the user connects in the browser', async () => {
      const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
      const opened = await postMcp(`${parts.origin}/mcp`, initialize, token);
      assert.equal(opened.status, 200, opened.text);
      clientId = String(opened.headers['mcp-session-id']);
      assert.ok(clientId.length > 20);
      assert.equal(upstream.received.length, 0, 'the upstream was not asked before the user connected');
      assert.equal((await post({ method: 'notifications/initialized' })).status, 202);

      const first = await request('tools/call', { name: 'echo', arguments: { text: 'before' } });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.json.result.isError, true);
      const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.json.result.content))![1]!;
      const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
      assert.equal(done.status, 200, done.body);
    });

    it('lists and calls reach the upstream under its own session id; the client sees only its own', async () => {
      for (let round = 0; round < 3; round++) {
        const listed = await request('tools/list');
        assert.equal(listed.status, 200, listed.text);
        assert.deepEqual(listed.json.result.tools.map((tool: { name: string }) => tool.name), ['echo']);
        assertClientsId(listed);
        const called = await request('tools/call', { name: 'echo', arguments: { text: `round ${round}` } });
        assert.equal(called.status, 200, called.text);
        assert.equal(called.json.result.content[0].text, `echo: round ${round}`);
        assertClientsId(called);
      }
      assert.equal(upstream.issued.length, 1, 'one upstream session');
      const [opened, ...rest] = upstream.received.filter((entry) => entry.status !== 401);
      assert.equal(opened!.method, 'initialize');
      assert.equal(opened!.sessionId, undefined);
      assert.equal(rest.length, 7, 'initialized, then three lists and three calls');
      for (const entry of rest) {
        assert.equal(entry.sessionId, upstream.issued[0], `${entry.method} under the upstream's own id`);
        assert.notEqual(entry.authorization, `Bearer ${token}`, "the user's upstream token, never the caller's");
        assert.ok(entry.status === 200 || entry.status === 202, `${entry.method}: ${entry.status}`);
      }
    });

    it('after the upstream forgot its sessions, the gateway opens a new one once and the request succeeds', async () => {
      upstream.restart();
      const before = upstream.received.length;
      const listed = await request('tools/list');
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.json.result.tools.map((tool: { name: string }) => tool.name), ['echo']);
      assertClientsId(listed);
      assert.equal(upstream.issued.length, 2, 'one new upstream session');
      const seen = upstream.received.slice(before).map((entry) => `${entry.method ?? entry.httpMethod} ${entry.status}`);
      assert.deepEqual(seen, ['tools/list 404', 'initialize 200', 'notifications/initialized 202', 'tools/list 200']);
      const called = await request('tools/call', { name: 'echo', arguments: { text: 'after restart' } });
      assert.equal(called.json.result.content[0].text, 'echo: after restart');
      assert.equal(upstream.received.at(-1)!.sessionId, upstream.issued[1]);
      assert.equal(upstream.issued.length, 2);
    });

    it('requests that find the upstream session gone at once share one new session', async () => {
      upstream.restart();
      const answers = await Promise.all([request('tools/list'), request('tools/list'), request('tools/call', { name: 'echo', arguments: { text: 'together' } })]);
      for (const answer of answers) {
        assert.equal(answer.status, 200, answer.text);
        assertClientsId(answer);
      }
      assert.equal(upstream.issued.length, 3, 'one new upstream session for all three');
      assert.equal(upstream.received.filter((entry) => entry.method === 'initialize').length, 3);
    });

    it("the client's DELETE ends the upstream's session", async () => {
      const current = upstream.issued.at(-1)!;
      assert.ok(upstream.sessions.has(current));
      const ended = await send(`${parts.origin}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': clientId, 'mcp-protocol-version': VERSION } });
      assert.equal(ended.status, 200, ended.text);
      assert.equal(upstream.received.at(-1)!.httpMethod, 'DELETE');
      assert.equal(upstream.received.at(-1)!.sessionId, current);
      assert.equal(upstream.sessions.has(current), false, 'the upstream session ended');
      assert.equal(upstream.received.filter((entry) => entry.httpMethod === 'DELETE').length, 1, 'the client\'s DELETE alone: the gateway sends none of its own');
      const after = await request('tools/list');
      assert.equal(after.status, 404, after.text);
      assert.equal(upstream.issued.length, 3, 'no session opened for an ended one');
    });
  });
}
