import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy, createInsufficientScopeError, isListMethod } from '../../../src/core/policy/compile-policy.js';
import { isScopeToken } from '../../../src/core/wire/scope-token.js';
import { ConditionDeniedError, ConfigurationError, InsufficientScopeError } from '../../../src/core/kernel/errors.js';
import { policyRefusal } from '../../../src/core/policy/insufficient-scope.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';

function authWith(...scopes: string[]): AuthInfo {
  return { token: 't', clientId: 'client', scopes, extra: { sub: 'alice', claims: {}, tokenType: 'jwt' } };
}

function call(name: unknown): JsonRpcMessage {
  return { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } };
}

function request(method: string, params?: Record<string, unknown>): JsonRpcMessage {
  return params === undefined ? { jsonrpc: '2.0', id: 1, method } : { jsonrpc: '2.0', id: 1, method, params };
}

const notesPolicy: PolicyDefinition = {
  requiredScopes: ['mcp'],
  methods: { 'tools/call': ['mcp:tools'] },
  tools: { '*': ['notes:read'], delete_note: ['notes:admin'], add_note: ['notes:write'] },
  scopeHierarchy: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
};

test('base scopes apply to initialize', () => {
  const policy = compilePolicy({ requiredScopes: ['mcp'] });
  const init = request('initialize', { protocolVersion: '2025-11-25', capabilities: {} });
  assert.deepEqual(policy.requiredScopesFor(init, authWith()), ['mcp']);
  assert.deepEqual(policy.authorize(init, authWith()), { allowed: false, requiredScopes: ['mcp'], missingScopes: ['mcp'] });
  assert.equal(policy.authorize(init, authWith('mcp')).allowed, true);
});

test('a method rule adds to the base scopes', () => {
  const policy = compilePolicy(notesPolicy);
  assert.deepEqual(policy.requiredScopesFor(request('tools/list'), authWith()), ['mcp']);
  assert.deepEqual(policy.requiredScopesFor(call('unknown_tool'), authWith()), ['mcp', 'mcp:tools', 'notes:read']);
});

test('a named tool rule replaces "*"', () => {
  const policy = compilePolicy(notesPolicy);
  assert.deepEqual(policy.requiredScopesFor(call('delete_note'), authWith()), ['mcp', 'mcp:tools', 'notes:admin']);
});

test('a call without a tool name gets the "*" rule', () => {
  const policy = compilePolicy(notesPolicy);
  assert.deepEqual(policy.requiredScopesFor(request('tools/call', {}), authWith()), ['mcp', 'mcp:tools', 'notes:read']);
  assert.deepEqual(policy.requiredScopesFor(call(42), authWith()), ['mcp', 'mcp:tools', 'notes:read']);
});

test('without "*" an unlisted tool needs only the base and method scopes', () => {
  const policy = compilePolicy({ requiredScopes: ['mcp'], tools: { delete_note: ['notes:admin'] } });
  assert.deepEqual(policy.requiredScopesFor(call('echo'), authWith()), ['mcp']);
});

test('the hierarchy decides: admin may delete, write may add but not delete', () => {
  const policy = compilePolicy(notesPolicy);
  assert.equal(policy.authorize(call('delete_note'), authWith('mcp', 'mcp:tools', 'notes:admin')).allowed, true);
  assert.equal(policy.authorize(call('list_notes'), authWith('mcp', 'mcp:tools', 'notes:admin')).allowed, true);
  assert.deepEqual(policy.authorize(call('delete_note'), authWith('mcp', 'mcp:tools', 'notes:write')), {
    allowed: false,
    requiredScopes: ['mcp', 'mcp:tools', 'notes:admin'],
    missingScopes: ['notes:admin'],
    rule: 'tools.delete_note',
  });
});

test('notifications need the base scopes plus their method rule; client responses only the base', () => {
  const policy = compilePolicy({ requiredScopes: ['mcp'], methods: { 'notifications/initialized': ['x'] } });
  assert.deepEqual(policy.requiredScopesFor({ jsonrpc: '2.0', method: 'notifications/initialized' }, authWith()), ['mcp', 'x']);
  assert.deepEqual(policy.requiredScopesFor({ jsonrpc: '2.0', id: 3, result: {} }, authWith()), ['mcp']);
});

test('prompts/get and resources/read use the prompt and resource rules', () => {
  const policy = compilePolicy({
    prompts: { summarize: ['prompts:summarize'] },
    resources: { 'notes://{user}/{id}': ['notes:read'], '*': ['res:any'] },
  });
  assert.deepEqual(policy.requiredScopesFor(request('prompts/get', { name: 'summarize' }), authWith()), ['prompts:summarize']);
  assert.deepEqual(policy.requiredScopesFor(request('resources/read', { uri: 'notes://bob/1' }), authWith()), ['notes:read']);
  assert.deepEqual(policy.requiredScopesFor(request('resources/subscribe', { uri: 'mem://x' }), authWith()), ['res:any']);
  assert.deepEqual(policy.requiredScopesFor(request('resources/unsubscribe', { uri: 'notes://a/b' }), authWith()), ['notes:read']);
});

test('subscriptions/listen needs the rule of every watched resource', () => {
  const policy = compilePolicy({ resources: { 'notes://{user}/{id}': ['notes:read'], 'secret://x': ['secret'] } });
  const listen = request('subscriptions/listen', {
    notifications: { toolsListChanged: true, resourceSubscriptions: ['notes://a/1', 'secret://x'] },
  });
  assert.deepEqual(policy.requiredScopesFor(listen, authWith()), ['notes:read', 'secret']);
});

test('completion/complete needs the rule of the prompt or resource it completes', () => {
  const policy = compilePolicy({ prompts: { summarize: ['p'] }, resources: { 'notes://{user}/{id}': ['r'] } });
  const promptRef = request('completion/complete', { ref: { type: 'ref/prompt', name: 'summarize' }, argument: { name: 'a', value: '' } });
  const resourceRef = request('completion/complete', { ref: { type: 'ref/resource', uri: 'notes://{user}/{id}' }, argument: { name: 'user', value: 'a' } });
  assert.deepEqual(policy.requiredScopesFor(promptRef, authWith()), ['p']);
  assert.deepEqual(policy.requiredScopesFor(resourceRef, authWith()), ['r']);
});

test('constructor, __proto__, toString and hasOwnProperty are ordinary tool names', () => {
  const policy = compilePolicy(
    JSON.parse('{"tools": {"__proto__": ["a"], "constructor": ["b"], "toString": ["c"], "hasOwnProperty": ["d"], "*": ["z"]}}'),
  );
  assert.deepEqual(policy.requiredScopesFor(call('__proto__'), authWith()), ['a']);
  assert.deepEqual(policy.requiredScopesFor(call('constructor'), authWith()), ['b']);
  assert.deepEqual(policy.requiredScopesFor(call('toString'), authWith()), ['c']);
  assert.deepEqual(policy.requiredScopesFor(call('hasOwnProperty'), authWith()), ['d']);
  assert.deepEqual(policy.requiredScopesFor(call('valueOf'), authWith()), ['z']);
  assert.equal(policy.authorize(call('__proto__'), authWith('a')).allowed, true);
  assert.equal(policy.authorize(call('__proto__'), authWith('b', 'c', 'd', 'z')).allowed, false);
  const listed = policy.filterListResult(
    'tools/list',
    { tools: [{ name: '__proto__' }, { name: 'constructor' }, { name: 'toString' }, { name: 'valueOf' }] },
    authWith('a', 'c'),
  );
  assert.deepEqual(listed.tools, [{ name: '__proto__' }, { name: 'toString' }]);
});

test('prototype names with no rule fall back to "*" even without JSON', () => {
  const policy = compilePolicy({ tools: { '*': ['z'] } });
  for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    assert.deepEqual(policy.requiredScopesFor(call(name), authWith()), ['z'], name);
  }
});

test('a "__proto__" literal key in code (which sets the prototype) is refused, not ignored', () => {
  assert.throws(
    () => compilePolicy({ tools: { __proto__: ['a'] } as unknown as Record<string, string[]> }),
    (e: unknown) => e instanceof ConfigurationError && e.setting === 'policy.tools' && /computed key/.test(e.message),
  );
});

test('a rule function receives the caller and the message', () => {
  const seen: [AuthInfo, JsonRpcMessage][] = [];
  const policy = compilePolicy({
    tools: {
      edit_note: (auth, message) => {
        seen.push([auth, message]);
        return auth.extra.sub === 'alice' ? ['notes:own'] : ['notes:admin'];
      },
    },
  });
  const auth = authWith('notes:own');
  const message = call('edit_note');
  assert.equal(policy.authorize(message, auth).allowed, true);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.[0], auth);
  assert.equal(seen[0]?.[1], message);
});

test('a rule that throws or returns a non-array denies the call, without crashing', () => {
  const errors: string[] = [];
  const policy = compilePolicy(
    {
      tools: {
        broken: () => {
          throw new Error('bug');
        },
        wrong: (() => 'notes:read') as unknown as () => string[],
        spaced: () => ['two words'],
      },
    },
    'policy',
    { onRuleError: (_error, path) => errors.push(path) },
  );
  for (const name of ['broken', 'wrong', 'spaced']) {
    const decision = policy.authorize(call(name), authWith('notes:read', 'two', 'words'));
    assert.equal(decision.allowed, false, name);
    assert.equal(!decision.allowed && decision.failedRule, `policy.tools.${name}`);
  }
  assert.deepEqual(errors, ['policy.tools.broken', 'policy.tools.wrong', 'policy.tools.spaced']);
  const listed = policy.filterListResult('tools/list', { tools: [{ name: 'broken' }, { name: 'ok' }] }, authWith());
  assert.deepEqual(listed.tools, [{ name: 'ok' }]);
});

test('a rule function that fails is refused with 403 condition_error, never an insufficient_scope challenge', () => {
  const policy = compilePolicy({ tools: { broken: () => { throw new Error('bug'); }, wrong: (() => 'x') as unknown as () => string[] } });
  for (const name of ['broken', 'wrong']) {
    const auth = authWith();
    const decision = policy.authorize(call(name), auth);
    const error = policyRefusal(decision, call(name), () => policy.insufficientScopeError(decision, auth, call(name)));
    // A step-up cannot fix a broken rule: a scope challenge would send the client into a loop.
    assert.ok(error instanceof ConditionDeniedError, name);
    assert.equal(error.status, 403);
    assert.equal(error.reason, 'condition_error');
    assert.equal(error.bearerError, undefined);
    assert.equal(error.rule, `tools.${name}`);
    assert.equal(error.condition, undefined);
    assert.equal(error.message, `Access to tool '${name}' (tools/call) denied: the server's policy could not evaluate it`);
  }
});

test('a hook that throws does not turn a denial into a crash', () => {
  const policy = compilePolicy(
    { tools: { broken: () => { throw new Error('bug'); } } },
    'policy',
    { onRuleError: () => { throw new Error('hook bug'); } },
  );
  assert.equal(policy.authorize(call('broken'), authWith()).allowed, false);
});

test('tools/list is filtered by tool rules and keeps nextCursor', () => {
  const policy = compilePolicy(notesPolicy);
  const result = {
    tools: [{ name: 'list_notes' }, { name: 'add_note' }, { name: 'delete_note' }],
    nextCursor: 'page-2',
  };
  const filtered = policy.filterListResult('tools/list', result, authWith('mcp', 'mcp:tools', 'notes:write'));
  assert.deepEqual(filtered, { tools: [{ name: 'list_notes' }, { name: 'add_note' }], nextCursor: 'page-2' });
  assert.notEqual(filtered, result);
  assert.equal(result.tools.length, 3);
});

test('list filtering includes the method rule of the call that uses the item', () => {
  const policy = compilePolicy(notesPolicy);
  const filtered = policy.filterListResult('tools/list', { tools: [{ name: 'list_notes' }] }, authWith('mcp', 'notes:admin'));
  assert.deepEqual(filtered.tools, []);
});

test('prompts/list is filtered by prompt rules and keeps nextCursor', () => {
  const policy = compilePolicy({ prompts: { summarize: ['p:sum'], '*': ['p:any'] } });
  const filtered = policy.filterListResult(
    'prompts/list',
    { prompts: [{ name: 'summarize' }, { name: 'translate' }], nextCursor: 'c' },
    authWith('p:sum'),
  );
  assert.deepEqual(filtered, { prompts: [{ name: 'summarize' }], nextCursor: 'c' });
});

test('resources/list is filtered by URI rules and keeps nextCursor', () => {
  const policy = compilePolicy({ resources: { 'notes://{user}/{id}': ['notes:read'], 'file:///{+path}': ['files'] } });
  const filtered = policy.filterListResult(
    'resources/list',
    { resources: [{ uri: 'notes://a/1', name: 'n' }, { uri: 'file:///etc/x', name: 'f' }, { uri: 'mem://free', name: 'm' }], nextCursor: 'c' },
    authWith('notes:read'),
  );
  assert.deepEqual(filtered, { resources: [{ uri: 'notes://a/1', name: 'n' }, { uri: 'mem://free', name: 'm' }], nextCursor: 'c' });
});

test('resources/templates/list matches template strings against resource keys and keeps nextCursor', () => {
  const policy = compilePolicy({
    resources: { 'notes://{user}/{id}': ['notes:read'], 'file:///{+path}': ['files'], '*': ['other'] },
  });
  const filtered = policy.filterListResult(
    'resources/templates/list',
    {
      resourceTemplates: [
        { uriTemplate: 'notes://{user}/{id}', name: 'note' },
        { uriTemplate: 'file:///{path}', name: 'file' },
        { uriTemplate: 'mem://{key}', name: 'mem' },
      ],
      nextCursor: 'c',
    },
    authWith('notes:read', 'other'),
  );
  assert.deepEqual(filtered, {
    resourceTemplates: [{ uriTemplate: 'notes://{user}/{id}', name: 'note' }, { uriTemplate: 'mem://{key}', name: 'mem' }],
    nextCursor: 'c',
  });
});

test('list items without a string name are dropped (fail closed)', () => {
  const policy = compilePolicy({});
  const filtered = policy.filterListResult(
    'tools/list',
    { tools: [{ name: 'ok' }, { name: 42 }, {}, null, 'bare', { name: ['x'] }] },
    authWith(),
  );
  assert.deepEqual(filtered.tools, [{ name: 'ok' }]);
  assert.deepEqual(policy.filterListResult('tools/list', { nextCursor: 'c' }, authWith()), { tools: [], nextCursor: 'c' });
});

test('list rule functions get a synthetic call for each item', () => {
  const seen: JsonRpcMessage[] = [];
  const policy = compilePolicy({
    tools: {
      '*': (_auth, message) => {
        seen.push(message);
        return ['x'];
      },
    },
  });
  policy.filterListResult('tools/list', { tools: [{ name: 'a' }] }, authWith('x'));
  assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'a' } }]);
});

test('2026-07-28 filtered lists are marked cacheScope "private" and resultType "complete"; ttlMs is kept, or 0 when missing', () => {
  const policy = compilePolicy({});
  const listRequest = request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
  const withTtl = policy.filterListResult(
    'tools/list',
    { resultType: 'complete', tools: [], ttlMs: 300000, cacheScope: 'public' },
    authWith(),
    listRequest,
  );
  assert.deepEqual(withTtl, { resultType: 'complete', tools: [], ttlMs: 300000, cacheScope: 'private' });
  const withoutTtl = policy.filterListResult('prompts/list', { prompts: [] }, authWith(), undefined, '2026-07-28');
  assert.deepEqual(withoutTtl, { prompts: [], cacheScope: 'private', resultType: 'complete', ttlMs: 0 });
  const negative = policy.filterListResult('resources/list', { resources: [], ttlMs: -5 }, authWith(), listRequest);
  assert.equal(negative.ttlMs, 0);
});

test('older revisions get no caching hints', () => {
  const policy = compilePolicy({});
  const old = request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } });
  assert.deepEqual(policy.filterListResult('tools/list', { tools: [] }, authWith(), old), { tools: [] });
  assert.deepEqual(policy.filterListResult('tools/list', { tools: [] }, authWith(), request('tools/list'), '2025-06-18'), { tools: [] });
  assert.deepEqual(policy.filterListResult('tools/list', { tools: [] }, authWith()), { tools: [] });
});

test('an explicit protocolVersion argument wins over _meta', () => {
  const policy = compilePolicy({});
  const message = request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
  assert.deepEqual(policy.filterListResult('tools/list', { tools: [] }, authWith(), message, '2025-11-25'), { tools: [] });
});

test('non-list methods are returned unchanged', () => {
  const policy = compilePolicy({ tools: { '*': ['x'] } });
  const result = { content: [] };
  assert.equal(policy.filterListResult('tools/call', result, authWith()), result);
  assert.equal(isListMethod('resources/templates/list'), true);
  assert.equal(isListMethod('tools/call'), false);
  assert.equal(policy.isListMethod('prompts/list'), true);
});

test('authorize on static rules reuses precomputed work', () => {
  const policy = compilePolicy(notesPolicy);
  let reads = 0;
  const scopes = new Proxy(['mcp', 'mcp:tools', 'notes:admin'], {
    get(target, key, receiver) {
      if (key === Symbol.iterator || (typeof key === 'string' && /^\d+$/.test(key))) reads++;
      return Reflect.get(target, key, receiver);
    },
  });
  const auth = { ...authWith(), scopes };
  const first = policy.authorize(call('delete_note'), auth);
  const readsAfterFirst = reads;
  for (let i = 0; i < 1000; i++) policy.authorize(call('delete_note'), auth);
  const again = policy.authorize(call('delete_note'), auth);
  assert.equal(first.allowed, true);
  assert.equal(reads, readsAfterFirst, 'granted scopes are expanded once per AuthInfo');
  assert.equal(again, first, 'the allowed decision is shared');
  assert.equal(policy.requiredScopesFor(call('delete_note'), auth), policy.requiredScopesFor(call('delete_note'), auth));
});

test('a replaced scopes array on the same AuthInfo is re-expanded', () => {
  const policy = compilePolicy({ tools: { t: ['x'] } });
  const auth = authWith();
  assert.equal(policy.authorize(call('t'), auth).allowed, false);
  auth.scopes = ['x'];
  assert.equal(policy.authorize(call('t'), auth).allowed, true);
});

test('insufficientScopeError names the tool and missing scopes and challenges required ∪ granted', () => {
  const policy = compilePolicy(notesPolicy);
  const auth = { ...authWith('mcp', 'mcp:tools', 'notes:write', 'offline_access'), token: 'secret-token-value' };
  const decision = policy.authorize(call('delete_note'), auth);
  const error = policy.insufficientScopeError(decision, auth, call('delete_note'));
  assert.ok(error instanceof InsufficientScopeError);
  assert.equal(error.status, 403);
  assert.equal(error.message, "Insufficient scope for tool 'delete_note' (tools/call): missing notes:admin");
  assert.deepEqual(error.requiredScopes, ['mcp', 'mcp:tools', 'notes:admin']);
  assert.deepEqual(error.challengeScopes, ['mcp', 'mcp:tools', 'notes:admin', 'notes:write']);
  assert.ok(!error.message.includes('secret-token-value'));
});

test('insufficientScopeError keeps client-supplied names header-safe and short', () => {
  const policy = compilePolicy({ tools: { '*': ['x'] } });
  const name = `evil"\\\n${'é'.repeat(200)}`;
  const error = createInsufficientScopeError(policy.authorize(call(name), authWith()), authWith(), call(name));
  assert.match(error.message, /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/);
  assert.ok(error.message.length < 160);
  const failed = compilePolicy({ tools: { t: () => { throw new Error('x'); } } });
  const failedError = failed.insufficientScopeError(failed.authorize(call('t'), authWith()), authWith(), call('t'));
  assert.equal(failedError.message, "Access to tool 't' (tools/call) denied: the server's policy could not evaluate it");
  assert.equal(failed.insufficientScopeError(failed.authorize(call('t'), authWith()), authWith()).status, 403);
});

test('malformed rules are refused at start-up with the exact path', () => {
  const cases: [unknown, string, RegExp][] = [
    [{ tools: { delete_note: 'notes:admin' } }, 'policy.tools.delete_note', /expected an array of scope strings/],
    [{ methods: { 'tools/call': [1] } }, 'policy.methods["tools/call"][0]', /not a valid scope/],
    [{ requiredScopes: 'mcp' }, 'policy.requiredScopes', /expected an array of scope strings/],
    [{ resources: { 'notes://{user': ['x'] } }, 'policy.resources["notes://{user"]', /unclosed/],
    [{ scopeHierarchy: { admin: 'write' } }, 'policy.scopeHierarchy.admin', /expected an array/],
    [{ scopeHierarchy: { 'bad scope': ['x'] } }, 'policy.scopeHierarchy["bad scope"]', /not a valid scope/],
    [{ tools: [] }, 'policy.tools', /expected an object/],
    [[], 'policy', /expected a policy object/],
    [{ tool: {} }, 'policy', /unknown key "tool"/],
  ];
  for (const [definition, setting, message] of cases) {
    assert.throws(
      () => compilePolicy(definition as PolicyDefinition),
      (e: unknown) => e instanceof ConfigurationError && e.setting === setting && message.test(e.message),
      setting,
    );
  }
});

test('mistakes in several parts of a policy are listed together, each by its path', () => {
  const definition = { tool: {}, tools: { add: 'calc:use' }, resources: { 'notes://{user': ['x'] }, rateLimits: { tools: { add: '10/day' } } };
  assert.throws(
    () => compilePolicy(definition as unknown as PolicyDefinition, 'MCP_AUTH_POLICY', { source: 'policy file p.json' }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError, String(e));
      assert.deepEqual(e.problems.map((p) => p.setting), ['MCP_AUTH_POLICY', 'MCP_AUTH_POLICY.tools.add', 'MCP_AUTH_POLICY.resources["notes://{user"]', 'MCP_AUTH_POLICY.rateLimits.tools.add']);
      assert.ok(e.problems.every((p) => p.detail.endsWith('(in policy file p.json)')), e.message);
      assert.match(e.message, /^4 settings need fixing:\n {2}MCP_AUTH_POLICY: unknown key "tool"/);
      return true;
    },
  );
});

test('scope strings follow the RFC 6749 §3.3 charset', () => {
  for (const bad of ['', 'a b', 'a"b', 'a\\b', 'tab\t', 'é', 'new\nline']) {
    assert.equal(isScopeToken(bad), false, JSON.stringify(bad));
    assert.throws(() => compilePolicy({ requiredScopes: [bad] }), ConfigurationError, JSON.stringify(bad));
  }
  for (const good of ['mcp', 'notes:read', 'https://api.example.com/x.read', '!#[]~']) assert.equal(isScopeToken(good), true, good);
});

test('offline_access is never in scopesSupported', () => {
  assert.deepEqual(compilePolicy({ scopesSupported: ['mcp', 'offline_access', 'mcp'] }).scopesSupported, ['mcp']);
  assert.deepEqual(compilePolicy({ requiredScopes: ['offline_access'] }).scopesSupported, []);
});

test('scopesSupported defaults to every static scope, requiredScopes first', () => {
  const policy = compilePolicy({ ...notesPolicy, resources: { 'notes://{u}/{id}': ['notes:read'], x: () => ['dyn'] } });
  assert.deepEqual(policy.scopesSupported, ['mcp', 'mcp:tools', 'notes:read', 'notes:admin', 'notes:write']);
  assert.deepEqual(policy.requiredScopes, ['mcp']);
});

const uriPolicy = compilePolicy({
  resources: { 'notes://host/secret': ['admin'], 'https://example.com/doc': ['admin'], '*': ['read'] },
});
const uriReader: AuthInfo = { token: 't', clientId: 'c', scopes: ['read'], extra: { claims: {}, tokenType: 'jwt' } };
const readUri = (uri: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } });

test('every spelling of a protected resource URI resolves to its own rule, as the SDKs resolve it', () => {
  for (const uri of [
    'notes://host/secret',
    'notes://host/x/../secret',
    'notes://host/./secret',
    'https://EXAMPLE.com/doc',
    'https://example.com:443/doc',
    'https://example.com/./doc',
    'HTTPS://example.com/doc',
  ]) {
    assert.deepEqual(uriPolicy.requiredScopesFor(readUri(uri), uriReader), ['admin'], uri);
    assert.equal(uriPolicy.authorize(readUri(uri), uriReader).allowed, false, uri);
  }
});

test('resources/list items are filtered by the same URI resolution', () => {
  const result = uriPolicy.filterListResult(
    'resources/list',
    { resources: [{ uri: 'https://EXAMPLE.com:443/./doc' }, { uri: 'notes://host/other' }] },
    uriReader,
  );
  assert.deepEqual(result.resources, [{ uri: 'notes://host/other' }]);
});

test('URI templates match resolved URIs, and template list items match their own key first', () => {
  const policy = compilePolicy({
    resources: {
      'https://Docs.example.com/private/{id}': ['admin'],
      'notes://x/café/{id}': ['admin'],
      'notes://x/search{?q}': ['admin'],
      'notes://x/doc{#section}': ['admin'],
      '*': ['read'],
    },
  });
  for (const uri of ['https://docs.example.com/private/1', 'notes://x/café/1', 'notes://x/caf%C3%A9/1', 'notes://x/search?q=a']) {
    assert.deepEqual(policy.requiredScopesFor(readUri(uri), uriReader), ['admin'], uri);
  }
  const listed = policy.filterListResult(
    'resources/templates/list',
    { resourceTemplates: ['notes://x/search{?q}', 'notes://x/doc{#section}', 'notes://x/café/{id}', 'other://{x}'].map((uriTemplate) => ({ uriTemplate })) },
    uriReader,
  );
  assert.deepEqual(listed.resourceTemplates, [{ uriTemplate: 'other://{x}' }]);
});

test('listFilterKey: method, revision kind and effective scopes; none when a rule the list filter reads is a function', () => {
  const auth = (scopes: string[]): AuthInfo => ({ token: 't', clientId: 'c', scopes, extra: { claims: {}, tokenType: 'jwt' } });
  const policy = compilePolicy({ tools: { admin: ['a'] }, scopeHierarchy: { 'all': ['a'] } });
  assert.equal(policy.listFilterKey('tools/list', auth(['b', 'a'])), JSON.stringify(['tools/list', false, ['a', 'b']]));
  assert.notEqual(policy.listFilterKey('tools/list', auth(['a b'])), policy.listFilterKey('tools/list', auth(['a', 'b'])), 'a scope with a space is another scope set');
  assert.equal(policy.listFilterKey('tools/list', auth(['all'])), policy.listFilterKey('tools/list', auth(['all', 'a'])), 'implied scopes count');
  assert.notEqual(policy.listFilterKey('tools/list', auth(['a']), undefined, '2026-07-28'), policy.listFilterKey('tools/list', auth(['a'])));
  assert.equal(policy.listFilterKey('tools/call', auth(['a'])), undefined);
  const dynamic = compilePolicy({ tools: { admin: () => ['a'] } });
  assert.equal(dynamic.listFilterKey('tools/list', auth(['a'])), undefined);
  // An answer is filtered by its shape: a prompts list answer may hold tools too, which the function decides.
  assert.equal(dynamic.listFilterKey('prompts/list', auth(['a'])), undefined);
  assert.equal(compilePolicy({ methods: { 'tools/call': () => ['a'] } }).listFilterKey('resources/list', auth(['a'])), undefined);
});
