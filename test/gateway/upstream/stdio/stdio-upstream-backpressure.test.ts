/**
 * A stdio upstream that stops reading its stdin: what clients POST must not pile up in the gateway's memory.
 * A real Node child that pauses its input, real HTTP on 127.0.0.1, tokens from the real authorization server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../../../src/gateway/upstream/stdio/stdio-upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { NODE_SERVER, quote, RawSession, startStdioGateway } from '../../../helpers/stdio-gateway.js';

const NODE_COMMAND = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;
const STDIN_BOUND = 262_144;

let as: AuthorizationServer;
before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
});
after(async () => {
  await as?.close();
});

describe('a stdio upstream that stops reading stdin', { timeout: 60_000 }, () => {
  let gateway: RunningGateway;
  let upstream: StdioUpstream;

  before(async () => {
    ({ gateway, upstream } = await startStdioGateway(as, NODE_COMMAND, { MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES: String(STDIN_BOUND), MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '2000' }));
  });
  after(async () => {
    await gateway?.shutdown();
    assert.equal(upstream.processes, 0);
  });

  it('gets 503 with Retry-After and a JSON-RPC error once its unread input passes the bound, instead of 202 without end', async () => {
    const s = new RawSession(gateway.resource, await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' }));
    assert.equal((await s.initialize()).status, 200);
    assert.equal(await s.text('deaf'), 'deaf');
    // 100 KB notifications: the pipe holds some, then only the gateway could, past the bound it must not.
    const big = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(100_000) } };
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const answer = await s.post(big);
      statuses.push(answer.status);
      if (answer.status !== 202) refused = answer;
    }
    assert.ok(refused, `never refused: ${statuses.join(',')}`);
    assert.equal(refused.status, 503, refused.text);
    assert.match(String(refused.headers['retry-after']), /^\d+$/);
    assert.equal(refused.json.jsonrpc, '2.0');
    assert.equal(refused.json.error.code, -31503);
    assert.match(refused.json.error.message, /not reading/);
    // Accepted at most the pipe's share plus the bound (plus one message past it).
    assert.ok(statuses.filter((x) => x === 202).length * 100_000 <= STDIN_BOUND + 1_048_576 + 100_000, statuses.join(','));
    // A request is refused the same way, with its id.
    const request = await s.call('add', { a: 1, b: 2 }, 'r1');
    assert.equal(request.status, 503, request.text);
    assert.equal(request.json.id, 'r1');
    assert.equal(request.json.error.code, -31503);
  });
});
