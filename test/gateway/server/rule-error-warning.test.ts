// A policy rule that cannot be decided (a condition reading a claim the token lacks) is warned about where the
// gateway's other warnings go, for the single upstream as for a server set: the operator is told, once a minute per
// rule, with the rule and a fixed category and never a value.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const STDIO_SERVER = fileURLToPath(new URL('../../fixtures/stdio/server.mjs', import.meta.url));

describe('a policy rule that cannot be decided, behind the single upstream', { timeout: 30_000 }, () => {
  let issuer: TestIssuer;
  let gateway: RunningGateway;
  let dir: string;
  const warnings: string[] = [];

  before(async () => {
    issuer = await startTestIssuer();
    dir = mkdtempSync(join(tmpdir(), 'rule-error-'));
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ tools: { '*': { when: 'claims.department == "ops"' } } }));
    const config = loadGatewayConfig({ HOST: '127.0.0.1', PORT: '0', MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM_COMMAND: `${process.execPath} ${STDIO_SERVER}`, MCP_AUTH_POLICY: policy });
    gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
  });

  after(async () => {
    await gateway?.shutdown();
    await issuer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("denies the call and writes one warning to the gateway's warning sink, naming the rule and the category", async () => {
    const token = await issuer.sign({ aud: gateway.resource, sub: 'u', client_id: 'c', scope: 'mcp', department_note: 'secret-value' });
    const call = (): Promise<Response> =>
      fetch(gateway.resource, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } }),
      });
    const first = await call();
    const body = (await first.json()) as { error: { code: number; data: { rule: string } } };
    assert.equal(first.status, 403);
    assert.equal(body.error.code, -31403);
    assert.equal(body.error.data.rule, 'tools.*');
    // A condition that cannot be evaluated is no scope problem: no challenge that would invite a step-up.
    assert.equal(first.headers.get('www-authenticate'), null);
    assert.equal((await call()).status, 403);
    const ruleWarnings = warnings.map((line) => JSON.parse(line) as Record<string, unknown>).filter((w) => w.message === 'a policy rule could not be decided; the request was denied');
    assert.equal(ruleWarnings.length, 1, warnings.join('\n'));
    assert.equal(ruleWarnings[0]!.category, 'no such key');
    assert.equal(ruleWarnings[0]!.rule, 'tools.*');
    assert.equal(ruleWarnings[0]!.setting, 'MCP_AUTH_POLICY.tools["*"]');
    assert.ok(!warnings.join('\n').includes('secret-value'));
  });
});
