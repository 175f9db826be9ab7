// The gateway's policy coverage log and start-up summary, in front of real upstreams: a raw node:http MCP server
// that needs a session and pages its tools, the plain upstream example, the notes example (itself protected), and
// a stdio server; each with a policy holding a typo.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startUpstreamServer } from '../../../examples/gateway/upstream-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { reportPolicyCoverage } from '../../../src/gateway/policy/policy-coverage-report.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';
import { isRunning, NODE_SERVER, quote } from '../../helpers/stdio-gateway.js';

/** What the raw upstream saw: each request's method, session and Authorization header. */
interface Seen {
  method: string;
  session: string | undefined;
  authorization: string | undefined;
  httpMethod: string;
}

/**
 * A raw node:http MCP server (2025 sessions): initialize issues an Mcp-Session-Id, every other request needs it
 * (400 without), tools/list answers in two pages, and answers come as an event stream, as the SDK's do.
 */
async function startSessionServer(): Promise<{ url: string; server: Server; seen: Seen[] }> {
  const seen: Seen[] = [];
  const sessions = new Set<string>();
  const tools = ['add', 'echo', 'secret_admin'];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const session = req.headers['mcp-session-id'] as string | undefined;
      if (req.method === 'DELETE') {
        seen.push({ method: 'DELETE', session, authorization: req.headers.authorization, httpMethod: 'DELETE' });
        if (session) sessions.delete(session);
        res.writeHead(200).end();
        return;
      }
      const message = JSON.parse(body) as { id?: number; method: string; params?: { cursor?: string } };
      seen.push({ method: message.method, session, authorization: req.headers.authorization, httpMethod: req.method ?? '' });
      const reply = (result: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
      };
      if (message.method === 'initialize') {
        const id = `s-${sessions.size + 1}`;
        sessions.add(id);
        reply({ protocolVersion: '2025-11-25', capabilities: { tools: {}, prompts: {}, resources: {} }, serverInfo: { name: 'raw', version: '1' } }, { 'mcp-session-id': id });
        return;
      }
      if (!session || !sessions.has(session)) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } }));
        return;
      }
      if (message.method === 'notifications/initialized') return void res.writeHead(202).end();
      if (message.method === 'tools/list') {
        const page = message.params?.cursor === 'page-2' ? tools.slice(2) : tools.slice(0, 2);
        return reply({ tools: page.map((name) => ({ name, inputSchema: { type: 'object' } })), ...(message.params?.cursor ? {} : { nextCursor: 'page-2' }) });
      }
      if (message.method === 'prompts/list') return reply({ prompts: [{ name: 'summarize' }] });
      if (message.method === 'resources/list') return reply({ resources: [{ uri: 'docs://readme', name: 'readme' }] });
      if (message.method === 'resources/templates/list') return reply({ resourceTemplates: [{ uriTemplate: 'docs://{name}', name: 'docs' }] });
      reply({});
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, seen };
}

let issuer: TestIssuer;
let dir: string;
const running: { shutdown(): Promise<void> }[] = [];
const servers: Server[] = [];

function policyFile(name: string, policy: object): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(policy));
  return file;
}

async function gatewayFor(settings: Record<string, string>): Promise<{ gateway: RunningGateway; logs: string[]; warnings: string[] }> {
  const logs: string[] = [];
  const warnings: string[] = [];
  const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0', ...settings }), {
    log: (line) => logs.push(line),
    warn: (line) => warnings.push(line),
  });
  running.push(gateway);
  return { gateway, logs, warnings };
}

const parse = (lines: readonly string[]) => lines.map((l) => JSON.parse(l) as Record<string, any>);
const summaryOf = (logs: readonly string[]) => parse(logs).find((l) => l.event === 'summary');

describe('policy coverage log and summary', () => {
  before(async () => {
    issuer = await startTestIssuer();
    dir = mkdtempSync(join(tmpdir(), 'policy-coverage-'));
  });
  after(async () => {
    for (const r of running) await r.shutdown();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await issuer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a session upstream with paged tools: open tools, the typo with its suggestion, the summary; no token is sent', async () => {
    const upstream = await startSessionServer();
    servers.push(upstream.server);
    const policy = policyFile('typo.json', { tools: { ad: ['calc:use'], echo: ['calc:use'], secret_admin: ['calc:admin'] }, prompts: { sumarize: ['p'] }, resources: { 'docs://{name}': ['docs:read'] }, rateLimits: { tools: { ech: '10/min' } } });
    const { gateway, logs, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_POLICY: policy });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('coverage' in report, JSON.stringify(report));

    const lines = parse(warnings);
    const openTools = lines.find((l) => l.kind === 'tools');
    assert.deepEqual(openTools?.names, ['add'], 'add has no rule (the policy says "ad"), so it is open');
    // One sentence with check's, plurals agreeing with the counts.
    assert.equal(openTools!.message, 'policy: 1 of 3 tools has no rule (neither its own nor "*"), so any valid token may use it; add a rule (or "*") under "tools" in the policy');
    assert.equal(lines.find((l) => l.kind === 'prompts')?.message, 'policy: 1 of 1 prompt has no rule (neither its own nor "*"), so any valid token may use it; add a rule (or "*") under "prompts" in the policy');
    assert.deepEqual(
      lines.filter((l) => l.rule !== undefined).map((l) => [l.kind, l.rule, l.suggestion]),
      [
        ['tool', 'ad', 'add'],
        ['prompt', 'sumarize', 'summarize'],
        ['tool rate limit', 'ech', 'echo'],
      ],
    );
    assert.match(lines.find((l) => l.rule === 'ech')!.message, /the tool rate limit rule "ech" matches nothing the upstream lists; did you mean "echo"\?/);
    assert.match(lines.find((l) => l.rule === 'ad')!.message, /the tool rule "ad" matches nothing the upstream lists; did you mean "add"\?/);
    assert.deepEqual(lines.find((l) => l.kind === 'prompts')?.names, ['summarize']);
    assert.equal(lines.find((l) => l.kind === 'resources'), undefined, 'the template rule covers the resource and the template');

    const summary = summaryOf(logs);
    assert.deepEqual(summary?.issuers, [issuer.issuer]);
    assert.equal(summary?.policy, policy);
    assert.equal(summary?.upstream, upstream.url);
    assert.deepEqual(summary?.tools, { protected: 2, open: 1 });
    assert.deepEqual(summary?.resources, { protected: 2, open: 0 });
    assert.equal(summary?.unmatchedRules, 3);

    assert.deepEqual(
      upstream.seen.map((s) => s.method),
      ['initialize', 'notifications/initialized', 'tools/list', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'DELETE'],
    );
    assert.ok(upstream.seen.slice(1).every((s) => s.session === 's-1'), 'every request after initialize names its session');
    assert.ok(upstream.seen.every((s) => s.authorization === undefined), 'no Authorization header reaches the upstream');
  });

  it('a protected upstream is listed with the gateway\'s own upstream credential, never a caller\'s', async () => {
    const upstream = await startSessionServer();
    servers.push(upstream.server);
    const { gateway } = await gatewayFor({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: 'gateway-own-token' });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('coverage' in report, JSON.stringify(report));
    assert.ok(upstream.seen.length > 0);
    assert.ok(upstream.seen.every((s) => s.authorization === 'Bearer gateway-own-token'), JSON.stringify(upstream.seen.map((s) => s.authorization)));
  });

  it('an upstream that takes only tokens made for each caller is skipped for good, saying why, with nothing sent', async () => {
    const upstream = await startSessionServer();
    servers.push(upstream.server);
    const logs: string[] = [];
    const report = await reportPolicyCoverage({
      config: { proxy: { upstream: upstream.url }, settings: {} },
      policy: {},
      issuers: [issuer.issuer],
      log: (line) => logs.push(line),
      warn: () => {},
      credentials: { perCaller: true, authorization: () => Promise.reject(new Error('no caller')), renew: () => Promise.resolve(undefined) },
    });
    assert.ok('skipped' in report && /token_exchange or connected/.test(report.skipped), JSON.stringify(report));
    assert.equal('final' in report && report.final, true, 'listing again cannot help: the gateway does not retry');
    assert.equal(upstream.seen.length, 0);
    assert.equal(summaryOf(logs)?.coverage, 'skipped');
  });

  it('a policy loaded later is checked by the same function (what a reload calls)', async () => {
    const upstream = await startSessionServer();
    servers.push(upstream.server);
    const { gateway, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM: upstream.url });
    const report = await gateway.reportPolicyCoverage({ tools: { '*': ['calc:use'] } });
    assert.ok('coverage' in report);
    assert.deepEqual(report.coverage.tools?.open, []);
    assert.equal(parse(warnings).filter((l) => l.kind === 'tools').length, 0);
  });

  it('the plain upstream example with the typo "counter_gte": suggestion counter_get, counter_get open', async () => {
    const upstream = await startUpstreamServer('127.0.0.1', 0);
    servers.push(upstream.server);
    const policy = policyFile('counter.json', { tools: { whoami: [], counter_gte: ['counter:read'], counter_increment: ['counter:write'] } });
    const { gateway, logs, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_POLICY: policy });
    await gateway.reportPolicyCoverage();
    const lines = parse(warnings);
    assert.deepEqual(lines.find((l) => l.kind === 'tools')?.names, ['counter_get']);
    assert.equal(lines.find((l) => l.rule === 'counter_gte')?.suggestion, 'counter_get');
    assert.deepEqual(summaryOf(logs)?.tools, { protected: 1, open: 2 }, 'whoami is open on purpose and counted as open');
  });

  it('the notes example, itself protected: the listing is skipped with the reason, and no token is sent', async () => {
    const notes: RunningNotesServer = await startNotesServer({ issuer: issuer.issuer });
    running.push({ shutdown: () => notes.close() });
    const { gateway, logs, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM: notes.url });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('skipped' in report);
    assert.match(report.skipped, /HTTP 401/);
    const summary = summaryOf(logs);
    assert.equal(summary?.coverage, 'skipped');
    assert.equal(summary?.tools, null);
    assert.equal(summary?.upstream, notes.url);
    assert.equal(warnings.length, 0);
  });

  it('an upstream that is down: the summary says it could not be listed', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    const { gateway, logs } = await gatewayFor({ MCP_AUTH_UPSTREAM: `http://127.0.0.1:${port}/mcp` });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('skipped' in report);
    assert.match(summaryOf(logs)?.reason, /cannot be reached \(ECONNREFUSED\)/);
  });

  it('a stdio upstream is listed through a short-lived process of its own, which is stopped', async () => {
    const policy = policyFile('stdio.json', { tools: { ad: ['calc:use'] } });
    const { gateway, logs, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}`, MCP_AUTH_POLICY: policy });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('coverage' in report, JSON.stringify(report));
    assert.ok(report.coverage.tools?.open.includes('add') && report.coverage.tools.open.includes('echo'), 'no rule covers add');
    assert.equal(parse(warnings).find((l) => l.rule === 'ad')?.suggestion, 'add');
    const summary = summaryOf(logs);
    assert.equal(summary?.upstreamCommand, process.execPath, 'the program only, never its arguments');
    assert.deepEqual(summary?.tools, { protected: 0, open: report.coverage.tools!.open.length });
    const events = parse(logs).filter((l) => l.session === 'policy-coverage');
    assert.ok(events.some((e) => e.event === 'upstream_started'));
    assert.ok(events.some((e) => e.event === 'upstream_exit'), 'the listing process was stopped');
    assert.equal((gateway.proxy as { processes?: number }).processes ?? 0, 0, 'no session process was started');
  });

  it('a stdio program that fails at listing time: besides the skipped summary, a warning on stderr with its exit code, last stderr line and the fix', async () => {
    const failing = `${quote(process.execPath)} -e ${quote("process.stderr.write('first line\\ncannot open file serve.py\\n'); process.exit(2)")}`;
    const { gateway, logs, warnings } = await gatewayFor({ MCP_AUTH_UPSTREAM_COMMAND: failing });
    const report = await gateway.reportPolicyCoverage();
    assert.ok('skipped' in report, JSON.stringify(report));
    assert.equal(summaryOf(logs)?.coverage, 'skipped');
    const warning = parse(warnings).find((l) => l.event === 'warning' && String(l.message).startsWith('policy: not compared'));
    assert.ok(warning, warnings.join('\n'));
    assert.match(warning.message, /^policy: not compared with the upstream, which could not be listed: initialize: /);
    assert.equal(warning.exit, 'exited with code 2');
    assert.equal(warning.stderr, 'cannot open file serve.py');
    assert.equal(warning.fix, 'run MCP_AUTH_UPSTREAM_COMMAND by hand: it must stay running and speak MCP (newline-delimited JSON-RPC) on stdin and stdout, logging to stderr only');
  });

  it('shutdown stops a stdio listing in progress: its process does not outlive the gateway', { timeout: 20_000 }, async () => {
    const silent = `${quote(process.execPath)} -e ${quote('setInterval(() => {}, 1000)')}`;
    const logs: string[] = [];
    const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_UPSTREAM_COMMAND: silent }), { log: (l) => logs.push(l), warn: () => {} });
    const report = gateway.reportPolicyCoverage();
    // Until the listing process has started (it never answers initialize).
    while (!parse(logs).some((l) => l.session === 'policy-coverage' && l.event === 'upstream_started')) await new Promise((r) => setTimeout(r, 20));
    const pid = parse(logs).find((l) => l.session === 'policy-coverage' && l.event === 'upstream_started')!.pid as number;
    await gateway.shutdown();
    const outcome = await report;
    assert.ok('skipped' in outcome);
    assert.equal(isRunning(pid), false);
  });
});
