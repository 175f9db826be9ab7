// The DELETEs that end upstream sessions the gateway forgot: sent with the credentials' value, the session id, the
// protocol version and the identity headers; at most a few in flight (the rest skipped, so a mass eviction cannot
// flood the upstream); bounded in time; failures ignored; nothing sent after close.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { staticCredentials, type UpstreamCredentials } from '../../../../src/gateway/upstream-auth/upstream-credentials.js';
import { UpstreamSessionEnds, type UpstreamSessionEndSettings } from '../../../../src/gateway/upstream/http/upstream-session-ends.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

const caller: AuthInfo = { token: '', clientId: 'client-1', scopes: ['mcp'], extra: { iss: 'https://issuer.example', sub: 'alice', claims: {}, tokenType: 'jwt' } };

describe('UpstreamSessionEnds', { timeout: 30_000 }, () => {
  const received: IncomingMessage[] = [];
  /** Answers waiting for the test to let them go (the upstream is slow). */
  const held: ServerResponse[] = [];
  let hold = false;
  const server = createServer((req, res) => {
    received.push(req);
    if (hold) held.push(res);
    else res.writeHead(200).end();
  });
  const dispatcher = new Agent({ connect: { timeout: 2_000 } });
  let settings: UpstreamSessionEndSettings;

  before(async () => {
    const origin = await listenOnLoopback(server);
    settings = { dispatcher, origin, path: '/mcp', connectTimeoutMs: 2_000, identity: { subject: 'x-user' } };
  });
  after(async () => {
    for (const res of held) res.destroy();
    closeServer(server);
    await dispatcher.close();
  });

  async function settled(ends: UpstreamSessionEnds): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (ends.pending > 0 && Date.now() < deadline) await sleep(10);
    assert.equal(ends.pending, 0);
  }

  it('sends a DELETE naming the session, the version, the credentials and the identity', async () => {
    received.length = 0;
    const ends = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }));
    ends.end({ upstreamId: 'up-1', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.equal(received.length, 1);
    const [req] = received;
    assert.equal(req!.method, 'DELETE');
    assert.equal(req!.url, '/mcp');
    assert.equal(req!.headers['mcp-session-id'], 'up-1');
    assert.equal(req!.headers['mcp-protocol-version'], '2025-11-25');
    assert.equal(req!.headers.authorization, 'Bearer upstream-token');
    assert.equal(req!.headers['x-user'], 'alice');
  });

  it('keeps at most maxInFlight in flight and skips the rest', async () => {
    received.length = 0;
    hold = true;
    const ends = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }), 2);
    for (let i = 0; i < 5; i++) ends.end({ upstreamId: `up-${i}`, protocolVersion: '2025-11-25', caller });
    assert.equal(ends.pending, 2);
    const deadline = Date.now() + 5_000;
    while (held.length < 2 && Date.now() < deadline) await sleep(10);
    await sleep(100);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-0', 'up-1']);
    hold = false;
    for (const res of held.splice(0)) res.writeHead(200).end();
    await settled(ends);
    // A slot is free again.
    ends.end({ upstreamId: 'up-5', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.equal(received.at(-1)!.headers['mcp-session-id'], 'up-5');
  });

  it('ignores failing credentials and sends nothing after close', async () => {
    received.length = 0;
    const failing: UpstreamCredentials = { authorization: () => Promise.reject(new Error('not connected')), renew: () => Promise.resolve(undefined) };
    const ends = new UpstreamSessionEnds(settings, failing);
    ends.end({ upstreamId: 'up-x', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    const closed = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }));
    closed.close();
    closed.end({ upstreamId: 'up-y', protocolVersion: '2025-11-25', caller });
    assert.equal(closed.pending, 0);
    await sleep(50);
    assert.equal(received.length, 0);
  });

  it('gives up on an upstream that does not answer within the time allowed', async () => {
    received.length = 0;
    hold = true;
    const ends = new UpstreamSessionEnds({ ...settings, connectTimeoutMs: 200 }, staticCredentials({ token: 'upstream-token' }));
    const started = Date.now();
    ends.end({ upstreamId: 'up-slow', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.ok(Date.now() - started < 2_000, 'ended by its own timeout');
    assert.equal(received.length, 1);
    hold = false;
  });

  it('gives up on credentials that take longer than the time allowed, freeing its slot', async () => {
    received.length = 0;
    const stalled = { ...staticCredentials({ token: 'upstream-token' }), authorization: () => new Promise<string>(() => {}) };
    const ends = new UpstreamSessionEnds({ ...settings, connectTimeoutMs: 200 }, stalled);
    const started = Date.now();
    ends.end({ upstreamId: 'up-stalled', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.ok(Date.now() - started < 2_000, 'ended by its own timeout');
    assert.equal(received.length, 0, 'nothing is sent without credentials');
  });
});
