// Policy reloads in a running gateway (startGateway in-process), with the real authorization server, an upstream
// built with the official SDK (2025 sessions, JSON answers), and a policy file in a temporary directory replaced
// by rename, as editors save. The watch is on (MCP_AUTH_POLICY_WATCH); SIGHUP to a real process is in
// policy-reload-cli.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { createPolicyReloader, POLICY_RELOAD_REFUSED_MESSAGE } from '../../../src/gateway/policy/policy-reload.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';

const PROTOCOL = '2025-11-25';
const SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

let as: AuthorizationServer;
let upstream: Server;
let gateway: RunningGateway;
let dir: string;
let policyFile: string;
let token: string;
let sessionId: string;
const lines: string[] = [];
const warnings: string[] = [];
let slowCalls: { reached: () => void; release: Promise<void> } | undefined;

/** An upstream with sessions, written with the SDK: three tools, `slow` answering when the test says so. */
async function startUpstream(): Promise<string> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: 'reload-upstream', version: '1.0.0' });
    const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
    server.registerTool('notes_read', { description: 'Read the notes.' }, () => text('read'));
    server.registerTool('notes_write', { description: 'Write a note.' }, () => text('written'));
    server.registerTool('slow', { description: 'Answers when released.' }, async () => {
      const pending = slowCalls;
      pending?.reached();
      await pending?.release;
      return text('slow done');
    });
    return server;
  };
  upstream = createServer((req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? transports.get(id) : undefined;
    if (transport === undefined) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: true, onsessioninitialized: (sid) => void transports.set(sid, created) });
      transport = created;
      void mcpServer().connect(created);
    }
    void transport.handleRequest(req, res);
  });
  upstream.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => upstream.once('listening', resolve));
  return `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
}

/** Replaces the policy file as editors save: a new file renamed over the old one. */
function replacePolicy(content: unknown): void {
  const next = join(dir, `.policy.json.${randomUUID()}`);
  writeFileSync(next, typeof content === 'string' ? content : JSON.stringify(content));
  renameSync(next, policyFile);
}

/** Waits (bounded) until `found` picks a line from `from`. */
async function waitForLine(from: string[], found: (line: Record<string, any>) => boolean, what: string, skip = 0): Promise<Record<string, any>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const hit = from.slice(skip).map((l) => JSON.parse(l) as Record<string, any>).find(found);
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error(`no ${what} within 15 s; log: ${from.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const mcp = (message: unknown): Promise<HttpAnswer> => postMcp(gateway.resource, message, token, { 'mcp-protocol-version': PROTOCOL, 'mcp-session-id': sessionId });
const callTool = (name: string, id = 2): Promise<HttpAnswer> => mcp({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const listTools = async (): Promise<string[]> => {
  const answer = await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  assert.equal(answer.status, 200, answer.text);
  return (answer.json.result.tools as { name: string }[]).map((t) => t.name).sort();
};

/** Reload by rename, then wait for the watch to put it in force. */
async function reloadTo(policy: unknown): Promise<Record<string, any>> {
  const skip = lines.length;
  replacePolicy(policy);
  return waitForLine(lines, (l) => l.event === 'policy_reloaded', 'policy_reloaded line', skip);
}

const V1 = { tools: { notes_read: ['notes:read'], notes_write: ['notes:admin'], slow: ['notes:read'] } };
const V2 = { tools: { notes_read: ['notes:admin'], notes_write: ['notes:write'], slow: ['notes:read'], notes_delet: ['notes:admin'] } };

describe('policy reloads in a running gateway', () => {
  before(async () => {
    as = await startAuthorizationServer();
    dir = mkdtempSync(join(tmpdir(), 'policy-reload-'));
    policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(V1));
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: await startUpstream(),
      MCP_AUTH_ISSUER: as.issuer,
      PORT: '0',
      MCP_AUTH_POLICY: policyFile,
      MCP_AUTH_POLICY_WATCH: 'on',
      // The metrics' tool label values are the policy's tool names: they follow a reload too.
      MCP_AUTH_METRICS_PORT: '0',
      MCP_AUTH_METRICS_TOOL_LABELS: 'on',
    });
    gateway = await startGateway(config, { log: (line) => lines.push(line), warn: (line) => warnings.push(line) });
    as.addResource(gateway.resource, { scopes: SCOPES });
    token = await as.issueAccessToken({ resource: gateway.resource, scope: 'notes:read notes:write', sub: 'alice' });
    const init = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'reload-test', version: '1' } } }, token);
    assert.equal(init.status, 200, init.text);
    sessionId = String(init.headers['mcp-session-id']);
    assert.equal((await mcp({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
  });

  after(async () => {
    await gateway?.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a tool allowed before is refused after the reload and the other way round; lists follow at once; the session keeps working', async () => {
    // (The reuse of filtered lists, which must not outlive its policy, is exercised by policy-reload-cli.test.ts,
    // whose upstream answers in the byte form the gateway reuses.)
    assert.deepEqual(await listTools(), ['notes_read', 'slow']);
    assert.equal((await callTool('notes_read')).status, 200);
    const refused = await callTool('notes_write');
    assert.equal(refused.status, 403);
    assert.match(String(refused.headers['www-authenticate']), /^Bearer error="insufficient_scope", error_description="[^"]*", scope="notes:admin notes:read notes:write"/);
    const metadataUrl = `${gateway.url}/.well-known/oauth-protected-resource/mcp`;
    const scopesBefore = ((await (await fetch(metadataUrl, { signal: AbortSignal.timeout(5000) })).json()) as { scopes_supported: string[] }).scopes_supported;
    assert.deepEqual(scopesBefore, ['notes:read', 'notes:admin']);
    // A tool the policy does not name yet: open, and counted as "other".
    await callTool('notes_delet');

    const mark = lines.length;
    const reloaded = await reloadTo(V2);
    assert.equal(reloaded.policy, policyFile);
    assert.equal(reloaded.trigger, 'watch');
    assert.deepEqual(reloaded.changed, { tools: { before: 3, after: 4 } });

    // The same session, at once: the list, the calls and the metadata follow the new policy.
    assert.deepEqual(await listTools(), ['notes_write', 'slow']);
    const allowed = await callTool('notes_write');
    assert.equal(allowed.status, 200, allowed.text);
    assert.equal(allowed.json.result.content[0].text, 'written');
    const stepUp = await callTool('notes_read');
    assert.equal(stepUp.status, 403);
    assert.match(String(stepUp.headers['www-authenticate']), /error="insufficient_scope", error_description="Insufficient scope for tool 'notes_read' \(tools\/call\): missing notes:admin", scope="notes:admin notes:read notes:write"/);
    assert.equal((await callTool('notes_delet')).status, 403);
    const metrics = await (await fetch(gateway.metricsUrl!, { signal: AbortSignal.timeout(5000) })).text();
    assert.match(metrics, /^mcp_guard_requests_total\{method="tools\/call",decision="allow",reason="allowed",tool="other"\} 1$/m);
    assert.match(metrics, /^mcp_guard_requests_total\{method="tools\/call",decision="deny",reason="scope_insufficient",tool="notes_delet"\} 1$/m);
    const scopesAfter = ((await (await fetch(metadataUrl, { signal: AbortSignal.timeout(5000) })).json()) as { scopes_supported: string[] }).scopes_supported;
    assert.deepEqual(scopesAfter, ['notes:admin', 'notes:write', 'notes:read']);

    // The start-up summary again, with the likely typo named.
    const summary = await waitForLine(lines, (l) => l.event === 'summary', 'summary after the reload', mark);
    assert.deepEqual(summary.tools, { protected: 3, open: 0 });
    assert.equal(summary.unmatchedRules, 1);
    const typo = await waitForLine(warnings, (w) => w.rule === 'notes_delet', 'the unmatched rule warning');
    assert.equal(typo.kind, 'tool');
  });

  it('a request in flight during a reload completes under the policy it started with', async () => {
    let reached!: () => void;
    const upstreamReached = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    slowCalls = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    const inFlight = callTool('slow', 5);
    await upstreamReached;
    await reloadTo({ tools: { notes_read: ['notes:read'], notes_write: ['notes:write'], slow: ['notes:admin'] } });
    release();
    const answer = await inFlight;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.content[0].text, 'slow done');
    slowCalls = undefined;
    // The next call of the same tool is under the new policy.
    assert.equal((await callTool('slow', 6)).status, 403);
  });

  it('an invalid file (bad JSON, unknown key, wrong type) keeps the policy in force and says why; a later valid file is picked up', async () => {
    await reloadTo(V1);
    for (const [content, detail] of [
      ['{"tools": {"notes_read": ["notes:read"],}}', /^MCP_AUTH_POLICY \(--policy\): policy file \S+policy\.json is not valid JSON at line 1, column \d+: .*Fix the syntax/],
      [{ tool: { notes_write: ['notes:write'] } }, /^MCP_AUTH_POLICY \(--policy\): unknown key "tool"; expected only .* \(in policy file \S+policy\.json\)$/],
      [{ tools: { notes_write: 'notes:write' } }, /^MCP_AUTH_POLICY\.tools\.notes_write: expected an array of scope strings, an object \{"scopes": \[\.\.\.\], "when": "<CEL expression>"\} \(or a function returning scopes\), got a string \("notes:write"\) \(in policy file \S+policy\.json\)$/],
    ] as const) {
      const skip = warnings.length;
      replacePolicy(content);
      const warning = await waitForLine(warnings, (w) => w.message === POLICY_RELOAD_REFUSED_MESSAGE, 'refused reload warning', skip);
      assert.match(warning.detail, detail);
      assert.equal(warning.policy, policyFile);
      assert.ok(!/\n|\s+at \S+ \(/.test(warning.detail), 'one line, no stack trace');
      // Still the policy in force before: notes_write needs notes:admin.
      assert.equal((await callTool('notes_write')).status, 403);
      assert.deepEqual(await listTools(), ['notes_read', 'slow']);
    }
    await reloadTo(V2);
    assert.equal((await callTool('notes_write')).status, 200);
  });

  it('a file removed while an editor replaces it is refused with the start-up reason, and picked up once it is back', async () => {
    const skip = warnings.length;
    rmSync(policyFile);
    const warning = await waitForLine(warnings, (w) => w.message === POLICY_RELOAD_REFUSED_MESSAGE, 'refused reload warning', skip);
    assert.match(warning.detail, /^MCP_AUTH_POLICY \(--policy\): policy file \S+ does not exist/);
    assert.equal((await callTool('notes_write')).status, 200, 'the policy in force stays');
    await reloadTo(V1);
    assert.equal((await callTool('notes_write')).status, 403);
  });

  it('reloadPolicy() reloads on request, even an unchanged file, and logs the summary again', async () => {
    const before = lines.length;
    const result = await gateway.reloadPolicy('test');
    assert.equal(result.reloaded, true);
    assert.ok(result.reloaded && 'coverage' in result.coverage);
    const reloaded = await waitForLine(lines, (l) => l.event === 'policy_reloaded', 'policy_reloaded line', before);
    assert.equal(reloaded.trigger, 'test');
    assert.deepEqual(reloaded.changed, {});
    assert.deepEqual(reloaded.edited, [], 'an unchanged file edits no rule');
    assert.ok(result.reloaded && Array.isArray(result.edited));
    await waitForLine(lines, (l) => l.event === 'summary', 'summary', before);
  });
});

describe('reloads that come while one is in progress', () => {
  it('are coalesced: at most one reload runs (with its listing), and one more follows for all that came meanwhile', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'policy-reload-coalesce-'));
    try {
      const file = join(folder, 'policy.json');
      writeFileSync(file, JSON.stringify({ tools: { a: ['x'] } }));
      const guard = createGuard({ issuer: 'https://as.example', resource: 'https://mcp.example/mcp' });
      const releases: (() => void)[] = [];
      let running = 0;
      let most = 0;
      const reload = createPolicyReloader({
        guard,
        file,
        log: () => {},
        warn: () => {},
        // The listing of the upstream, which for a stdio upstream starts a process: held until released.
        reportCoverage: async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise<void>((resolve) => releases.push(resolve));
          running -= 1;
          return { skipped: 'held by the test' };
        },
      });
      const first = reload('SIGHUP');
      await new Promise((resolve) => setImmediate(resolve));
      writeFileSync(file, JSON.stringify({ tools: { a: ['x'], b: ['y'] } }));
      const more = [reload('SIGHUP'), reload('watch'), reload('SIGHUP'), reload('call')];
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(releases.length, 1, 'one reload in progress, the others wait');
      releases.shift()!();
      assert.equal((await first).reloaded, true);
      const waiting = (): number => releases.length;
      while (waiting() === 0) await new Promise((resolve) => setImmediate(resolve));
      releases.shift()!();
      const results = await Promise.all(more);
      assert.ok(results.every((r) => r.reloaded && r.rules.tools === 2), 'the one that followed read the file as it was then');
      assert.equal(new Set(more).size, 1, 'every trigger that came meanwhile shares the one pending reload');
      assert.equal(most, 1);
      assert.equal(releases.length, 0, 'two reloads in all');
      assert.deepEqual(Object.keys(guard.policy.definition.tools ?? {}), ['a', 'b']);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
