// The gateway's audit trail (MCP_AUTH_AUDIT): with several servers behind it, each record names the server the call
// went to, the caller and the decision; the records of every request answered are in the file once the gateway has
// shut down; and a bad audit setting stops the start with one message naming each.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AuditRecord } from '../../src/core/audit/audit-record.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../helpers/plain-mcp-server.js';
import { problemsOf } from '../helpers/configuration-problems.js';

const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };

let issuer: TestIssuer;
let dir: string;
let a: PlainMcpServer;
let b: PlainMcpServer;
let gateway: RunningGateway | undefined;

before(async () => {
  issuer = await startTestIssuer();
  dir = mkdtempSync(join(tmpdir(), 'gateway-audit-'));
  [a, b] = await Promise.all([startPlainMcpServer(), startPlainMcpServer()]);
  writeFileSync(join(dir, 'policy.json'), JSON.stringify({ tools: { b__echo: ['b:use'] } }));
  writeFileSync(join(dir, 'gateway.yaml'), ['gateway:', '  policy: policy.json', 'servers:', '  a:', `    url: ${a.url}`, '  b:', `    url: ${b.url}`, ''].join('\n'));
});
after(async () => {
  await gateway?.shutdown();
  a?.close();
  b?.close();
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

const settings = (extra: Record<string, string>): Record<string, string> => ({ MCP_AUTH_CONFIG: join(dir, 'gateway.yaml'), MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0', ...extra });

describe('the gateway audit trail', () => {
  test('records name the server, the caller and the decision, and every one is written by a clean shutdown', async () => {
    const file = join(dir, 'audit.jsonl');
    gateway = await startGateway(loadGatewayConfig(settings({ MCP_AUTH_AUDIT: file, MCP_AUTH_AUDIT_ARGUMENTS: 'on', MCP_AUTH_AUDIT_REDACT: '/text' })), { log: () => {}, warn: () => {} });
    const token = await issuer.sign({ aud: gateway.resource, sub: 'alice', client_id: 'console', scope: 'mcp' });
    const send = (id: string, name: string) =>
      postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: 'private words' }, _meta: META } }, token, {
        'mcp-protocol-version': STATELESS,
        'mcp-method': 'tools/call',
        'mcp-name': name,
        'x-request-id': id,
      });
    const TOTAL = 60;
    const answers = await Promise.all(Array.from({ length: TOTAL }, (_, i) => send(`gw-${i}`, i % 3 === 2 ? 'b__echo' : i % 3 === 1 ? 'b__missing' : 'a__echo')));
    assert.equal(answers[0]!.status, 200, answers[0]!.text);
    assert.equal(answers[2]!.status, 403, answers[2]!.text);
    await gateway.shutdown();
    gateway = undefined;

    const text = readFileSync(file, 'utf8');
    const records = text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord);
    assert.equal(records.length, TOTAL, 'one record per request, all written by the shutdown');
    const byId = new Map(records.map((r) => [r.requestId, r]));
    const allowed = byId.get('gw-0')!;
    assert.deepEqual(
      [allowed.server, allowed.tool, allowed.decision, allowed.reason, allowed.status, allowed.issuer, allowed.subject, allowed.clientId],
      ['a', 'a__echo', 'allow', 'allowed', 200, issuer.issuer, 'alice', 'console'],
    );
    assert.deepEqual(allowed.arguments, { text: '[redacted]' });
    const denied = byId.get('gw-2')!;
    assert.deepEqual([denied.server, denied.tool, denied.decision, denied.reason, denied.status], ['b', 'b__echo', 'deny', 'scope_insufficient', 403]);
    assert.equal(typeof denied.errorCode, 'number', 'the JSON-RPC error code of the refusal');
    assert.ok(!text.includes(token.split('.')[2]!.slice(0, 20)) && !text.includes('private words'), 'no token, no redacted argument');
  });

  test("a resource request refused by its server's own policy, decided again once the server is learnt, is recorded as that refusal", async () => {
    const c = await startPlainMcpServer({ resources: ['crm://acme/report'] });
    const file = join(dir, 'second-decision.jsonl');
    const config = join(dir, 'second-decision.json');
    writeFileSync(config, JSON.stringify({ gateway: { policy: 'policy.json' }, servers: { a: { url: a.url }, c: { url: c.url, policy: { resources: { '*': ['c:admin'] } } } } }));
    const lines: string[] = [];
    gateway = await startGateway(loadGatewayConfig(settings({ MCP_AUTH_CONFIG: config, MCP_AUTH_AUDIT: file })), { log: (line) => lines.push(line), warn: () => {} });
    try {
      const read = async (id: string, scope: string) =>
        postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'crm://acme/report', _meta: META } }, await issuer.sign({ aud: gateway!.resource, sub: 'bob', client_id: 'console', scope }), {
          'mcp-protocol-version': STATELESS,
          'mcp-method': 'resources/read',
          'mcp-name': 'crm://acme/report',
          'x-request-id': id,
        });
      const refused = await read('second-1', 'mcp');
      assert.equal(refused.status, 403, refused.text);
      const allowed = await read('second-2', 'mcp c:admin');
      assert.equal(allowed.status, 200, allowed.text);
      await gateway.shutdown();
    } finally {
      gateway = undefined;
      c.close();
    }
    const byId = new Map(readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord).map((r) => [r.requestId, r]));
    const denied = byId.get('second-1')!;
    assert.deepEqual(
      [denied.server, denied.resource, denied.decision, denied.reason, denied.rule, denied.status, denied.subject, denied.clientId, denied.issuer],
      ['c', 'crm://acme/report', 'deny', 'scope_insufficient', 'servers.c.resources.*', 403, 'bob', 'console', issuer.issuer],
    );
    assert.deepEqual([byId.get('second-2')?.decision, byId.get('second-2')?.reason], ['allow', 'allowed']);
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.method === 'resources/read' && line.status === 403);
    assert.deepEqual([logged?.decision, logged?.reason], ['deny', 'scope_insufficient'], 'the request log says so too');
  });

  test("calls refused at the first decision, for a missing scope or by a server policy's condition, name their server in the record and the log line", async () => {
    const file = join(dir, 'first-decision.jsonl');
    const config = join(dir, 'first-decision.json');
    const own = { tools: { echo: { scopes: [], when: '"finance" in claims.groups' } } };
    writeFileSync(config, JSON.stringify({ gateway: { policy: 'policy.json' }, servers: { a: { url: a.url }, b: { url: b.url, policy: own } } }));
    const lines: string[] = [];
    gateway = await startGateway(loadGatewayConfig(settings({ MCP_AUTH_CONFIG: config, MCP_AUTH_AUDIT: file })), { log: (line) => lines.push(line), warn: () => {} });
    try {
      const echo = async (id: string, scope: string, groups: string[], status: number) => {
        const token = await issuer.sign({ aud: gateway!.resource, sub: 'dave', client_id: 'console', scope, groups });
        const answer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'b__echo', arguments: { text: 'hi' }, _meta: META } }, token, {
          'mcp-protocol-version': STATELESS,
          'mcp-method': 'tools/call',
          'mcp-name': 'b__echo',
          'x-request-id': id,
        });
        assert.equal(answer.status, status, answer.text);
      };
      await echo('first-scope', 'mcp', ['finance'], 403);
      await echo('first-condition', 'mcp b:use', ['dev'], 403);
      await echo('first-allowed', 'mcp b:use', ['finance'], 200);
      await gateway.shutdown();
    } finally {
      gateway = undefined;
    }
    const byId = new Map(readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord).map((r) => [r.requestId, r]));
    const logged = new Map(lines.map((line) => JSON.parse(line) as Record<string, unknown>).map((line) => [line.requestId, line]));
    const scope = byId.get('first-scope')!;
    assert.deepEqual([scope.server, scope.decision, scope.reason, scope.rule], ['b', 'deny', 'scope_insufficient', 'tools.b__echo']);
    // The fields, in order, of the record shown in docs/audit.md.
    const fields = ['time', 'requestId', 'issuer', 'subject', 'clientId', 'server', 'httpMethod', 'method', 'tool', 'decision', 'reason', 'rule', 'status', 'errorCode', 'durationMs'];
    assert.deepEqual(Object.keys(scope), fields);
    assert.equal(scope.errorCode, -31403);
    const condition = byId.get('first-condition')!;
    assert.deepEqual(
      [condition.server, condition.decision, condition.reason, condition.rule, condition.condition],
      ['b', 'deny', 'condition_denied', 'servers.b.tools.echo', '"finance" in claims.groups'],
    );
    assert.deepEqual([byId.get('first-allowed')?.server, byId.get('first-allowed')?.decision], ['b', 'allow']);
    for (const id of ['first-scope', 'first-condition', 'first-allowed']) {
      const line = logged.get(id);
      assert.deepEqual([line?.server, line?.decision], ['b', byId.get(id)?.decision], `the request log line of ${id}`);
    }
  });

  test('a request log line and its audit record carry the same request id, made up when the client sent none', async () => {
    const file = join(dir, 'joined.jsonl');
    const lines: string[] = [];
    gateway = await startGateway(loadGatewayConfig(settings({ MCP_AUTH_AUDIT: file })), { log: (line) => lines.push(line), warn: () => {} });
    try {
      const token = await issuer.sign({ aud: gateway.resource, sub: 'carol', client_id: 'console', scope: 'mcp' });
      for (const name of ['a__echo', 'b__echo']) {
        const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: 'hi' }, _meta: META } }, token, {
          'mcp-protocol-version': STATELESS,
          'mcp-method': 'tools/call',
          'mcp-name': name,
        });
        assert.equal(answer.status, name === 'a__echo' ? 200 : 403, answer.text);
      }
      await gateway.shutdown();
    } finally {
      gateway = undefined;
    }
    const records = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord);
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.method === 'tools/call');
    assert.equal(records.length, 2);
    assert.equal(logged.length, 2);
    for (const record of records) {
      assert.match(record.requestId, /^[0-9a-f-]{36}$/);
      const line = logged.find((l) => l.requestId === record.requestId);
      assert.deepEqual([line?.name, line?.decision, line?.status], [record.tool, record.decision, record.status], `the log line of ${record.requestId}`);
    }
  });

  test('bad audit settings stop the start, each named in one message', () => {
    const lines = problemsOf(() => loadGatewayConfig(settings({ MCP_AUTH_AUDIT: 'relative/audit.jsonl', MCP_AUTH_AUDIT_FILES: 'many', MCP_AUTH_AUDIT_REDACT: 'text' })));
    const named = lines.map((line) => line.split(':')[0]);
    for (const setting of ['MCP_AUTH_AUDIT', 'MCP_AUTH_AUDIT_FILES', 'MCP_AUTH_AUDIT_REDACT']) assert.ok(named.includes(setting), `${setting} in ${lines.join('\n')}`);
  });
});
