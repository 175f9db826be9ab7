import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { compilePolicySet } from '../../../src/core/policy/policy-set.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

const call = (name: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });

describe('conditions: outcomes kept per token never reach another caller', () => {
  test('a verifier sharing one frozen extra between two clients: each is decided by its own client id', () => {
    const policy = compilePolicy({ tools: { reset: { when: 'claims.client_id == "admin-console"' } } });
    const extra = Object.freeze({ sub: 'u', claims: Object.freeze({ sub: 'u' }), tokenType: 'jwt' });
    const scopes = Object.freeze(['mcp']) as string[];
    const admin: AuthInfo = { token: 'a', clientId: 'admin-console', scopes, extra };
    const other: AuthInfo = { token: 'b', clientId: 'other', scopes, extra };
    assert.equal(policy.authorize(call('reset'), admin).allowed, true);
    assert.equal(policy.authorize(call('reset'), other).allowed, false);
    const list = (auth: AuthInfo): unknown => policy.filterListResult('tools/list', { tools: [{ name: 'reset' }] }, auth).tools;
    assert.deepEqual(list(other), []);
    assert.deepEqual(list(admin), [{ name: 'reset' }]);
    assert.deepEqual(list(other), []);
    assert.notEqual(policy.listFilterKey?.('tools/list', admin), policy.listFilterKey?.('tools/list', other));
  });
});

function member(groups: string[]): AuthInfo {
  return { token: 't', clientId: 'c', scopes: ['mcp'], extra: { sub: 'u', claims: { sub: 'u', groups }, tokenType: 'jwt' } };
}

describe('conditions: a completion and a listen are decided for the server they go to', () => {
  const set = compilePolicySet({
    gateway: {
      prompts: { '*': { when: "server != 'hr' || 'x' in claims.groups" } },
      resources: { 'hr://{path}': { when: "server != 'hr' || 'x' in claims.groups" }, 'notes://{path}': { when: "server == 'notes'" } },
    },
    servers: [{ name: 'hr' }, { name: 'notes' }],
    routeResource: (uri) => (uri.startsWith('hr://') ? 'hr' : uri.startsWith('notes://') ? 'notes' : undefined),
  });
  const complete = (ref: Record<string, unknown>): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'completion/complete', params: { ref, argument: { name: 'a', value: '' } } });
  const listen = (uris: string[]): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: uris } } });

  test('completing a prompt or a resource of hr is refused exactly when using it is', () => {
    const get: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'hr__salary' } };
    for (const [auth, allowed] of [[member(['dev']), false], [member(['x']), true]] as const) {
      assert.equal(set.authorize(get, auth).allowed, allowed);
      assert.equal(set.authorize(complete({ type: 'ref/prompt', name: 'hr__salary' }), auth).allowed, allowed);
      assert.equal(set.authorize(complete({ type: 'ref/resource', uri: 'hr://pay' }), auth).allowed, allowed);
    }
  });

  test('each URI a listen watches is decided with its own server', () => {
    assert.equal(set.authorize(listen(['notes://a']), member(['dev'])).allowed, true);
    assert.equal(set.authorize(listen(['notes://a', 'hr://pay']), member(['dev'])).allowed, false);
    assert.equal(set.authorize(listen(['notes://a', 'hr://pay']), member(['x'])).allowed, true);
  });
});

describe("conditions: a server's rule for the list method itself is part of the list key", () => {
  const items = { tools: [{ name: 'hr__salary' }, { name: 'notes__add' }] };
  for (const [label, rule] of [
    ['methods["tools/list"]', { 'tools/list': { when: "'x' in claims.groups" } }],
    ['methods["*"]', { '*': { when: "'x' in claims.groups" } }],
  ] as const) {
    test(`${label} with a condition: two callers with different lists get different keys`, () => {
      const set = compilePolicySet({ servers: [{ name: 'hr', policy: { methods: rule } }, { name: 'notes' }] });
      const x = member(['x']);
      const dev = member(['dev']);
      const names = (auth: AuthInfo): string[] => (set.filterListResult('tools/list', items, auth).tools as { name: string }[]).map((tool) => tool.name);
      assert.deepEqual(names(x), ['hr__salary', 'notes__add']);
      assert.deepEqual(names(dev), ['notes__add']);
      const keyX = set.listFilterKey?.('tools/list', x);
      const keyDev = set.listFilterKey?.('tools/list', dev);
      assert.ok(keyX === undefined || keyX !== keyDev, `one key ${String(keyX)} for two different lists`);
    });
  }

  test('a rule function for the list method: no key at all', () => {
    const set = compilePolicySet({ servers: [{ name: 'hr', policy: { methods: { 'tools/list': () => [] } } }] });
    assert.equal(set.listFilterKey?.('tools/list', member(['x'])), undefined);
  });
});

describe('conditions: prompts, resource templates and completions agree between lists and calls', () => {
  const tenant = (value: string, groups: string[] = []): AuthInfo => ({ token: 't', clientId: 'c', scopes: ['mcp'], extra: { sub: 'u', claims: { sub: 'u', tenant: value, groups }, tokenType: 'jwt' } });
  const policy = compilePolicy({
    prompts: { salary: { when: "'hr' in claims.groups" }, '*': [] },
    resources: {
      'crm://{tenant}/notes/{id}': { when: "mcp.uri.startsWith('crm://' + claims.tenant + '/')" },
      'crm://{tenant}/files/{id}': { when: 'mcp.params.tenant == claims.tenant' },
      'ops://{id}': { when: "'ops' in claims.groups" },
    },
  });
  const templates = ['crm://{tenant}/notes/{id}', 'crm://{tenant}/files/{id}', 'ops://{id}'];
  const listedTemplates = (auth: AuthInfo): string[] =>
    (policy.filterListResult('resources/templates/list', { resourceTemplates: templates.map((uriTemplate) => ({ uriTemplate })) }, auth).resourceTemplates as { uriTemplate: string }[]).map((t) => t.uriTemplate);
  const listedPrompts = (auth: AuthInfo): string[] =>
    (policy.filterListResult('prompts/list', { prompts: [{ name: 'salary' }, { name: 'hello' }] }, auth).prompts as { name: string }[]).map((p) => p.name);
  const complete = (ref: Record<string, unknown>): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'completion/complete', params: { ref, argument: { name: 'id', value: '' } } });
  const readUri = (uri: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } });
  const getPrompt = (name: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name } });

  test('a prompt is listed exactly when getting and completing it are allowed', () => {
    for (const auth of [tenant('acme', ['hr']), tenant('acme')]) {
      for (const name of ['salary', 'hello']) {
        const shown = listedPrompts(auth).includes(name);
        assert.equal(policy.authorize(getPrompt(name), auth).allowed, shown, name);
        assert.equal(policy.authorize(complete({ type: 'ref/prompt', name }), auth).allowed, shown, name);
      }
    }
  });

  test('a template whose condition reads mcp.uri or mcp.params is listed, and its reads decide', () => {
    const acme = tenant('acme');
    assert.deepEqual(listedTemplates(acme), ['crm://{tenant}/notes/{id}', 'crm://{tenant}/files/{id}']);
    assert.equal(policy.authorize(readUri('crm://acme/notes/1'), acme).allowed, true);
    assert.equal(policy.authorize(readUri('crm://globex/notes/1'), acme).allowed, false);
    assert.equal(policy.authorize(readUri('crm://acme/files/1'), acme).allowed, true);
    assert.equal(policy.authorize(readUri('crm://globex/files/1'), acme).allowed, false);
    assert.deepEqual(listedTemplates(tenant('acme', ['ops'])), templates);
  });

  test('completing a template ref is decided as the template is when listed; a concrete ref as its read', () => {
    for (const auth of [tenant('acme'), tenant('acme', ['ops'])]) {
      const shown = listedTemplates(auth);
      for (const uri of templates) assert.equal(policy.authorize(complete({ type: 'ref/resource', uri }), auth).allowed, shown.includes(uri), uri);
    }
    assert.equal(policy.authorize(complete({ type: 'ref/resource', uri: 'crm://globex/files/1' }), tenant('acme')).allowed, false);
    assert.equal(policy.authorize(complete({ type: 'ref/resource', uri: 'crm://acme/files/1' }), tenant('acme')).allowed, true);
  });
});
