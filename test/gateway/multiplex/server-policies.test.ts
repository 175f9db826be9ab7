// A gateway started from a configuration file with two servers, each with its own policy (by its own tool names),
// and a gateway-wide policy (by exposed names): lists are filtered by both, a call missing a server's scope gets
// the step-up 403 naming that scope, an excluded tool is unknown (-32602), and a reload reads a server's policy
// file again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp } from '../../helpers/http-client.js';
import { NODE_SERVER } from '../../helpers/stdio-gateway.js';

const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
const SCOPES = ['mcp', 'math', 'echo'];

let dir: string;
let as: AuthorizationServer;
let gateway: RunningGateway;
let bPolicyFile: string;
/** The request log's lines. */
const logged: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'server-policies-'));
  as = await startAuthorizationServer({ extraScopes: SCOPES });
  bPolicyFile = join(dir, 'b-policy.json');
  writeFileSync(bPolicyFile, JSON.stringify({ tools: { echo: ['echo'] } }));
  writeFileSync(join(dir, 'gateway-policy.json'), JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp'] }));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(
    file,
    [
      'gateway:',
      '  policy: gateway-policy.json',
      'servers:',
      '  a:',
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(NODE_SERVER)}]`,
      '    policy: { tools: { add: [math] } }',
      '  b:',
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(NODE_SERVER)}]`,
      '    policyFile: b-policy.json',
      '    tools: { exclude: [add] }',
      '',
    ].join('\n'),
  );
  const config = loadGatewayConfig({ MCP_AUTH_CONFIG: file, MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' });
  assert.deepEqual(config.servers!.map((s) => s.name), ['a', 'b']);
  gateway = await startGateway(config, { log: (line) => logged.push(line), warn: () => {} });
  as.addResource(gateway.resource, { scopes: SCOPES });
});
after(async () => {
  await gateway?.shutdown();
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function send(scope: string, method: string, params: Record<string, unknown> = {}, name?: string) {
  const token = await as.issueAccessToken({ resource: gateway.resource, scope, sub: 'alice' });
  return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
  });
}

// The fixture offers many tools; these tests are about two of them.
const names = (answer: { json: any }): string[] => answer.json.result.tools.map((t: { name: string }) => t.name).filter((n: string) => /__(add|echo)$/.test(n));

describe('per-server policies from a configuration file', () => {
  it('filters the merged list by the gateway-wide policy and each server\'s own', async () => {
    const listed = await send('mcp', 'tools/list');
    assert.deepEqual(names(listed), ['a__echo']);
    // A merged list varies per caller: 2026-07-28 caching hints say so.
    assert.equal(listed.json.result.cacheScope, 'private');
    assert.equal(listed.json.result.resultType, 'complete');
    assert.deepEqual(names(await send('mcp math', 'tools/list')), ['a__add', 'a__echo']);
    assert.deepEqual(names(await send('mcp math echo', 'tools/list')), ['a__add', 'a__echo', 'b__echo']);
    const none = await send('math', 'tools/list');
    assert.equal(none.status, 403, 'the gateway-wide requiredScopes hold for every server');
  });

  it('answers a call missing a server\'s scope with the step-up 403 naming it, and an excluded tool as unknown', async () => {
    const denied = await send('mcp', 'tools/call', { name: 'a__add', arguments: { a: 1, b: 2 } }, 'a__add');
    assert.equal(denied.status, 403, denied.text);
    assert.match(String(denied.headers['www-authenticate']), /error="insufficient_scope".*scope="[^"]*math/);
    const allowed = await send('mcp math', 'tools/call', { name: 'a__add', arguments: { a: 1, b: 2 } }, 'a__add');
    assert.equal(allowed.status, 200, allowed.text);
    assert.equal(allowed.json.result.content[0].text, '3');
    const excluded = await send('mcp math echo', 'tools/call', { name: 'b__add', arguments: { a: 1, b: 2 } }, 'b__add');
    assert.equal(excluded.status, 200, excluded.text);
    assert.equal(excluded.json.error.code, -32602);
    assert.equal(excluded.json.error.message, 'Unknown tool: b__add');
  });

  it('reports a call to an excluded tool, or to a server that does not exist, as a deny (target_unknown) with the status sent', async () => {
    for (const name of ['b__add', 'nobody__add']) {
      const answer = await send('mcp math echo', 'tools/call', { name, arguments: { a: 1, b: 2 } }, name);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.error.code, -32602);
      // The line is written once the answer has ended.
      await new Promise((resolve) => setImmediate(resolve));
      const entry = logged.map((line) => JSON.parse(line) as Record<string, unknown>).findLast((e) => e.method === 'tools/call' && e.name === name);
      assert.ok(entry, `no request log line for ${name}`);
      assert.equal(entry.decision, 'deny', JSON.stringify(entry));
      assert.equal(entry.reason, 'target_unknown');
      assert.equal(entry.status, 200);
      assert.equal(entry.server, undefined, 'no server was asked');
    }
    const prompt = await send('mcp', 'prompts/get', { name: 'nobody__p' }, 'nobody__p');
    assert.equal(prompt.json.error.code, -32602);
    assert.equal(prompt.json.error.message, 'Unknown prompt: nobody__p');
  });

  it('reads a server\'s policy file again on reload, and keeps the policy in force when the new one is refused', async () => {
    writeFileSync(bPolicyFile, JSON.stringify({ tools: { echo: [] } }));
    const reloaded = await gateway.reloadPolicy('test');
    assert.equal(reloaded.reloaded, true, JSON.stringify(reloaded));
    assert.deepEqual(names(await send('mcp', 'tools/list')), ['a__echo', 'b__echo']);
    writeFileSync(bPolicyFile, JSON.stringify({ tools: { echo: 'not a list' } }));
    const refused = await gateway.reloadPolicy('test');
    assert.equal(refused.reloaded, false);
    assert.match(refused.reloaded === false ? refused.reason : '', /servers\.b/);
    assert.deepEqual(names(await send('mcp', 'tools/list')), ['a__echo', 'b__echo']);
  });
});
