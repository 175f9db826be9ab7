/**
 * The gateway in front of stdio MCP servers: the raw Python and Node servers of test/fixtures/stdio/ run as
 * real child processes, one per session, with tokens from the real authorization server. Every gateway is
 * shut down in `after`, which waits for its processes to exit; the tests check that none survives.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeMirroredHeaderValue } from '../../../../src/core/wire/header-value-encoding.js';
import type { RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../../../src/gateway/upstream/stdio/stdio-upstream.js';
import { SERVICE_CLIENT_ID, startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { messages, postMcp } from '../../../helpers/http-client.js';
import { childEvents, isRunning, RawSession, startStdioGateway, stdioServers, waitUntilGone } from '../../../helpers/stdio-gateway.js';

const BASE = 'mcp:basic';
const ADMIN = 'mcp:admin';
const POLICY = { scopesSupported: [BASE, ADMIN], requiredScopes: [BASE], tools: { '*': [], env_names: [ADMIN] } };

let as: AuthorizationServer;
let dir: string;
let policyFile: string;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: [BASE, ADMIN] });
  dir = mkdtempSync(join(tmpdir(), 'stdio-upstream-'));
  policyFile = join(dir, 'policy.json');
  writeFileSync(policyFile, JSON.stringify(POLICY));
});

after(async () => {
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The request log's session refusal reasons. */
function sessionRefusals(lines: readonly string[]): string[] {
  return lines.map((l) => JSON.parse(l) as { reason?: string }).flatMap((e) => (e.reason?.startsWith('session_') ? [e.reason] : []));
}

/** The pid a whoami answer names. */
async function pidOf(session: RawSession): Promise<number> {
  return (JSON.parse(await session.text('whoami')) as { pid: number }).pid;
}

for (const server of stdioServers()) {
  describe(`stdio upstream: the raw ${server.name} server`, { skip: server.skip, timeout: 60_000 }, () => {
    let gateway: RunningGateway;
    let upstream: StdioUpstream;
    let logs: string[];
    const pids = new Set<number>();

    const token = (sub: string, scope = BASE): Promise<string> => as.issueAccessToken({ resource: gateway.resource, scope, sub });
    async function session(sub: string, scope = BASE): Promise<RawSession> {
      const s = new RawSession(gateway.resource, await token(sub, scope));
      const init = await s.initialize();
      assert.equal(init.status, 200, init.text);
      return s;
    }

    before(async () => {
      ({ gateway, upstream, logs } = await startStdioGateway(as, server.command!, {
        MCP_AUTH_POLICY: policyFile,
        MCP_AUTH_IDENTITY_ENV: 'on',
        MCP_AUTH_UPSTREAM_ENV: 'STDIO_TEST_PASSED',
        MCP_AUTH_UPSTREAM_MAX_LINE_BYTES: '65536',
        MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER: '8',
        MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '2000',
        STDIO_TEST_PASSED: 'passed on purpose',
        GATEWAY_SECRET: 'must-not-reach-the-child',
      }, [BASE, ADMIN]));
    });

    after(async () => {
      await gateway?.shutdown();
      assert.equal(upstream.processes, 0);
      for (const pid of pids) assert.equal(isRunning(pid), false, `process ${pid} survived the shutdown`);
    });

    it('initialize starts a process and issues a session; calls, lists (filtered by the policy) and DELETE', async () => {
      const alice = new RawSession(gateway.resource, await token('alice'));
      const init = await alice.initialize();
      assert.equal(init.status, 200);
      assert.match(String(init.headers['content-type']), /^application\/json/);
      assert.match(alice.sessionId ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(init.json.id, 0);
      assert.match(init.json.result.serverInfo.name, /^raw-(python|node)-stdio-server$/);
      assert.equal(await alice.text('add', { a: 19, b: 23 }), '42');
      const list = await alice.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
      const names = list.json.result.tools.map((t: { name: string }) => t.name);
      assert.ok(names.includes('echo') && !names.includes('env_names'), `env_names needs ${ADMIN}: ${names.join(', ')}`);
      const refused = await alice.call('env_names');
      assert.equal(refused.status, 403);

      const pid = await pidOf(alice);
      pids.add(pid);
      const del = await alice.delete();
      assert.equal(del.status, 200);
      assert.ok(await waitUntilGone(pid), 'DELETE stops the process');
      const after = await alice.call('add', { a: 1, b: 2 });
      assert.equal(after.status, 404);
      assert.deepEqual(after.json, { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Session not found' } });
    });

    it('two users get separate processes with separate state, and neither can use the other\'s session', async () => {
      const alice = await session('alice');
      const bob = await session('bob');
      assert.deepEqual([await alice.text('counter_increment'), await alice.text('counter_increment'), await bob.text('counter_increment')], ['1', '2', '1']);
      const [alicePid, bobPid] = [await pidOf(alice), await pidOf(bob)];
      pids.add(alicePid).add(bobPid);
      assert.notEqual(alicePid, bobPid);

      // Bob's token naming Alice's session: the same 404 as an unknown session, and Alice's process never sees it.
      const intruder = new RawSession(gateway.resource, bob.token);
      intruder.sessionId = alice.sessionId;
      const logged = logs.length;
      const hijack = await intruder.call('counter_increment');
      assert.equal(hijack.status, 404);
      assert.deepEqual(hijack.json.error, { code: -32001, message: 'Session not found' });
      assert.equal((await intruder.delete()).status, 404);
      // The request log says why, which the answer does not.
      assert.deepEqual(sessionRefusals(logs.slice(logged)), ['session_owner_mismatch', 'session_owner_mismatch']);
      assert.equal(await alice.text('counter_increment'), '3');
      await alice.delete();
      await bob.delete();
    });

    it('each process learns its caller from MCP_CALLER_SUBJECT and MCP_CALLER_CLIENT_ID, and gets no other variable of the gateway', async () => {
      const admin = await session('carol', `${BASE} ${ADMIN}`);
      const who = JSON.parse(await admin.text('whoami')) as { subject: string; clientId: string; pid: number };
      pids.add(who.pid);
      assert.equal(who.subject, 'carol');
      assert.equal(who.clientId, SERVICE_CLIENT_ID);
      const names = (await admin.text('env_names')).split(' ');
      assert.ok(names.includes('PATH') && names.includes('STDIO_TEST_PASSED') && names.includes('MCP_CALLER_SUBJECT'), names.join(' '));
      // Python may add LC_CTYPE itself (PEP 538) when LANG is unset; nothing else may appear.
      const allowed = new Set(['PATH', 'HOME', 'LANG', 'LC_CTYPE', 'STDIO_TEST_PASSED', 'MCP_CALLER_SUBJECT', 'MCP_CALLER_CLIENT_ID', 'MCP_CALLER_ISSUER']);
      assert.deepEqual(names.filter((n) => !allowed.has(n)), [], 'only the whitelisted variables reach the process');
      assert.ok(!names.includes('GATEWAY_SECRET') && !names.some((n) => n.startsWith('MCP_AUTH_')));
      assert.ok(!(await admin.text('env_names')).includes(admin.token), 'never the token');
      await admin.delete();
    });

    it('distinct callers get distinct MCP_CALLER_SUBJECT values: plain ASCII as it is, anything else encoded, never stripped', async () => {
      const subjects = ['alice@example.com', 'alice\u0000@example.com', 'alice\u0416@example.com', 'ali\u200bce@example.com', 'alice@example.com\u2028'];
      const seen: string[] = [];
      for (const sub of subjects) {
        const s = await session(sub);
        const who = JSON.parse(await s.text('whoami')) as { subject: string; pid: number };
        pids.add(who.pid);
        assert.equal(decodeMirroredHeaderValue(who.subject), sub, JSON.stringify(who.subject));
        seen.push(who.subject);
        await s.delete();
      }
      assert.equal(seen[0], 'alice@example.com');
      assert.equal(seen[1], `=?base64?${Buffer.from('alice\u0000@example.com').toString('base64')}?=`, 'a NUL is encoded, not dropped');
      assert.equal(new Set(seen).size, subjects.length, seen.join('\n'));
    });

    it('a request reusing the id of one in progress in its session is refused; the first gets its answer, with its id', async () => {
      const s = await session('dave');
      const slow = s.call('slow', { ms: 400, tag: 'first' }, 7);
      await new Promise((r) => setTimeout(r, 100));
      const reused = await s.call('slow', { ms: 20, tag: 'second' }, 7);
      assert.equal(reused.status, 400);
      assert.equal(reused.json.id, 7);
      assert.equal(reused.json.error.code, -32600);
      assert.deepEqual((await slow).json, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'slow first' }] } });
      const again = await s.call('slow', { ms: 20, tag: 'second' }, 7);
      assert.deepEqual(again.json, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'slow second' }] } }, 'once answered, the id may come again');
      pids.add(await pidOf(s));
      await s.delete();
    });

    it('progress notifications stream as SSE on the request\'s answer, with the client\'s token', async () => {
      const s = await session('erin');
      const answer = await s.call('progress', { steps: 3 }, 'p-1', { progressToken: 'my-token' });
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), /^text\/event-stream/);
      const events = messages(answer);
      assert.deepEqual(
        events.map((m) => m.params?.progress ?? m.id),
        [1, 2, 3, 'p-1'],
      );
      assert.ok(events.slice(0, 3).every((m) => m.method === 'notifications/progress' && m.params.progressToken === 'my-token' && m.params.total === 3));
      assert.equal(events[3].result.content[0].text, 'done after 3 steps');
      // Without a token there is nothing to stream: a plain JSON answer.
      const plain = await s.call('progress', { steps: 2 });
      assert.match(String(plain.headers['content-type']), /^application\/json/);
      pids.add(await pidOf(s));
      await s.delete();
    });

    it('a request of the process\'s (sampling) reaches the client on the call\'s stream, and the client\'s answer goes back to it', async () => {
      const s = await session('frank');
      // Read the call's event stream as it arrives, to answer the request in it.
      const res = await fetch(gateway.resource, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...s.headers() },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'ask', method: 'tools/call', params: { name: 'ask_client', arguments: { question: 'ready?' } } }),
        signal: AbortSignal.timeout(15_000),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const reader = res.body!.getReader();
      let text = '';
      const nextMessage = async (): Promise<any> => {
        for (;;) {
          const end = text.indexOf('\n\n');
          if (end !== -1) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            // A priming event (an id and empty data, 2025-11-25) carries no message.
            const data = block.split('\n').find((l) => l.startsWith('data:') && l.slice(5).trim() !== '');
            if (data) return JSON.parse(data.slice(5));
            continue;
          }
          const { value, done } = await reader.read();
          if (done) throw new Error('stream ended');
          text += new TextDecoder().decode(value);
        }
      };
      const request = await nextMessage();
      assert.equal(request.method, 'sampling/createMessage');
      assert.equal(request.params.messages[0].content.text, 'ready?');
      const accepted = await s.post({ jsonrpc: '2.0', id: request.id, result: { role: 'assistant', model: 'test', content: { type: 'text', text: 'yes' } } });
      assert.equal(accepted.status, 202);
      const response = await nextMessage();
      assert.deepEqual(response, { jsonrpc: '2.0', id: 'ask', result: { content: [{ type: 'text', text: 'client said: yes' }] } });
      await reader.cancel();
      pids.add(await pidOf(s));
      await s.delete();
    });

    it('stdout lines that are not JSON and stderr go to the log with the session id, never to the client', async () => {
      const s = await session('grace');
      const answer = await s.call('noise');
      assert.deepEqual(answer.json.result.content, [{ type: 'text', text: 'noisy' }]);
      assert.ok(!answer.text.includes('not JSON-RPC'));
      const mine = childEvents(logs).filter((e) => e.session === s.sessionId);
      assert.ok(mine.some((e) => e.event === 'upstream_stdout_not_json' && e.line === 'this line is not JSON-RPC'), JSON.stringify(mine));
      assert.ok(mine.some((e) => e.event === 'upstream_stderr' && /a line on stderr/.test(e.line)));
      assert.ok(mine.some((e) => e.event === 'upstream_started' && typeof e.pid === 'number'));
      pids.add(await pidOf(s));
      await s.delete();
    });

    it('a process that crashes fails its request with a JSON-RPC error, and its session then answers 404', async () => {
      const s = await session('heidi');
      const pid = await pidOf(s);
      pids.add(pid);
      const crash = await s.call('crash', {}, 'boom');
      assert.equal(crash.status, 502);
      assert.deepEqual(crash.json, { jsonrpc: '2.0', id: 'boom', error: { code: -32603, message: 'Bad gateway: the upstream MCP server process exited' } });
      const next = await s.call('add', { a: 1, b: 1 });
      assert.equal(next.status, 404);
      assert.equal(next.json.error.code, -32001);
      const exit = childEvents(logs).find((e) => e.session === s.sessionId && e.event === 'upstream_exit');
      assert.equal(exit?.reason, 'upstream_exited');
      assert.equal(exit?.exitCode, 3);
      assert.equal(isRunning(pid), false);
      // The caller simply starts a new session.
      const again = await session('heidi');
      assert.equal(await again.text('add', { a: 1, b: 1 }), '2');
      pids.add(await pidOf(again));
      await again.delete();
    });

    it('an oversized line ends the process with a logged reason', async () => {
      const s = await session('ivan');
      const pid = await pidOf(s);
      pids.add(pid);
      const answer = await s.call('oversized', { bytes: 100_000 });
      assert.equal(answer.status, 502);
      assert.match(answer.json.error.message, /larger than the gateway accepts/);
      assert.ok(await waitUntilGone(pid));
      const exit = childEvents(logs).find((e) => e.session === s.sessionId && e.event === 'upstream_exit');
      assert.equal(exit?.reason, 'upstream_line_too_large');
      assert.equal((await s.call('add', { a: 1, b: 1 })).status, 404);
    });

    it('requests without a session (2026-07-28) go to one process per caller', async () => {
      const call = (tok: string, id: number): Promise<any> =>
        postMcp(
          gateway.resource,
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'counter_increment', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } },
          tok,
          { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'counter_increment' },
        );
      const [judy, ken] = [await token('judy'), await token('ken')];
      const answers = [await call(judy, 1), await call(judy, 2), await call(ken, 3)];
      for (const a of answers) assert.equal(a.status, 200, a.text);
      assert.deepEqual(answers.map((a) => a.json.result.content[0].text), ['1', '2', '1']);
      assert.equal(answers[0].headers['mcp-session-id'], undefined, 'no session is issued');
    });
  });
}
