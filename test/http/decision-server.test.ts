// With several servers behind one endpoint, the decision hook and the request log name the server a request is for,
// on an allow and on a deny decided before any server was reached (a missing scope, a server policy's condition),
// and name none for a tool no server exposes. Real HTTP, real jose tokens.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../src/core/kernel/decision.js';
import { compilePolicySet } from '../../src/core/policy/policy-set.js';
import { createRequestLog } from '../../src/http/request-log.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';

let issuer: TestIssuer;
let server: Server;
let url: string;
const events: DecisionEvent[] = [];
const lines: Record<string, unknown>[] = [];

before(async () => {
  issuer = await startTestIssuer();
  const log = createRequestLog({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const policy = compilePolicySet({
    gateway: { tools: { b__echo: ['b:use'] } },
    servers: [{ name: 'a' }, { name: 'b', policy: { tools: { refund: { scopes: [], when: '"finance" in claims.groups' } } } }],
  });
  const guard = createGuard({
    issuer: issuer.issuer,
    resource: RESOURCE,
    policy,
    onDecision: (event, request) => {
      events.push(event);
      log.onDecision(event, request);
    },
  });
  const pipeline = createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { content: [] } }));
  server = createServer((req, res) => log.middleware(req, res, () => void (pipeline.serve(req, res) || res.writeHead(404).end())));
  url = `${await listenOnLoopback(server)}/mcp`;
});
after(async () => {
  if (server) closeServer(server);
  await issuer?.close();
});

/** Calls `name` as `requestId`; returns the hook's event and, once the answer has ended, the request log's line. */
async function callTool(requestId: string, name: string, claims: Record<string, unknown>, status: number): Promise<{ event: DecisionEvent; line: Record<string, unknown> | undefined }> {
  events.length = 0;
  const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'console', ...claims });
  const answer = await postMcp(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } }, token, { 'mcp-protocol-version': '2025-11-25', 'x-request-id': requestId });
  assert.equal(answer.status, status, answer.text);
  assert.equal(events.length, 1);
  // The line is written when the response closes, which may come a moment after the client has read the answer.
  for (let i = 0; i < 50 && !lines.some((l) => l.requestId === requestId); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return { event: events[0]!, line: lines.find((l) => l.requestId === requestId) };
}

describe('the server a decision is for', () => {
  test('an allowed call names its server in the event and the log line', async () => {
    const { event, line } = await callTool('allow-1', 'a__echo', { scope: 'mcp' }, 200);
    assert.deepEqual([event.decision, event.server], ['allow', 'a']);
    assert.deepEqual([line?.decision, line?.server], ['allow', 'a']);
  });

  test('a call refused for a missing scope names its server in the event and the log line', async () => {
    const { event, line } = await callTool('scope-1', 'b__echo', { scope: 'mcp' }, 403);
    assert.deepEqual([event.decision, event.reason, event.rule, event.server], ['deny', 'scope_insufficient', 'tools.b__echo', 'b']);
    assert.deepEqual([line?.decision, line?.reason, line?.server], ['deny', 'scope_insufficient', 'b']);
    // A tool no server exposes is for no server.
    const unknown = await callTool('unknown-1', 'c__echo', { scope: 'mcp' }, 200);
    assert.deepEqual([unknown.event.reason, unknown.event.server, unknown.line?.reason, unknown.line?.server], ['target_unknown', undefined, 'target_unknown', undefined]);
  });

  test("a call refused by a server policy's condition names its server in the event and the log line", async () => {
    const { event, line } = await callTool('condition-1', 'b__refund', { scope: 'mcp', groups: ['dev'] }, 403);
    assert.deepEqual([event.decision, event.reason, event.rule, event.server], ['deny', 'condition_denied', 'servers.b.tools.refund', 'b']);
    assert.deepEqual([line?.decision, line?.reason, line?.server], ['deny', 'condition_denied', 'b']);
    const allowed = await callTool('condition-2', 'b__refund', { scope: 'mcp', groups: ['finance'] }, 200);
    assert.deepEqual([allowed.event.condition, allowed.event.server], ['"finance" in claims.groups', 'b']);
  });
});
