// A call the server set recovers is recorded as what the client got: when a server's session is lost (its stdio
// process died, the HTTP server restarted and answers 404, or the gateway's own bound on that server's sessions
// evicted it), the set opens a new session and sends the call again;
// the client gets its answer, and the audit record and the request log line say allow. A session the endpoint does
// not know is still refused with 404, and recorded as that refusal.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AuditRecord } from '../../../src/core/audit/audit-record.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';
import { closeServer } from '../../helpers/loopback-server.js';
import { readJsonBody } from '../../helpers/read-json-body.js';
import { childEvents, pythonInterpreter, RawSession, ROOT, waitUntilGone } from '../../helpers/stdio-gateway.js';

const PYTHON = pythonInterpreter();
const SKIP = PYTHON ? false : 'python3 is not installed (.ci/run installs it), and the py server of the set is the Python stdio example';
const PY_SERVER = resolve(ROOT, 'examples/stdio-gateway/server.py');

/**
 * An MCP server over Streamable HTTP (2025-11-25) with sessions, on `port` (a free one when 0): `add` adds two
 * numbers; a session it did not issue gets 404 with -32001, as MCP asks of a server that restarted.
 */
async function startAdder(port = 0): Promise<{ server: Server; port: number; url: string }> {
  const sessions = new Set<string>();
  const server = createServer((req, res) => {
    void readJsonBody(req).then((message) => {
      const named = req.headers['mcp-session-id'];
      const answer = (status: number, body?: object, headers: Record<string, string> = {}) =>
        res.writeHead(status, body ? { 'content-type': 'application/json', ...headers } : headers).end(body ? JSON.stringify(body) : undefined);
      if (req.method !== 'POST') return answer(405, undefined, { allow: 'POST' });
      if (message?.method === 'initialize') {
        const id = `adder-${sessions.size + 1}`;
        sessions.add(id);
        return answer(200, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'adder', version: '1' } } }, { 'mcp-session-id': id });
      }
      if (typeof named !== 'string' || !sessions.has(named)) return answer(404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      if (message?.id === undefined) return answer(202);
      const args = message.params?.arguments as { a?: number; b?: number } | undefined;
      const result = message.method === 'tools/list' ? { tools: [{ name: 'add', inputSchema: { type: 'object' } }] } : { content: [{ type: 'text', text: String((args?.a ?? 0) + (args?.b ?? 0)) }] };
      return answer(200, { jsonrpc: '2.0', id: message.id, result });
    });
  });
  server.listen(port, '127.0.0.1');
  await new Promise((done) => server.once('listening', done));
  const bound = (server.address() as { port: number }).port;
  return { server, port: bound, url: `http://127.0.0.1:${bound}/mcp` };
}

let issuer: TestIssuer;
let dir: string;
let adder: Awaited<ReturnType<typeof startAdder>>;
let gateway: RunningGateway | undefined;
const lines: string[] = [];

before(async () => {
  issuer = await startTestIssuer();
  dir = mkdtempSync(join(tmpdir(), 'recovered-session-'));
  adder = await startAdder();
});
after(async () => {
  await gateway?.shutdown();
  closeServer(adder.server);
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a call the server set recovers after a lost session', { skip: SKIP, timeout: 60_000 }, () => {
  it('is answered and recorded as allowed; an unknown session is still refused and recorded as denied', async () => {
    const file = join(dir, 'audit.jsonl');
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_AUDIT: file }, { upstreamRequired: false });
    const servers: ServerConfig[] = [
      { name: 'py', transport: 'stdio', stdio: { command: PYTHON!, args: [PY_SERVER] }, required: false },
      // One session per caller with it: a caller's second client session evicts the first one's there.
      { name: 'web', transport: 'http', proxy: { upstream: adder.url, maxSessionsPerCaller: 1 }, required: false },
    ];
    gateway = await startGateway({ ...config, servers, listTimeoutMs: 5_000 }, { log: (line) => lines.push(line), warn: () => {} });
    const token = await issuer.sign({ aud: gateway.resource, sub: 'alice', client_id: 'console', scope: 'mcp' });
    const session = new RawSession(gateway.resource, token);
    assert.equal((await session.initialize()).status, 200);
    const add = (server: string, requestId: string) => session.post({ jsonrpc: '2.0', id: requestId, method: 'tools/call', params: { name: `${server}__add`, arguments: { a: 5, b: 6 } } }, { 'x-request-id': requestId });
    const sum = (answer: Awaited<ReturnType<typeof add>>): unknown => answer.json?.result?.content?.[0]?.text;

    assert.equal(sum(await add('py', 'py-first')), '11');
    const started = childEvents(lines).filter((e) => e.event === 'upstream_started' && e.server === 'py');
    assert.equal(started.length, 1, 'one process for the session');
    process.kill(started[0]!.pid as number, 'SIGKILL');
    assert.ok(await waitUntilGone(started[0]!.pid as number, 5_000));
    // The gateway sees the process end (its exit is logged) before the next call names its session.
    for (let i = 0; i < 100 && !childEvents(lines).some((e) => e.event === 'upstream_exit' && e.server === 'py'); i++) await new Promise((r) => setTimeout(r, 20));
    const recovered = await add('py', 'py-recovered');
    assert.equal(recovered.status, 200, recovered.text);
    assert.equal(sum(recovered), '11');
    assert.equal(childEvents(lines).filter((e) => e.event === 'upstream_started' && e.server === 'py').length, 2, 'a new process for a new session');

    assert.equal(sum(await add('web', 'web-first')), '11');
    const port = adder.port;
    closeServer(adder.server);
    adder = await startAdder(port);
    const restarted = await add('web', 'web-recovered');
    assert.equal(restarted.status, 200, restarted.text);
    assert.equal(sum(restarted), '11');

    // A second client session of the same caller takes the one session web allows it: the gateway itself then
    // refuses the first client session's web session, and the set opens a new one for the call.
    const second = new RawSession(gateway.resource, token);
    assert.equal((await second.initialize()).status, 200);
    assert.equal((await second.call('web__add', { a: 1, b: 1 })).json?.result?.content?.[0]?.text, '2');
    const evicted = await add('web', 'web-evicted');
    assert.equal(evicted.status, 200, evicted.text);
    assert.equal(sum(evicted), '11');

    const unknown = await postWithSession(gateway.resource, token, 'no-such-session', 'unknown-session');
    assert.equal(unknown.status, 404, unknown.text);
    await gateway.shutdown();
    gateway = undefined;

    const records = new Map(readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord).map((r) => [r.requestId, r]));
    const logged = new Map(lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => typeof l.requestId === 'string' && 'status' in l).map((l) => [l.requestId, l]));
    for (const id of ['py-first', 'py-recovered', 'web-first', 'web-recovered', 'web-evicted']) {
      const record = records.get(id);
      assert.deepEqual([record?.decision, record?.reason, record?.status, record?.server], ['allow', 'allowed', 200, id.split('-')[0]], `the audit record of ${id}`);
      const line = logged.get(id);
      assert.deepEqual([line?.decision, line?.reason, line?.status], ['allow', 'allowed', 200], `the request log line of ${id}`);
    }
    const refused = records.get('unknown-session');
    assert.deepEqual([refused?.decision, refused?.reason, refused?.status], ['deny', 'session_unknown', 404], 'a genuine refusal is recorded');
    const refusedLine = logged.get('unknown-session');
    assert.deepEqual([refusedLine?.decision, refusedLine?.reason, refusedLine?.status], ['deny', 'session_unknown', 404]);
  });
});

/** A call naming `sessionId`, which the endpoint never issued. */
function postWithSession(url: string, token: string, sessionId: string, requestId: string): ReturnType<RawSession['post']> {
  const stranger = new RawSession(url, token);
  stranger.sessionId = sessionId;
  return stranger.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'py__add', arguments: { a: 1, b: 2 } } }, { 'x-request-id': requestId });
}
