/**
 * The stdio upstream's bounds and lifecycle, with the raw Node server as real child processes: the process
 * limits (429, nobody evicted), idle processes stopped, the session's GET stream, SIGKILL after the grace
 * period, and shutdown leaving no process behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { postMcp } from '../../../helpers/http-client.js';
import { childEvents, NODE_SERVER, quote, RawSession, startStdioGateway, waitUntilGone } from '../../../helpers/stdio-gateway.js';

const COMMAND = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;
let as: AuthorizationServer;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
});
after(async () => {
  await as?.close();
});

async function sessionFor(url: string, sub: string): Promise<RawSession> {
  const s = new RawSession(url, await as.issueAccessToken({ resource: url, scope: 'mcp:basic', sub }));
  return s;
}

async function pidOf(s: RawSession): Promise<number> {
  return (JSON.parse(await s.text('whoami')) as { pid: number }).pid;
}

describe('stdio upstream bounds', { timeout: 60_000 }, () => {
  it('past the per-caller and the total bound a new session gets 429, and nobody\'s process is stopped for it', async () => {
    const { gateway, upstream, logs } = await startStdioGateway(as, COMMAND, { MCP_AUTH_MAX_UPSTREAM_PROCESSES: '3', MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER: '2' });
    try {
      const url = gateway.resource;
      const alice = [await sessionFor(url, 'alice'), await sessionFor(url, 'alice'), await sessionFor(url, 'alice')];
      assert.equal((await alice[0]!.initialize()).status, 200);
      assert.equal((await alice[1]!.initialize()).status, 200);
      const third = await alice[2]!.initialize();
      assert.equal(third.status, 429);
      assert.equal(third.headers['retry-after'], '5');
      assert.equal(third.json.id, 0);
      assert.equal(third.json.error.code, -31429);
      assert.match(third.json.error.message, /for this caller/);
      assert.equal(third.headers['mcp-session-id'], undefined);

      const bob = await sessionFor(url, 'bob');
      assert.equal((await bob.initialize()).status, 200);
      const carol = await sessionFor(url, 'carol');
      const full = await carol.initialize();
      assert.equal(full.status, 429);
      assert.match(full.json.error.message, /on this gateway/);
      // Stateless (2026-07-28) requests would start a process too: the same bound.
      const sessionless = await postMcp(
        url,
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 1 }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } },
        carol.token,
        { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'add' },
      );
      assert.equal(sessionless.status, 429);
      assert.equal(upstream.processes, 3);
      // Everyone who had a process still has it, with its state.
      for (const s of [alice[0]!, alice[1]!, bob]) assert.equal(await s.text('counter_increment'), '1');
      // The request log says why.
      const refusals = logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.status === 429);
      assert.equal(refusals.length, 3);
      assert.ok(refusals.every((l) => l.upstreamError === 'upstream_busy'));

      // One ends its session: now Carol gets a process.
      const bobPid = await pidOf(bob);
      assert.equal((await bob.delete()).status, 200);
      assert.ok(await waitUntilGone(bobPid));
      assert.equal((await carol.initialize()).status, 200);
    } finally {
      await gateway.shutdown();
    }
    assert.equal(upstream.processes, 0);
  });

  it('a process with nothing in progress is stopped after the idle timeout; its session then answers 404', async () => {
    const { gateway, upstream, logs } = await startStdioGateway(as, COMMAND, { MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS: '300' });
    try {
      const s = await sessionFor(gateway.resource, 'dave');
      await s.initialize();
      const pid = await pidOf(s);
      // A request in progress keeps it: a call slower than the idle timeout.
      assert.equal(await s.text('slow', { ms: 600, tag: 'kept' }), 'slow kept');
      assert.ok(await waitUntilGone(pid, 5_000), 'the idle process was stopped');
      assert.equal((await s.call('add', { a: 1, b: 1 })).status, 404);
      assert.ok(childEvents(logs).some((e) => e.event === 'upstream_exit' && e.session === s.sessionId && e.reason === 'upstream_stopped'));
    } finally {
      await gateway.shutdown();
    }
    assert.equal(upstream.processes, 0);
  });
});

describe('stdio upstream lifecycle', { timeout: 60_000 }, () => {
  it('the GET stream carries what the process sends about no request; one per session; DELETE ends it', async () => {
    const { gateway } = await startStdioGateway(as, COMMAND);
    try {
      const s = await sessionFor(gateway.resource, 'erin');
      await s.initialize();
      const headers = { authorization: `Bearer ${s.token}`, accept: 'text/event-stream', ...s.headers() };
      const stream = await fetch(gateway.resource, { headers, signal: AbortSignal.timeout(15_000) });
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      const second = await fetch(gateway.resource, { headers, signal: AbortSignal.timeout(5_000) });
      assert.equal(second.status, 409);
      await second.arrayBuffer();
      assert.equal(await s.text('later', { data: 'on the GET stream', ms: 50 }), 'soon');
      const reader = stream.body!.getReader();
      let text = '';
      // The stream starts with a priming event (an id and empty data, 2025-11-25): the message is the first with data.
      while (!/data: \{[^\n]*\n\n/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      const data = JSON.parse(text.split('\n').find((l) => l.startsWith('data:') && l.slice(5).trim() !== '')!.slice(5));
      assert.deepEqual(data, { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'on the GET stream' } });
      assert.equal((await s.delete()).status, 200);
      // The stream ends with the process.
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
      }
      const sessionless = await fetch(gateway.resource, { headers: { authorization: `Bearer ${s.token}`, accept: 'text/event-stream' }, signal: AbortSignal.timeout(5_000) });
      assert.equal(sessionless.status, 405, 'GET without a session: nothing to stream');
      await sessionless.arrayBuffer();
    } finally {
      await gateway.shutdown();
    }
  });

  it('an initialize the process refuses issues no session and stops the process', async () => {
    const { gateway, upstream, logs } = await startStdioGateway(as, COMMAND);
    try {
      const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'judy' });
      const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'refused', version: '1' } } }, token);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.json, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'not today' } });
      assert.equal(answer.headers['mcp-session-id'], undefined);
      const started = childEvents(logs).find((e) => e.event === 'upstream_started');
      assert.ok(started && (await waitUntilGone(started.pid as number)));
      assert.equal(upstream.processes, 0);
    } finally {
      await gateway.shutdown();
    }
  });

  it('a process that ignores SIGTERM is killed after the grace period', async () => {
    const { gateway, logs } = await startStdioGateway(as, COMMAND, { MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '300' });
    try {
      const s = await sessionFor(gateway.resource, 'frank');
      await s.initialize();
      const pid = await pidOf(s);
      assert.equal(await s.text('stubborn'), 'stubborn');
      assert.equal((await s.delete()).status, 200);
      assert.ok(await waitUntilGone(pid, 5_000));
      const exit = childEvents(logs).find((e) => e.event === 'upstream_exit' && e.session === s.sessionId);
      assert.equal(exit?.signal, 'SIGKILL');
      assert.ok(childEvents(logs).some((e) => e.event === 'upstream_stderr' && /SIGTERM ignored/.test(e.line)));
    } finally {
      await gateway.shutdown();
    }
  });

  it('shutdown fails requests in progress, ends streams and stops every process before it resolves', async () => {
    const { gateway, upstream } = await startStdioGateway(as, COMMAND, { MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '500', MCP_AUTH_SHUTDOWN_TIMEOUT_MS: '200' });
    const pids: number[] = [];
    const sessions: RawSession[] = [];
    for (const sub of ['grace', 'heidi', 'ivan']) {
      const s = await sessionFor(gateway.resource, sub);
      await s.initialize();
      pids.push(await pidOf(s));
      sessions.push(s);
    }
    await sessions[0]!.text('stubborn');
    const stream = await fetch(gateway.resource, { headers: { authorization: `Bearer ${sessions[1]!.token}`, accept: 'text/event-stream', ...sessions[1]!.headers() }, signal: AbortSignal.timeout(15_000) });
    const slow = sessions[2]!.call('slow', { ms: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    await gateway.shutdown();
    assert.equal(upstream.processes, 0);
    for (const pid of pids) assert.ok(await waitUntilGone(pid, 100), `process ${pid} is gone once shutdown resolved`);
    const answer = await slow;
    assert.equal(answer.status, 503);
    assert.equal(answer.json.error.code, -32603);
    await stream.arrayBuffer();
  });
});
