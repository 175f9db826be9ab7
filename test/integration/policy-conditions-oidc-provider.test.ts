// Policy conditions with real tokens from oidc-provider carrying group and tenant claims, through the middleware (an
// Express app) and through the gateway (two servers, each with its own policy): lists and calls agree for every
// rule, a condition refusal is 403 naming the rule without a scope challenge, a condition that errors denies, and
// a reload changes decisions without a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { dispatchTable, type DecisionEvent } from '../../src/index.js';
import { loadPolicyFile } from '../../src/core/policy/load-policy-file.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp, type HttpAnswer } from '../helpers/http-client.js';
import { NODE_SERVER } from '../helpers/stdio-gateway.js';

const SCOPES = ['mcp', 'payments'];
const FINANCE = { groups: ['finance', 'staff'], tenant: 'acme' };
const SALES = { groups: ['sales', 'staff'], tenant: 'globex' };

let as: AuthorizationServer;
let dir: string;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: SCOPES });
  dir = mkdtempSync(join(tmpdir(), 'policy-conditions-'));
});
after(async () => {
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TOOLS = ['payments__refund', 'payments__pay', 'reports__broken', 'notes__add'];
const MIDDLEWARE_POLICY = {
  requiredScopes: ['mcp'],
  tools: {
    payments__refund: { scopes: ['payments'], when: "'finance' in claims.groups" },
    payments__pay: { when: "mcp.arguments.amount <= 100 || 'finance' in claims.groups" },
    reports__broken: { when: "claims.department == 'x'" },
    '*': { when: "'staff' in claims.groups" },
  },
  prompts: { salary: { when: "'finance' in claims.groups" }, '*': [] },
  resources: {
    'crm://{tenant}/accounts': { when: 'mcp.params.tenant == claims.tenant' },
    'crm://{tenant}/notes/{id}': { when: "mcp.uri.startsWith('crm://' + claims.tenant + '/')" },
    'ops://{id}': { when: "'ops' in claims.groups" },
  },
};
const PROMPTS = ['salary', 'hello'];
const TEMPLATES = ['crm://{tenant}/notes/{id}', 'ops://{id}'];

function expectConditionRefusal(answer: HttpAnswer, rule: string): void {
  assert.equal(answer.status, 403, answer.text);
  assert.equal(answer.headers['www-authenticate'], undefined, 'no scope challenge: a step-up cannot help');
  assert.equal(answer.json.error.code, -31403);
  assert.equal(answer.json.error.data.rule, rule);
  assert.deepEqual(answer.json.error.data['io.modelcontextprotocol/authorization'], { reason: 'insufficient_authorization', remediation: 'undisclosed' });
}

describe('conditions through the middleware', () => {
  let app: GuardedApp;
  const events: DecisionEvent[] = [];
  const policyFile = (): string => join(dir, 'middleware.json');

  before(async () => {
    writeFileSync(policyFile(), JSON.stringify(MIDDLEWARE_POLICY));
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: loadPolicyFile(policyFile()),
      onDecision: (event) => events.push(event),
      handler: dispatchTable({
        'tools/list': () => ({ tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) }),
        'tools/call': (params) => ({ content: [{ type: 'text', text: `called ${String(params.name)}` }] }),
        'resources/list': () => ({ resources: ['crm://acme/accounts', 'crm://globex/accounts'].map((uri) => ({ uri, name: uri })) }),
        'resources/read': (params) => ({ contents: [{ uri: String(params.uri), text: 'accounts' }] }),
        'prompts/list': () => ({ prompts: PROMPTS.map((name) => ({ name })) }),
        'prompts/get': () => ({ messages: [] }),
        'resources/templates/list': () => ({ resourceTemplates: TEMPLATES.map((uriTemplate) => ({ uriTemplate, name: uriTemplate })) }),
        'completion/complete': () => ({ completion: { values: ['1'] } }),
      }),
    }));
    as.addResource(app.url, { scopes: SCOPES });
  });
  after(async () => {
    await app?.close();
  });

  const token = (claims: Record<string, unknown>, scope = 'mcp payments'): Promise<string> => as.issueAccessToken({ resource: app.url, scope, sub: 'alice', extra: claims });
  const list = async (bearer: string): Promise<string[]> => {
    const answer = await postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, bearer);
    assert.equal(answer.status, 200, answer.text);
    return answer.json.result.tools.map((tool: { name: string }) => tool.name);
  };
  const call = (bearer: string, name: string, args: Record<string, unknown> = {}): Promise<HttpAnswer> =>
    postMcp(app.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } }, bearer);

  it('lists and calls agree for every rule, for each caller', async () => {
    for (const claims of [FINANCE, SALES, { groups: ['guest'] }]) {
      const bearer = await token(claims);
      const listed = await list(bearer);
      for (const name of TOOLS) {
        const answer = await call(bearer, name, { amount: 50 });
        const allowed = answer.status === 200;
        assert.equal(listed.includes(name), allowed, `${name} for ${JSON.stringify(claims)}: listed ${listed.includes(name)}, call ${answer.status}`);
      }
    }
  });

  it('a refusal names the rule, reports the condition; a condition on the arguments decides per call', async () => {
    events.length = 0;
    const sales = await token(SALES);
    expectConditionRefusal(await call(sales, 'payments__refund'), 'tools.payments__refund');
    const refused = events.find((event) => event.decision === 'deny');
    assert.deepEqual([refused?.reason, refused?.rule, refused?.condition], ['condition_denied', 'tools.payments__refund', "'finance' in claims.groups"]);
    assert.ok((await list(sales)).includes('payments__pay'));
    assert.equal((await call(sales, 'payments__pay', { amount: 80 })).status, 200);
    expectConditionRefusal(await call(sales, 'payments__pay', { amount: 800 }), 'tools.payments__pay');
    assert.equal((await call(await token(FINANCE), 'payments__pay', { amount: 800 })).status, 200);
    const allowed = events.filter((event) => event.decision === 'allow' && event.method === 'tools/call').map((event) => [event.rule, event.condition]);
    // An allowed call names the condition that held, so audit records of allowed calls say what let them through.
    const pay = "mcp.arguments.amount <= 100 || 'finance' in claims.groups";
    assert.deepEqual(allowed, [['tools.payments__pay', pay], ['tools.payments__pay', pay]]);
  });

  it('a condition that errors denies, reported as a condition error', async () => {
    events.length = 0;
    expectConditionRefusal(await call(await token(FINANCE), 'reports__broken'), 'tools.reports__broken');
    assert.equal(events.at(-1)?.reason, 'condition_error');
  });

  it('tenants read only their own resources, and list only those', async () => {
    const acme = await token(FINANCE);
    const listed = await postMcp(app.url, { jsonrpc: '2.0', id: 3, method: 'resources/list' }, acme);
    assert.deepEqual(listed.json.result.resources.map((r: { uri: string }) => r.uri), ['crm://acme/accounts']);
    assert.equal((await postMcp(app.url, { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'crm://acme/accounts' } }, acme)).status, 200);
    expectConditionRefusal(await postMcp(app.url, { jsonrpc: '2.0', id: 5, method: 'resources/read', params: { uri: 'crm://globex/accounts' } }, acme), 'resources["crm://{tenant}/accounts"]');
  });

  it('prompts, resource templates and completions: listed exactly when using and completing them are allowed', async () => {
    const post = (bearer: string, method: string, params?: Record<string, unknown>): Promise<HttpAnswer> => postMcp(app.url, { jsonrpc: '2.0', id: 6, method, ...(params ? { params } : {}) }, bearer);
    const complete = (bearer: string, ref: Record<string, unknown>): Promise<HttpAnswer> => post(bearer, 'completion/complete', { ref, argument: { name: 'id', value: '' } });
    for (const claims of [FINANCE, SALES]) {
      const bearer = await token(claims);
      const prompts = (await post(bearer, 'prompts/list')).json.result.prompts.map((p: { name: string }) => p.name);
      for (const name of PROMPTS) {
        assert.equal((await post(bearer, 'prompts/get', { name })).status === 200, prompts.includes(name), `prompt ${name} for ${claims.tenant}`);
        assert.equal((await complete(bearer, { type: 'ref/prompt', name })).status === 200, prompts.includes(name), `completing ${name} for ${claims.tenant}`);
      }
      const templates = (await post(bearer, 'resources/templates/list')).json.result.resourceTemplates.map((t: { uriTemplate: string }) => t.uriTemplate);
      // A condition on mcp.uri waits for the read: the template is listed, its reads decide by tenant.
      assert.deepEqual(templates, ['crm://{tenant}/notes/{id}']);
      for (const uri of TEMPLATES) assert.equal((await complete(bearer, { type: 'ref/resource', uri })).status === 200, templates.includes(uri), `completing ${uri}`);
      assert.equal((await post(bearer, 'resources/read', { uri: `crm://${claims.tenant}/notes/1` })).status, 200);
      const other = claims.tenant === 'acme' ? 'globex' : 'acme';
      expectConditionRefusal(await post(bearer, 'resources/read', { uri: `crm://${other}/notes/1` }), 'resources["crm://{tenant}/notes/{id}"]');
    }
  });

  it('a reload changes decisions at once, without a restart', async () => {
    const sales = await token(SALES);
    const finance = await token(FINANCE);
    writeFileSync(policyFile(), JSON.stringify({ ...MIDDLEWARE_POLICY, tools: { ...MIDDLEWARE_POLICY.tools, payments__refund: { scopes: ['payments'], when: "'sales' in claims.groups" } } }));
    app.router.guard.setPolicy(loadPolicyFile(policyFile()));
    assert.equal((await call(sales, 'payments__refund')).status, 200);
    expectConditionRefusal(await call(finance, 'payments__refund'), 'tools.payments__refund');
    assert.ok((await list(sales)).includes('payments__refund'));
    assert.ok(!(await list(finance)).includes('payments__refund'));
  });
});

describe('conditions through the gateway, per server', () => {
  const STATELESS = '2026-07-28';
  const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
  let gateway: RunningGateway;
  const lines: string[] = [];
  const warnings: string[] = [];
  const bearers: string[] = [];
  const gatewayPolicy = (): string => join(dir, 'gateway-policy.json');

  before(async () => {
    writeFileSync(gatewayPolicy(), JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp'], tools: { '*': { when: "server != 'b' || claims.tenant == 'acme'" } } }));
    // A JSON configuration file: server a's own policy inline, server b under the gateway-wide policy only.
    const file = join(dir, 'gateway.json');
    const command = [process.execPath, NODE_SERVER];
    const aPolicy = { tools: { add: { when: "'finance' in claims.groups" }, echo: { when: "mcp.arguments.text != 'secret'" } } };
    // Server c's conditions fail at run time for some callers: a claim the token lacks, a claim of the wrong type.
    const cPolicy = { tools: { add: { when: "claims.department == 'ops'" }, echo: { when: 'has(claims.level) && claims.level >= 3' } } };
    writeFileSync(file, JSON.stringify({ gateway: { policy: 'gateway-policy.json' }, servers: { a: { command, policy: aPolicy }, b: { command }, c: { command, policy: cPolicy } } }));
    const config = loadGatewayConfig({ MCP_AUTH_CONFIG: file, MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' });
    gateway = await startGateway(config, { log: (line) => lines.push(line), warn: (line) => warnings.push(line) });
    as.addResource(gateway.resource, { scopes: SCOPES });
  });
  after(async () => {
    await gateway?.shutdown();
  });

  const send = async (claims: Record<string, unknown>, method: string, params: Record<string, unknown> = {}, name?: string): Promise<HttpAnswer> => {
    const bearer = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice', extra: claims });
    bearers.push(bearer);
    return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }, bearer, {
      'mcp-protocol-version': STATELESS,
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    });
  };
  const EXPOSED = ['a__add', 'a__echo', 'b__add', 'b__echo'];
  const listed = async (claims: Record<string, unknown>): Promise<string[]> => {
    const answer = await send(claims, 'tools/list');
    assert.equal(answer.status, 200, answer.text);
    return answer.json.result.tools.map((tool: { name: string }) => tool.name).filter((name: string) => EXPOSED.includes(name));
  };
  const callArgs: Record<string, Record<string, unknown>> = { add: { a: 1, b: 2 }, echo: { text: 'hi' } };
  const callTool = (claims: Record<string, unknown>, name: string, args?: Record<string, unknown>): Promise<HttpAnswer> =>
    send(claims, 'tools/call', { name, arguments: args ?? callArgs[name.split('__')[1]!] }, name);

  it('lists and calls agree for every rule, each server under its own policy and the gateway-wide one', async () => {
    const seen: Record<string, string[]> = {};
    for (const claims of [FINANCE, SALES]) {
      const shown = await listed(claims);
      seen[claims.tenant] = shown;
      for (const name of EXPOSED) {
        const answer = await callTool(claims, name);
        assert.equal(shown.includes(name), answer.status === 200, `${name} for ${claims.tenant}: ${answer.status} ${answer.text}`);
      }
    }
    assert.deepEqual(seen, { acme: ['a__add', 'a__echo', 'b__add', 'b__echo'], globex: ['a__echo'] });
  });

  it("a refusal names the server's rule or the gateway-wide one; a condition on the arguments waits for the call", async () => {
    expectConditionRefusal(await callTool(SALES, 'a__add'), 'servers.a.tools.add');
    expectConditionRefusal(await callTool(SALES, 'b__echo'), 'tools.*');
    expectConditionRefusal(await callTool(FINANCE, 'a__echo', { text: 'secret' }), 'servers.a.tools.echo');
    assert.ok(lines.some((line) => line.includes('"condition_denied"')), 'the request log names the reason');
  });

  it('a condition that errors denies the call without a scope challenge, hides the tool, and is warned about by rule only', { timeout: 20_000 }, async () => {
    // ops: both conditions evaluate cleanly and hold. nokey lacks `department` (add errors; echo's has() guard
    // makes it a clean refusal). wrongtype carries `level` as a string (echo errors on the comparison).
    const ops = { groups: ['staff'], tenant: 'acme', department: 'ops', level: 5 };
    const nokey = { groups: ['staff'], tenant: 'acme', level: 5 };
    const wrongtype = { groups: ['staff'], tenant: 'acme', department: 'ops', level: 'high-level-value' };
    const ruleWarnings = (): Array<Record<string, unknown>> =>
      warnings.map((line) => JSON.parse(line) as Record<string, unknown>).filter((w) => w.message === 'a policy rule could not be decided; the request was denied');
    // No other caller reaches echo's error, so this call is the first to: the call itself writes the warning.
    expectConditionRefusal(await callTool(wrongtype, 'c__echo'), 'servers.c.tools.echo');
    const echoWarning = ruleWarnings().find((w) => w.rule === 'servers.c.tools.echo');
    assert.deepEqual([echoWarning?.setting, echoWarning?.category], ['servers.c.policy.tools.echo', 'type mismatch'], warnings.join('\n'));
    expectConditionRefusal(await callTool(nokey, 'c__add'), 'servers.c.tools.add');
    assert.equal((await callTool(nokey, 'c__echo')).status, 200, 'a has() guard makes a missing claim a clean answer, here allowed');
    assert.equal((await callTool(wrongtype, 'c__add')).status, 200, 'the same caller, under a condition that evaluates');
    for (const name of ['c__add', 'c__echo']) assert.equal((await callTool(ops, name)).status, 200, name);
    const errorLines = lines.filter((line) => line.includes('"condition_error"') && line.includes('"server":"c"'));
    assert.equal(errorLines.length, 2, 'the request log names the reason of both refusals');
    const names = async (claims: Record<string, unknown>): Promise<string[]> => {
      const answer = await send(claims, 'tools/list');
      assert.equal(answer.status, 200, answer.text);
      return answer.json.result.tools.map((tool: { name: string }) => tool.name).filter((name: string) => name === 'c__add' || name === 'c__echo');
    };
    // The rule that refused each call filters the list the same way for that caller.
    const cases: Array<[Record<string, unknown>, string[]]> = [[ops, ['c__add', 'c__echo']], [nokey, ['c__echo']], [wrongtype, ['c__add']]];
    for (const [claims, expected] of cases) assert.deepEqual(await names(claims), expected, JSON.stringify(claims));
    // One warning per rule at most once a minute, whichever request met the error first; never a value or token.
    const summary = ruleWarnings().map((w) => [w.rule, w.setting, w.category]).sort();
    assert.deepEqual(summary, [['servers.c.tools.add', 'servers.c.policy.tools.add', 'no such key'], ['servers.c.tools.echo', 'servers.c.policy.tools.echo', 'type mismatch']], warnings.join('\n'));
    const text = warnings.join('\n');
    assert.ok(bearers.length >= 9, 'every token of this test is looked for');
    for (const secret of [...bearers, 'alice', 'high-level-value']) assert.ok(!text.includes(secret), 'a warning carries a token or a claim value');
  });

  it('a reload of the gateway-wide policy file changes decisions without a restart', async () => {
    writeFileSync(gatewayPolicy(), JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp'], tools: { '*': { when: "server != 'b' || claims.tenant == 'globex'" } } }));
    const reloaded = await gateway.reloadPolicy('test');
    assert.equal(reloaded.reloaded, true, JSON.stringify(reloaded));
    assert.deepEqual(await listed(SALES), ['a__echo', 'b__add', 'b__echo']);
    assert.equal((await callTool(SALES, 'b__add')).status, 200);
    expectConditionRefusal(await callTool(FINANCE, 'b__add'), 'tools.*');
    writeFileSync(gatewayPolicy(), JSON.stringify({ tools: { '*': { when: 'claims.groups.exists(g, ' } } }));
    const refused = await gateway.reloadPolicy('test');
    assert.equal(refused.reloaded, false);
    assert.match(refused.reloaded === false ? refused.reason : '', /tools\["\*"\]\.when.*column/);
    assert.equal((await callTool(SALES, 'b__add')).status, 200, 'the policy in force stays');
  });
});

describe("conditions through the gateway: a server's rule for tools/list itself", () => {
  const STATELESS = '2026-07-28';
  const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
  let gateway: RunningGateway;

  before(async () => {
    // No condition of the gateway-wide policy reads the request, so filtered lists are kept and reused by key.
    const file = join(dir, 'gateway-list-method.json');
    const command = [process.execPath, NODE_SERVER];
    const cPolicy = { methods: { 'tools/list': { when: "'finance' in claims.groups" } } };
    writeFileSync(join(dir, 'gateway-list-method-policy.json'), JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp'] }));
    writeFileSync(file, JSON.stringify({ gateway: { policy: 'gateway-list-method-policy.json' }, servers: { a: { command }, c: { command, policy: cPolicy } } }));
    const config = loadGatewayConfig({ MCP_AUTH_CONFIG: file, MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
    as.addResource(gateway.resource, { scopes: SCOPES });
  });
  after(async () => {
    await gateway?.shutdown();
  });

  const names = async (claims: Record<string, unknown>): Promise<string[]> => {
    const bearer = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice', extra: claims });
    const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, bearer, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' });
    assert.equal(answer.status, 200, answer.text);
    return answer.json.result.tools.map((tool: { name: string }) => tool.name).filter((name: string) => name.startsWith('c__'));
  };

  it('two callers with the same scopes never share one filtered list', async () => {
    for (let round = 0; round < 2; round++) {
      assert.ok((await names(FINANCE)).length > 0, 'finance lists the tools of c');
      assert.deepEqual(await names(SALES), [], 'sales is not served the list made for finance');
    }
  });
});
