import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { ConditionDeniedError, ConfigurationError, InsufficientScopeError } from '../../../src/core/kernel/errors.js';
import { compilePolicy, type CompiledPolicy } from '../../../src/core/policy/compile-policy.js';
import { policyRefusal } from '../../../src/core/policy/insufficient-scope.js';
import { compileCondition, ConditionSyntaxError, MAX_CONDITION_LENGTH } from '../../../src/core/policy/policy-condition.js';
import { compilePolicySet } from '../../../src/core/policy/policy-set.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

function caller(claims: Record<string, unknown>, scopes: string[] = ['mcp'], clientId = 'console'): AuthInfo {
  return { token: 't', clientId, scopes, extra: { sub: String(claims.sub ?? 'u'), claims: { sub: 'u', ...claims }, tokenType: 'jwt' } };
}
const call = (name: string, args?: Record<string, unknown>): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, ...(args ? { arguments: args } : {}) } });
const read = (uri: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } });
const listed = (policy: CompiledPolicy, auth: AuthInfo, names: string[]): string[] =>
  (policy.filterListResult('tools/list', { tools: names.map((name) => ({ name })) }, auth).tools as { name: string }[]).map((tool) => tool.name);

function compileError(definition: unknown): ConfigurationError {
  try {
    compilePolicy(definition as PolicyDefinition);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError);
    return error;
  }
  assert.fail('the policy compiled');
}

const finance = {
  requiredScopes: ['mcp'],
  tools: {
    payments__refund: { scopes: ['payments'], when: '"finance" in claims.groups' },
    payments__pay: { when: 'mcp.arguments.amount <= 100 || "finance" in claims.groups' },
    delete_note: ['admin'],
    admin_reset: { when: 'claims.client_id == "admin-console"' },
    '*': [],
  },
} satisfies PolicyDefinition;

describe('conditions: compile errors name the rule path and the column', () => {
  test('a syntax error, an undeclared name and an unknown mcp field, each at its column', () => {
    const syntax = compileError({ tools: { payments__refund: { when: 'claims.groups.exists(g, g ==' } } });
    assert.equal(syntax.setting, 'policy.tools.payments__refund.when');
    assert.match(syntax.message, /when: line 1, column \d+: the condition is not valid CEL: /);
    const undeclared = compileError({ tools: { x: { when: 'true && claim.sub == "a"' } } });
    assert.equal(undeclared.setting, 'policy.tools.x.when');
    assert.match(undeclared.message, /when: line 1, column 9: the condition uses 'claim', which is no variable/);
    const field = compileError({ resources: { 'crm://{tenant}/x': { when: 'mcp.parms.tenant == "a"' } } });
    assert.equal(field.setting, 'policy.resources["crm://{tenant}/x"].when');
    assert.match(field.message, /line 1, column 4: the condition reads mcp\.parms, a field mcp lacks/);
    const second = compileError({ tools: { x: { when: 'true &&\n  nope' } } });
    assert.match(second.message, /when: line 2, column 3: the condition uses 'nope'/);
  });

  test('every rule with a bad condition is named in one error, in tools and resources alike', () => {
    const error = compileError({
      tools: { a: { when: 'claim.groups == 1' }, ok: ['mcp'], b: { when: 'mcp.args.x == 1' } },
      resources: { 'crm://{t}/x': { when: 'nope' }, 'crm://y': { when: 'mcp.parms == 1' } },
    });
    assert.deepEqual(
      error.problems.map((p) => p.setting),
      ['policy.tools.a.when', 'policy.tools.b.when', 'policy.resources["crm://{t}/x"].when', 'policy.resources["crm://y"].when'],
    );
  });

  test('a when that is no string, an unknown key, an empty or constant non-boolean condition, and one too long are refused', () => {
    assert.match(compileError({ tools: { x: { when: 5 } } }).message, /expected a CEL expression as a string, got a number/);
    assert.equal(compileError({ tools: { x: { scope: ['a'] } } }).setting, 'policy.tools.x');
    assert.equal(compileError({ methods: { 'tools/call': { scopes: ['bad scope'] } } }).setting, 'policy.methods["tools/call"].scopes[0]');
    assert.match(compileError({ tools: { x: { when: '  ' } } }).message, /is empty/);
    assert.match(compileError({ tools: { x: { when: '"yes"' } } }).message, /not a boolean/);
    assert.match(compileError({ tools: { x: { when: `${'true && '.repeat(MAX_CONDITION_LENGTH / 8)}true` } } }).message, /over the limit/);
    assert.throws(() => compileCondition('[1].all(a, [2].all(b, [3].all(c, true)))'), ConditionSyntaxError);
  });

  test('a function CEL lacks and an expression that can never be a boolean are refused at load, with their column', () => {
    const unknown = compileError({ tools: { x: { when: 'claims.sub != "" && foo(claims.sub)' } } });
    assert.equal(unknown.setting, 'policy.tools.x.when');
    assert.match(unknown.message, /when: line 1, column 21: the condition calls foo\(\), which is no function of CEL's standard library/);
    assert.match(compileError({ tools: { x: { when: 'claims.sub.shout() == "A"' } } }).message, /column 11: the condition calls shout\(\)/);
    for (const when of ['1 + 2', 'size(claims.groups)', '[true]', '{"a": true}', 'claims.x ? 1 : "no"', 'scopes', 'mcp.name', 'server', 'mcp.arguments', '[1, 2].map(x, x)']) {
      const error = compileError({ tools: { x: { when } } });
      // The whole condition, from its first character.
      assert.match(error.message, /when: line 1, column 1: the condition is not a boolean and can never be one/, when);
    }
    assert.match(compileError({ tools: { x: { when: 'claims.admin || mcp.name' } } }).message, /column 20: the condition combines with &&, \|\| or ! a part that can never be a boolean/);
    assert.match(compileError({ tools: { x: { when: '!(1 + 2)' } } }).message, /combines with &&/);
    // What may be a boolean at run time stays allowed (and denies then if it is not one).
    for (const when of ['claims.admin', 'claims.x ? true : 2', 'dyn(claims.flag)', 'claims.groups.exists(g, g.matches("^fin"))', 'int(claims.level) > 3 && "a".size() == 1', 'has(mcp.name)', 'mcp.arguments.flag', 'scopes.map(s, s == "a").exists(b, b)', '[1].map(x, x > 0)[0]']) {
      assert.doesNotThrow(() => compilePolicy({ tools: { x: { when } } }), when);
    }
  });

  test('names bound by a comprehension and CEL type names are declared', () => {
    assert.doesNotThrow(() => compilePolicy({ tools: { x: { when: 'claims.groups.exists(g, g.startsWith("fin")) && type(server) == string' } } }));
  });
});

describe('conditions: evaluation', () => {
  const policy = compilePolicy(finance);

  test('groups: the finance group may refund, others are refused by the condition, not for scope', () => {
    assert.deepEqual(policy.authorize(call('payments__refund'), caller({ groups: ['finance'] }, ['mcp', 'payments'])), {
      allowed: true,
      requiredScopes: ['mcp', 'payments'],
      rule: 'tools.payments__refund',
      condition: '"finance" in claims.groups',
    });
    const refused = policy.authorize(call('payments__refund'), caller({ groups: ['sales'] }, ['mcp', 'payments']));
    assert.equal(refused.allowed, false);
    assert.equal(!refused.allowed && refused.condition, '"finance" in claims.groups');
    assert.equal(refused.rule, 'tools.payments__refund');
    assert.equal(!refused.allowed && refused.conditionError, undefined);
    // Scopes missing too: still the condition's refusal, which no step-up can lift.
    const both = policy.authorize(call('payments__refund'), caller({ groups: ['sales'] }));
    assert.equal(!both.allowed && both.condition, '"finance" in claims.groups');
    // Condition holds, scope missing: the ordinary insufficient_scope.
    const scope = policy.authorize(call('payments__refund'), caller({ groups: ['finance'] }));
    assert.deepEqual(!scope.allowed && [scope.missingScopes, scope.condition], [['payments'], undefined]);
  });

  test('arguments and client_id: mcp.arguments at call time, client_id from the token', () => {
    assert.equal(policy.authorize(call('payments__pay', { amount: 50 }), caller({ groups: [] })).allowed, true);
    assert.equal(policy.authorize(call('payments__pay', { amount: 500 }), caller({ groups: [] })).allowed, false);
    assert.equal(policy.authorize(call('payments__pay', { amount: 500 }), caller({ groups: ['finance'] })).allowed, true);
    assert.equal(policy.authorize(call('admin_reset'), caller({}, ['mcp'], 'admin-console')).allowed, true);
    assert.equal(policy.authorize(call('admin_reset'), caller({ client_id: 'other' }, ['mcp'], 'admin-console')).allowed, false);
  });

  test('tenants: mcp.params holds what the template captured from the URI', () => {
    const tenants = compilePolicy({ resources: { 'crm://{tenant}/accounts/{id}': { when: 'mcp.params.tenant == claims.tenant && mcp.uri.startsWith("crm://")' } } });
    assert.equal(tenants.authorize(read('crm://acme/accounts/7'), caller({ tenant: 'acme' })).allowed, true);
    assert.equal(tenants.authorize(read('crm://globex/accounts/7'), caller({ tenant: 'acme' })).allowed, false);
    assert.equal(tenants.authorize(read('crm://a%20b/accounts/7'), caller({ tenant: 'a b' })).allowed, true);
  });

  test('the granted scopes, the method and the server are variables too', () => {
    const p = compilePolicy({ methods: { '*': { when: '"mcp" in scopes && server == "" && mcp.method != "prompts/get"' } } });
    assert.equal(p.authorize(call('x'), caller({})).allowed, true);
    assert.equal(p.authorize(call('x'), caller({}, ['other'])).allowed, false);
    assert.equal(p.authorize({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'p' } }, caller({})).allowed, false);
  });
});

describe('conditions fail closed', () => {
  test('an evaluation error or a non-boolean result denies, reported as a condition error', () => {
    const errors: string[] = [];
    const policy = compilePolicy({ tools: { a: { when: 'claims.tenant == "x"' }, b: { when: 'claims.groups' } } }, 'policy', { onRuleError: (_e, path) => errors.push(path) });
    const missing = policy.authorize(call('a'), caller({}));
    assert.equal(missing.allowed, false);
    assert.match((!missing.allowed && missing.conditionError) || '', /evaluation failed/);
    const notBool = policy.authorize(call('b'), caller({ groups: ['x'] }));
    assert.match((!notBool.allowed && notBool.conditionError) || '', /not a boolean/);
    assert.deepEqual(errors, ['policy.tools.a', 'policy.tools.b']);
    // Lists agree: an item whose condition errors is not listed.
    assert.deepEqual(listed(policy, caller({}), ['a', 'b']), []);
  });

  test('the cost limit: a nested comprehension over large arguments is not evaluated, and denies', () => {
    const policy = compilePolicy({ tools: { t: { when: 'mcp.arguments.items.all(a, mcp.arguments.items.all(b, a != b || a == b))' } } });
    assert.equal(policy.authorize(call('t', { items: [1, 2, 3] }), caller({})).allowed, true);
    const started = performance.now();
    const big = policy.authorize(call('t', { items: Array.from({ length: 5000 }, (_, i) => i) }), caller({}));
    assert.ok(performance.now() - started < 1000);
    assert.match((!big.allowed && big.conditionError) || '', /over the cost limit/);
  });

  test('the cost limit counts the granted scopes: 3,000 scopes under a nested comprehension are refused fast', () => {
    const policy = compilePolicy({ tools: { t: { when: 'scopes.all(x, scopes.all(y, x != y || x == y))' } } });
    assert.equal(policy.authorize(call('t'), caller({}, ['mcp', 'read'])).allowed, true);
    const scopes = Array.from({ length: 3000 }, (_, i) => `scope:${i}`);
    const started = performance.now();
    const big = policy.authorize(call('t'), caller({}, scopes));
    assert.ok(performance.now() - started < 100, 'refused before running');
    assert.equal(big.allowed, false);
    assert.match((!big.allowed && big.conditionError) || '', /over the cost limit/);
  });

  test('the cost limit weighs strings: contains over a large string argument inside a comprehension is refused', () => {
    const policy = compilePolicy({ tools: { t: { when: 'mcp.arguments.ids.all(i, mcp.arguments.note.contains(i))' } } });
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    assert.equal(policy.authorize(call('t', { ids: ['a'], note: 'a note' }), caller({})).allowed, true);
    const started = performance.now();
    const big = policy.authorize(call('t', { ids, note: 'x'.repeat(240_000) }), caller({}));
    assert.ok(performance.now() - started < 100, 'refused before running');
    assert.match((!big.allowed && big.conditionError) || '', /over the cost limit/);
  });

  test('a refusal by a condition is 403 without a challenge, naming the rule, with a SEP-2643 envelope', () => {
    const policy = compilePolicy(finance);
    const message = call('payments__refund');
    const auth = caller({ groups: [] }, ['mcp', 'payments']);
    const decision = policy.authorize(message, auth);
    const error = policyRefusal(decision, message, () => policy.insufficientScopeError(decision, auth, message));
    assert.ok(error instanceof ConditionDeniedError);
    assert.equal(error.status, 403);
    assert.equal(error.reason, 'condition_denied');
    assert.equal(error.bearerError, undefined);
    assert.equal(error.rule, 'tools.payments__refund');
    assert.deepEqual(error.data, { rule: 'tools.payments__refund', 'io.modelcontextprotocol/authorization': { reason: 'insufficient_authorization', remediation: 'undisclosed' } });
    assert.match(error.message, /tool 'payments__refund'.*tools\.payments__refund/);
    const scopeDecision = policy.authorize(call('delete_note'), auth);
    const scopeError = policyRefusal(scopeDecision, call('delete_note'), () => policy.insufficientScopeError(scopeDecision, auth, call('delete_note')));
    assert.ok(scopeError instanceof InsufficientScopeError);
    assert.equal(scopeError.rule, 'tools.delete_note');
  });
});

describe('conditions: lists and calls agree', () => {
  const policy = compilePolicy(finance);
  const names = ['payments__refund', 'payments__pay', 'admin_reset', 'echo'];
  const callers = [
    caller({ groups: ['finance'] }, ['mcp', 'payments']),
    caller({ groups: ['sales'] }, ['mcp', 'payments']),
    caller({ groups: ['finance'] }, ['mcp']),
    caller({}, ['mcp'], 'admin-console'),
  ];

  test('an item is listed exactly when a call without arguments would be allowed; an arguments condition stays listed', () => {
    for (const auth of callers) {
      const shown = listed(policy, auth, names);
      for (const name of names) {
        const allowed = policy.authorize(call(name), auth).allowed;
        const readsArguments = name === 'payments__pay';
        assert.equal(shown.includes(name), readsArguments || allowed, `${name} for ${JSON.stringify(auth.extra.claims)}`);
      }
      assert.ok(shown.includes('payments__pay'));
    }
    // A filtered list may be reused for a caller whose scopes and condition outcomes are the same, never across them.
    const key = (auth: AuthInfo): string | undefined => policy.listFilterKey('tools/list', auth);
    assert.notEqual(key(callers[0]!), undefined);
    assert.equal(key(callers[0]!), key(caller({ groups: ['finance'], other: 1 }, ['mcp', 'payments'])));
    assert.notEqual(key(callers[0]!), key(callers[1]!));
    assert.notEqual(key(callers[2]!), key(callers[3]!));
    const byName = compilePolicy({ tools: { '*': { when: 'mcp.name != claims.sub' } } });
    assert.equal(byName.listFilterKey('tools/list', callers[0]!), undefined, 'a condition reading the item, and a caller with no verified identity to key on');
  });

  test('a list whose condition reads the item is reused for one verified caller only', () => {
    const byName = compilePolicy({ tools: { '*': { when: 'mcp.name != claims.sub' } } });
    // As the token verifier makes a verified identity: a frozen `extra` with frozen scopes, shared by its requests.
    const verified = (sub: string): AuthInfo['extra'] => Object.freeze({ sub, claims: Object.freeze({ sub }), tokenType: 'jwt' });
    const scopes = Object.freeze(['mcp']) as string[];
    const alice = verified('alice');
    const request = (extra: AuthInfo['extra']): AuthInfo => ({ token: 't', clientId: 'console', scopes, extra });
    const key = (auth: AuthInfo): string | undefined => byName.listFilterKey('tools/list', auth);
    assert.notEqual(key(request(alice)), undefined);
    assert.equal(key(request(alice)), key(request(alice)), 'the same caller, request after request');
    assert.notEqual(key(request(alice)), key(request(verified('alice'))), 'another verified identity, even with the same claims');
    assert.notEqual(key(request(alice)), key(request(verified('bob'))));
    assert.notEqual(key(request(alice)), byName.listFilterKey('prompts/list', request(alice)), 'another list');
    // What the key stands for: the same caller's list, filtered again, is the same.
    const names = ['alice', 'bob', 'carol'];
    assert.deepEqual(listed(byName, request(alice), names), ['bob', 'carol']);
    assert.deepEqual(listed(byName, request(verified('bob')), names), ['alice', 'carol']);
  });

  test('a condition that depends on the caller alone runs once per list, one that reads the request once per item', () => {
    const errors: string[] = [];
    const p = compilePolicy({ tools: { '*': { when: 'claims.nope == 1' }, named: { when: 'mcp.name == claims.nope' } } }, 'policy', { onRuleError: (_e, path) => errors.push(path) });
    assert.deepEqual(listed(p, caller({}), ['a', 'b', 'c', 'named']), []);
    assert.deepEqual(errors, ['policy.tools["*"]', 'policy.tools.named']);
    const q = compilePolicy({ tools: { '*': { when: 'mcp.name.startsWith("x")' } } });
    assert.deepEqual(listed(q, caller({}), ['x1', 'y', 'x2']), ['x1', 'x2']);
  });

  test('resources: concrete URIs are decided by their captured values, templates wait for the read', () => {
    const tenants = compilePolicy({ resources: { 'crm://{tenant}/x': { when: 'mcp.params.tenant == claims.tenant' }, 'crm://{tenant}/y': { when: 'mcp.uri != ""' } } });
    const auth = caller({ tenant: 'acme' });
    const resources = tenants.filterListResult('resources/list', { resources: [{ uri: 'crm://acme/x' }, { uri: 'crm://globex/x' }] }, auth).resources as { uri: string }[];
    assert.deepEqual(resources.map((r) => r.uri), ['crm://acme/x']);
    const templates = tenants.filterListResult('resources/templates/list', { resourceTemplates: [{ uriTemplate: 'crm://{tenant}/x' }, { uriTemplate: 'crm://{tenant}/y' }] }, auth).resourceTemplates;
    assert.equal((templates as unknown[]).length, 2);
  });

  test('an allowed decision under a condition is shared between requests, each rule with its own', () => {
    const policy = compilePolicy({ tools: { a: { scopes: ['x'], when: 'claims.tenant == "acme"' }, b: { scopes: ['x'], when: 'claims.tenant == "acme"' } } });
    const auth = caller({ tenant: 'acme' }, ['x']);
    const first = policy.authorize(call('a'), auth);
    assert.equal(policy.authorize(call('a'), caller({ tenant: 'acme' }, ['x'])), first, 'the same frozen decision');
    assert.ok(Object.isFrozen(first));
    assert.deepEqual([first.rule, first.condition, policy.authorize(call('b'), auth).rule], ['tools.a', 'claims.tenant == "acme"', 'tools.b']);
    const set = compilePolicySet({ gateway: { tools: { '*': { when: 'claims.tenant == "acme"' } } }, servers: [{ name: 'vault', policy: { tools: { open: { when: 'server == "vault"' } } } }, { name: 'notes' }] });
    const combined = set.authorize(call('vault__open'), auth);
    assert.equal(set.authorize(call('vault__open'), auth), combined, 'a combined decision is shared too');
    assert.deepEqual([combined.rule, combined.condition, combined.server], ['servers.vault.tools.open', 'server == "vault"', 'vault']);
    const gatewayOnly = set.authorize(call('notes__echo'), auth);
    assert.deepEqual([gatewayOnly.rule, gatewayOnly.condition, gatewayOnly.server], ['tools.*', 'claims.tenant == "acme"', 'notes']);
  });

  test('in a policy set: server rules are named by server, and server is the server a request goes to', () => {
    const set = compilePolicySet({
      gateway: { tools: { '*': { when: 'server != "vault" || "ops" in claims.groups' } } },
      servers: [{ name: 'vault', policy: { tools: { open: { when: 'server == "vault" && claims.tenant == "acme"' } } } }, { name: 'notes' }],
    });
    const ops = caller({ groups: ['ops'], tenant: 'acme' });
    const dev = caller({ groups: ['dev'], tenant: 'acme' });
    assert.deepEqual(set.authorize(call('vault__open'), ops), {
      allowed: true,
      requiredScopes: [],
      rule: 'servers.vault.tools.open',
      condition: 'server == "vault" && claims.tenant == "acme"',
      server: 'vault',
    });
    const refused = set.authorize(call('vault__open'), dev);
    assert.deepEqual([refused.allowed, refused.rule, refused.server], [false, 'tools.*', 'vault'], 'refused by the endpoint-wide condition, for the server');
    assert.equal(set.authorize(call('notes__echo'), dev).allowed, true);
    const other = caller({ groups: ['ops'], tenant: 'globex' });
    assert.equal(set.authorize(call('vault__open'), other).rule, 'servers.vault.tools.open');
    assert.deepEqual(set.filterListResult('tools/list', { tools: [{ name: 'vault__open' }, { name: 'notes__echo' }] }, dev).tools, [{ name: 'notes__echo' }]);
    assert.deepEqual(set.filterListResult('tools/list', { tools: [{ name: 'vault__open' }, { name: 'notes__echo' }] }, other).tools, [{ name: 'notes__echo' }]);
    assert.equal((set.filterListResult('tools/list', { tools: [{ name: 'vault__open' }] }, ops).tools as unknown[]).length, 1);
  });
});
