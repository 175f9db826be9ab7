// The DELETEs that end upstream sessions the gateway forgot: sent with the credentials' value, the session id, the
// protocol version and the identity headers; at most a few in flight, the rest queued up to a bound (past it dropped
// and counted, so a mass eviction can neither flood the upstream nor grow memory); bounded in time; a 401 retried once
// with renewed credentials; failures ignored; shutdown waits for them within its own deadline; nothing sent after.
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
  /** Authorization values the upstream refuses with 401. */
  const refused = new Set<string>();
  const server = createServer((req, res) => {
    received.push(req);
    if (hold) held.push(res);
    else res.writeHead(refused.has(req.headers.authorization ?? '') ? 401 : 200).end();
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

  it('keeps at most maxInFlight in flight and queues the rest, in order', async () => {
    received.length = 0;
    hold = true;
    const ends = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }), { maxInFlight: 2 });
    for (let i = 0; i < 5; i++) ends.end({ upstreamId: `up-${i}`, protocolVersion: '2025-11-25', caller });
    assert.equal(ends.pending, 2);
    assert.equal(ends.queued, 3);
    const deadline = Date.now() + 5_000;
    while (held.length < 2 && Date.now() < deadline) await sleep(10);
    await sleep(100);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-0', 'up-1'], 'two in flight, no more');
    hold = false;
    for (const res of held.splice(0)) res.writeHead(200).end();
    await settled(ends);
    assert.equal(ends.queued, 0);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-0', 'up-1', 'up-2', 'up-3', 'up-4'], 'the queued ones follow');
    assert.equal(ends.dropped, 0);
  });

  it('drops and counts the sessions past the queue bound', async () => {
    received.length = 0;
    hold = true;
    const ends = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }), { maxInFlight: 1, maxQueued: 2 });
    for (let i = 0; i < 6; i++) ends.end({ upstreamId: `up-${i}`, protocolVersion: '2025-11-25', caller });
    assert.deepEqual([ends.pending, ends.queued, ends.dropped], [1, 2, 3]);
    const deadline = Date.now() + 5_000;
    while (held.length < 1 && Date.now() < deadline) await sleep(10);
    hold = false;
    for (const res of held.splice(0)) res.writeHead(200).end();
    await settled(ends);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-0', 'up-1', 'up-2']);
  });

  it('sends a DELETE refused with 401 once more with renewed credentials, and never a third time', async () => {
    received.length = 0;
    const renewals: string[] = [];
    const renewing = (next: string | undefined): UpstreamCredentials => ({
      authorization: () => Promise.resolve('Bearer old'),
      renew: (_caller, rejected) => (renewals.push(rejected), Promise.resolve(next)),
    });
    refused.add('Bearer old');
    const ends = new UpstreamSessionEnds(settings, renewing('Bearer new'));
    ends.end({ upstreamId: 'up-r', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.deepEqual(received.map((req) => req.headers.authorization), ['Bearer old', 'Bearer new']);
    assert.deepEqual(renewals, ['Bearer old']);
    // Refused again after the renewal: left alone.
    received.length = 0;
    refused.add('Bearer new');
    ends.end({ upstreamId: 'up-r2', protocolVersion: '2025-11-25', caller });
    await settled(ends);
    assert.deepEqual(received.map((req) => req.headers.authorization), ['Bearer old', 'Bearer new']);
    assert.equal(renewals.length, 2, 'one renewal per session');
    // Nothing to renew with: one DELETE.
    received.length = 0;
    const none = new UpstreamSessionEnds(settings, renewing(undefined));
    none.end({ upstreamId: 'up-r3', protocolVersion: '2025-11-25', caller });
    await settled(none);
    assert.equal(received.length, 1);
    refused.clear();
  });

  it('at shutdown, waits for the DELETEs queued and in flight, within its deadline in all', async () => {
    received.length = 0;
    const ends = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }), { maxInFlight: 1 });
    for (let i = 0; i < 3; i++) ends.end({ upstreamId: `up-s${i}`, protocolVersion: '2025-11-25', caller });
    await ends.close(2_000);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-s0', 'up-s1', 'up-s2'], 'all sent before close resolved');
    // A stalled upstream: close gives up at its deadline and aborts what is in flight.
    received.length = 0;
    hold = true;
    const stalled = new UpstreamSessionEnds(settings, staticCredentials({ token: 'upstream-token' }), { maxInFlight: 1 });
    for (let i = 0; i < 3; i++) stalled.end({ upstreamId: `up-t${i}`, protocolVersion: '2025-11-25', caller });
    const started = Date.now();
    await stalled.close(300);
    assert.ok(Date.now() - started < 1_500, 'bounded by its own deadline');
    await settled(stalled);
    assert.equal(stalled.queued, 0);
    await sleep(50);
    assert.deepEqual(received.map((req) => req.headers['mcp-session-id']), ['up-t0'], 'the queued ones are abandoned');
    hold = false;
    for (const res of held.splice(0)) res.destroy();
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
