// The audit trail with real tokens from oidc-provider carrying group and tenant claims, through the middleware (an
// Express app) and through the gateway (two servers, one with a policy of its own): each record names the issuer,
// the subject, the client, the decision and its reason, and the rule and condition that decided; a condition on the
// groups refuses one user and allows another; and no piece of a token is in the file.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { dispatchTable } from '../../src/index.js';
import type { AuditRecord } from '../../src/core/audit/audit-record.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway } from '../../src/gateway/server/start-gateway.js';
import { startGuardedApp } from '../helpers/guarded-app.js';
import { postMcp } from '../helpers/http-client.js';
import { startPlainMcpServer } from '../helpers/plain-mcp-server.js';

const SCOPES = ['mcp', 'payments'];
const FINANCE = { groups: ['finance', 'staff'], tenant: 'acme' };
const SALES = { groups: ['sales', 'staff'], tenant: 'globex' };
const CONDITION = "'finance' in claims.groups";
const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };

let as: AuthorizationServer;
let dir: string;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: SCOPES });
  dir = mkdtempSync(join(tmpdir(), 'audit-oidc-provider-'));
});
after(async () => {
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The records of `file`, by request id. */
function recordsOf(file: string): { text: string; byId: Map<string, AuditRecord> } {
  const text = readFileSync(file, 'utf8');
  return { text, byId: new Map(text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord).map((record) => [record.requestId, record])) };
}

/** Asserts that no piece of any token (its payload or signature) is in `text`. */
function assertNoToken(text: string, tokens: readonly string[]): void {
  for (const token of tokens) {
    const [, payload, signature] = token.split('.');
    for (const part of [payload!, signature!]) assert.ok(!text.includes(part.slice(10, 30)), 'no piece of a token in the audit file');
  }
}

/** The fields checked of a record. */
const summary = (r: AuditRecord | undefined) => r && { issuer: r.issuer, subject: r.subject, clientId: r.clientId, decision: r.decision, reason: r.reason, rule: r.rule, condition: r.condition, status: r.status };

describe('the audit trail with oidc-provider tokens', () => {
  it('through the middleware: the condition refuses one user and allows another, each recorded', { timeout: 30_000 }, async () => {
    const file = join(dir, 'middleware.jsonl');
    const app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: { requiredScopes: ['mcp'], tools: { payments__refund: { scopes: ['payments'], when: CONDITION } } },
      audit: { to: file },
      handler: dispatchTable({ 'tools/call': (params) => ({ content: [{ type: 'text', text: `called ${String(params.name)}` }] }) }),
    }));
    as.addResource(app.url, { scopes: SCOPES });
    const tokens: string[] = [];
    try {
      const call = async (id: string, sub: string, claims: Record<string, unknown>, scope = 'mcp payments') => {
        const token = await as.issueAccessToken({ resource: app.url, scope, sub, extra: claims });
        tokens.push(token);
        return postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'payments__refund', arguments: {} } }, token, { 'x-request-id': id });
      };
      assert.equal((await call('mw-sales', 'sam', SALES)).status, 403);
      assert.equal((await call('mw-finance', 'fiona', FINANCE)).status, 200);
      assert.equal((await call('mw-scope', 'fiona', FINANCE, 'mcp')).status, 403);
    } finally {
      await app.close();
      await app.router.close();
    }
    const { text, byId } = recordsOf(file);
    const client = as.serviceClient.clientId;
    assert.deepEqual(summary(byId.get('mw-sales')), { issuer: as.issuer, subject: 'sam', clientId: client, decision: 'deny', reason: 'condition_denied', rule: 'tools.payments__refund', condition: CONDITION, status: 403 });
    assert.deepEqual(summary(byId.get('mw-finance')), { issuer: as.issuer, subject: 'fiona', clientId: client, decision: 'allow', reason: 'allowed', rule: 'tools.payments__refund', condition: CONDITION, status: 200 });
    assert.deepEqual([byId.get('mw-scope')?.reason, byId.get('mw-scope')?.rule], ['scope_insufficient', 'tools.payments__refund']);
    assert.equal(byId.get('mw-sales')?.tool, 'payments__refund');
    assertNoToken(text, tokens);
  });

  it('through the gateway: a server policy condition refuses one user and allows another, each recorded with the server', { timeout: 30_000 }, async () => {
    const [a, b] = await Promise.all([startPlainMcpServer(), startPlainMcpServer()]);
    const file = join(dir, 'gateway.jsonl');
    const config = join(dir, 'gateway.json');
    writeFileSync(join(dir, 'gateway-policy.json'), JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp'] }));
    writeFileSync(config, JSON.stringify({ gateway: { policy: 'gateway-policy.json' }, servers: { a: { url: a.url, policy: { tools: { echo: { scopes: ['payments'], when: CONDITION } } } }, b: { url: b.url } } }));
    const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_CONFIG: config, MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_AUDIT: file, HOST: '127.0.0.1', PORT: '0' }), { log: () => {}, warn: () => {} });
    as.addResource(gateway.resource, { scopes: SCOPES });
    const tokens: string[] = [];
    try {
      const call = async (id: string, sub: string, claims: Record<string, unknown>, name: string) => {
        const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp payments', sub, extra: claims });
        tokens.push(token);
        return postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: 'hi' }, _meta: META } }, token, {
          'mcp-protocol-version': STATELESS,
          'mcp-method': 'tools/call',
          'mcp-name': name,
          'x-request-id': id,
        });
      };
      assert.equal((await call('gw-sales', 'sam', SALES, 'a__echo')).status, 403);
      assert.equal((await call('gw-finance', 'fiona', FINANCE, 'a__echo')).status, 200);
      assert.equal((await call('gw-other', 'sam', SALES, 'b__echo')).status, 200);
    } finally {
      await gateway.shutdown();
      a.close();
      b.close();
    }
    const { text, byId } = recordsOf(file);
    const client = as.serviceClient.clientId;
    assert.deepEqual(summary(byId.get('gw-sales')), { issuer: as.issuer, subject: 'sam', clientId: client, decision: 'deny', reason: 'condition_denied', rule: 'servers.a.tools.echo', condition: CONDITION, status: 403 });
    assert.deepEqual(summary(byId.get('gw-finance')), { issuer: as.issuer, subject: 'fiona', clientId: client, decision: 'allow', reason: 'allowed', rule: 'servers.a.tools.echo', condition: CONDITION, status: 200 });
    assert.deepEqual([byId.get('gw-finance')?.server, byId.get('gw-finance')?.tool, byId.get('gw-other')?.server, byId.get('gw-other')?.decision], ['a', 'a__echo', 'b', 'allow']);
    assertNoToken(text, tokens);
  });
});
