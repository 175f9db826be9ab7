// The policy of an endpoint serving several servers: the endpoint-wide rules by exposed names, each server's own
// rules by its own names, lists filtered per server, and the set's keys, scopes and per-server rate limits.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { ConditionDeniedError, ConfigurationError, InsufficientScopeError } from '../../../src/core/kernel/errors.js';
import { compilePolicy, isCompiledPolicy } from '../../../src/core/policy/compile-policy.js';
import { compilePolicySet, mayReachServer, type PolicySetOptions } from '../../../src/core/policy/policy-set.js';
import { policyRefusal } from '../../../src/core/policy/insufficient-scope.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import { compileToolSelection } from '../../../src/core/policy/tool-selection.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

function authWith(...scopes: string[]): AuthInfo {
  return { token: 't', clientId: 'client', scopes: Object.freeze(scopes) as string[], extra: { sub: 'alice', claims: {}, tokenType: 'jwt' } };
}
const request = (method: string, params?: Record<string, unknown>): JsonRpcMessage =>
  (params === undefined ? { jsonrpc: '2.0', id: 1, method } : { jsonrpc: '2.0', id: 1, method, params }) as JsonRpcMessage;
const paramsOf = (message: JsonRpcMessage): unknown => (message as { params?: unknown }).params;
const call = (name: string): JsonRpcMessage => request('tools/call', { name, arguments: {} });

const notes: PolicyDefinition = {
  requiredScopes: ['notes'],
  tools: { '*': ['notes:read'], add: ['notes:write'], 'a__b': ['notes:odd'] },
  prompts: { summary: ['notes:read'] },
  resources: { 'notes://{id}': ['notes:read'], 'notes://secret': ['notes:admin'] },
  scopeHierarchy: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
  rateLimits: { tools: { add: '1/min' } },
};
const py: PolicyDefinition = { methods: { 'tools/call': ['py'] }, tools: { run: ['py:run'] }, rateLimits: { tools: { '*': '1/min' } } };

/** Resources of the notes server are notes://…, of the files server file://…; anything else is unknown. */
function routeResource(uri: string): string | undefined {
  if (uri.startsWith('notes://')) return 'notes';
  if (uri.startsWith('file://')) return 'files';
  return undefined;
}

function makeSet(overrides: Partial<PolicySetOptions> = {}) {
  return compilePolicySet({
    gateway: { requiredScopes: ['mcp'], tools: { 'files__wipe': ['admin'] }, resources: { 'file:///etc/{+path}': ['admin'] } },
    servers: [
      { name: 'notes', policy: notes },
      { name: 'py', policy: py, selection: compileToolSelection({ exclude: ['debug_*'] }, 'servers.py.tools') },
      { name: 'files' },
    ],
    routeResource,
    ...overrides,
  });
}

const names = (result: Record<string, unknown>, key: string, field = 'name'): string[] => (result[key] as Record<string, string>[]).map((item) => item[field]!);

describe('compilePolicySet', () => {
  test('a routed call needs the endpoint-wide scopes and its server rules, by the server’s own name', () => {
    const set = makeSet();
    assert.ok(isCompiledPolicy(set));
    assert.deepEqual(set.requiredScopesFor(call('notes__add'), authWith()), ['mcp', 'notes', 'notes:write']);
    assert.deepEqual(set.requiredScopesFor(call('notes__list'), authWith()), ['mcp', 'notes', 'notes:read'], 'the server’s * covers its other tools');
    assert.deepEqual(set.requiredScopesFor(call('notes__a__b'), authWith()), ['mcp', 'notes', 'notes:odd'], 'split at the first __');
    assert.deepEqual(set.requiredScopesFor(call('py__run'), authWith()), ['mcp', 'py', 'py:run']);
    assert.deepEqual(set.requiredScopesFor(call('files__wipe'), authWith()), ['mcp', 'admin'], 'endpoint-wide rules by exposed name');
    assert.deepEqual(set.requiredScopesFor(request('prompts/get', { name: 'notes__summary' }), authWith()), ['mcp', 'notes', 'notes:read']);
    assert.deepEqual(set.requiredScopesFor(request('initialize', {}), authWith()), ['mcp'], 'messages routed to no server: endpoint-wide only');

    const decision = set.authorize(call('notes__add'), authWith('mcp', 'notes', 'notes:read'));
    assert.equal(decision.allowed, false);
    assert.deepEqual(!decision.allowed && decision.missingScopes, ['notes:write']);
    assert.equal(set.authorize(call('notes__add'), authWith('mcp', 'notes', 'notes:admin')).allowed, true, 'the server’s own hierarchy applies to its rules');
    const both = set.authorize(call('notes__add'), authWith());
    assert.deepEqual(!both.allowed && both.missingScopes, ['mcp', 'notes', 'notes:write'], 'missing scopes of both policies');
    // A server rule never applies under its local name when called without the prefix.
    assert.deepEqual(set.requiredScopesFor(call('add'), authWith()), ['mcp']);
  });

  test('a static allowed decision is shared, so the common call allocates no decision', () => {
    const set = makeSet();
    const caller = authWith('mcp', 'notes', 'notes:write');
    assert.equal(set.authorize(call('notes__add'), caller), set.authorize(call('notes__add'), caller));
  });

  test('a decision names the one server its request is for, allowed or denied, and no server otherwise', () => {
    const set = makeSet();
    const caller = authWith('mcp', 'notes', 'notes:write', 'py');
    const serverOf = (message: JsonRpcMessage, auth = caller) => set.authorize(message, auth).server;
    assert.equal(serverOf(call('notes__add')), 'notes', 'an allowed tool call');
    assert.equal(serverOf(call('notes__add'), authWith('mcp')), 'notes', 'a tool call denied by its server’s scopes');
    assert.equal(serverOf(call('files__wipe')), 'files', 'a tool call denied by the endpoint-wide scopes');
    assert.equal(serverOf(request('prompts/get', { name: 'notes__summary' })), 'notes', 'a prompt');
    assert.equal(serverOf(request('completion/complete', { ref: { type: 'ref/prompt', name: 'notes__summary' }, argument: { name: 'a', value: '' } })), 'notes');
    assert.equal(serverOf(request('resources/read', { uri: 'notes://7' })), 'notes', 'a resource URI routed to a server');
    assert.equal(serverOf(request('resources/read', { uri: 'notes://secret' })), 'notes', 'a resource denied by its server’s rule');
    assert.equal(serverOf(request('resources/read', { uri: 'file:///tmp/x' })), 'files', 'a server without rules of its own');
    assert.equal(serverOf(request('subscriptions/listen', { notifications: { resourceSubscriptions: ['notes://7', 'notes://8'] } })), 'notes', 'a listen for one server');
    assert.equal(serverOf(request('subscriptions/listen', { notifications: { resourceSubscriptions: ['notes://7', 'other://y'] } })), undefined, 'a listen also naming URIs of no server');
    assert.equal(serverOf(request('subscriptions/listen', { notifications: { resourceSubscriptions: ['notes://7', 'file:///tmp/x'] } })), undefined, 'a listen for two');
    for (const name of ['nope__x', 'echo', 'py__debug_dump']) assert.equal(serverOf(call(name)), undefined, `${name}: no server exposes it`);
    assert.equal(serverOf(request('resources/read', { uri: 'other://x' })), undefined, 'a URI of no server');
    assert.equal(serverOf(request('tools/list', {})), undefined, 'a merged list');
    // Allowed decisions stay shared, one per server: the same rules for another server name that server.
    const twin = makeSet({ servers: [{ name: 'a', policy: py }, { name: 'b', policy: py }] });
    const runner = authWith('mcp', 'py', 'py:run');
    assert.equal(twin.authorize(call('a__run'), runner), twin.authorize(call('a__run'), runner));
    assert.deepEqual([twin.authorize(call('a__run'), runner).server, twin.authorize(call('b__run'), runner).server], ['a', 'b']);

    const single = compilePolicy({ tools: { run: ['py:run'] } });
    assert.equal(single.authorize(call('run'), authWith('py:run')).server, undefined, 'a single policy names no server');
    assert.equal(single.authorize(call('run'), authWith()).server, undefined);
  });

  test('a refusal by a server’s condition names the server, and so does the refusal built from it', () => {
    const set = compilePolicySet({ servers: [{ name: 'pay', policy: { tools: { refund: { scopes: [], when: '"finance" in claims.groups' } } } }, { name: 'notes' }] });
    const decision = set.authorize(call('pay__refund'), authWith());
    assert.deepEqual([decision.allowed, decision.rule, decision.server], [false, 'servers.pay.tools.refund', 'pay']);
    const refusal = policyRefusal(decision, call('pay__refund'), () => set.insufficientScopeError(decision, authWith(), call('pay__refund')));
    assert.ok(refusal instanceof ConditionDeniedError);
    assert.equal(refusal.server, 'pay');
    const scoped = makeSet().authorize(call('notes__add'), authWith('mcp'));
    const error = policyRefusal(scoped, call('notes__add'), () => makeSet().insufficientScopeError(scoped, authWith('mcp'), call('notes__add')));
    assert.ok(error instanceof InsufficientScopeError);
    assert.equal(error.server, 'notes');
  });

  test('rule functions of a server see the call with the server’s own name', () => {
    const seen: unknown[] = [];
    const set = compilePolicySet({
      gateway: { tools: { '*': (_auth, message) => (seen.push(['gateway', (paramsOf(message) as { name: string }).name]), []) } },
      servers: [{ name: 'notes', policy: { tools: { add: (_auth, message) => (seen.push(['notes', (paramsOf(message) as { name: string }).name]), ['w']) } } }],
    });
    const message = call('notes__add');
    assert.deepEqual(set.requiredScopesFor(message, authWith()), ['w']);
    assert.deepEqual(seen, [['gateway', 'notes__add'], ['notes', 'add']]);
    assert.equal((paramsOf(message) as { name: string }).name, 'notes__add', 'the message itself is not changed');
    const completion = request('completion/complete', { ref: { type: 'ref/prompt', name: 'notes__add' }, argument: { name: 'a', value: '' } });
    const prompts = compilePolicySet({ servers: [{ name: 'notes', policy: { prompts: { add: ['p'] }, methods: { 'completion/complete': (_a, m) => ((paramsOf(m) as { ref: { name: string } }).ref.name === 'add' ? ['c'] : ['wrong']) } } }] });
    assert.deepEqual(prompts.requiredScopesFor(completion, authWith()), ['c', 'p'], 'completion ref/prompt by the local name');
  });

  test('unknown servers, names that are no exposed name, and tools the selection leaves out get endpoint-wide rules only', () => {
    const set = makeSet();
    for (const name of ['nobody__add', 'add', '__add', 'notes__', 'py__debug_dump']) {
      assert.deepEqual(set.requiredScopesFor(call(name), authWith()), ['mcp'], name);
      assert.equal(set.authorize(call(name), authWith('mcp')).allowed, true, name);
    }
    assert.deepEqual(set.requiredScopesFor(call('py__debugger'), authWith()), ['mcp', 'py'], 'selection is by glob: debug_* only');
    assert.deepEqual(set.requiredScopesFor(request('tools/call', { name: 42 }), authWith()), ['mcp']);
  });

  test('routes stay right past the number of names remembered, and for names too long to remember', () => {
    const set = makeSet();
    for (let i = 0; i < 10_050; i++) set.requiredScopesFor(call(`notes__made_up_${i}`), authWith());
    assert.deepEqual(set.requiredScopesFor(call('notes__add'), authWith()), ['mcp', 'notes', 'notes:write']);
    assert.deepEqual(set.requiredScopesFor(call('notes__made_up_3'), authWith()), ['mcp', 'notes', 'notes:read']);
    const long = `py__${'x'.repeat(1000)}`;
    assert.deepEqual(set.requiredScopesFor(call(long), authWith()), ['mcp', 'py']);
    assert.deepEqual(set.requiredScopesFor(call(long), authWith()), ['mcp', 'py']);
    assert.deepEqual(names(set.filterListResult('tools/list', { tools: [{ name: long }, { name: 'py__debug_x' }] }, authWith('mcp', 'py')), 'tools'), [long]);
  });

  test('resource requests are routed by routeResource and decided by the server’s rules', () => {
    const set = makeSet();
    assert.deepEqual(set.requiredScopesFor(request('resources/read', { uri: 'notes://7' }), authWith()), ['mcp', 'notes', 'notes:read']);
    assert.deepEqual(set.requiredScopesFor(request('resources/subscribe', { uri: 'notes://secret' }), authWith()), ['mcp', 'notes', 'notes:admin']);
    assert.deepEqual(set.requiredScopesFor(request('resources/unsubscribe', { uri: 'notes://7' }), authWith()), ['mcp', 'notes', 'notes:read']);
    assert.deepEqual(set.requiredScopesFor(request('resources/read', { uri: 'file:///etc/passwd' }), authWith()), ['mcp', 'admin'], 'endpoint-wide resource rules');
    assert.deepEqual(set.requiredScopesFor(request('resources/read', { uri: 'other://x' }), authWith()), ['mcp'], 'no route: endpoint-wide only');
    const ref = request('completion/complete', { ref: { type: 'ref/resource', uri: 'notes://{id}' }, argument: { name: 'id', value: '' } });
    assert.deepEqual(set.requiredScopesFor(ref, authWith()), ['mcp', 'notes', 'notes:read']);
    const listen = request('subscriptions/listen', { notifications: { resourceSubscriptions: ['notes://7', 'file:///etc/x', 'notes://secret', 'other://y'] } });
    assert.deepEqual(set.requiredScopesFor(listen, authWith()), ['mcp', 'admin', 'notes', 'notes:read', 'notes:admin']);
    const unrouted = compilePolicySet({ servers: [{ name: 'notes', policy: notes }] });
    assert.deepEqual(unrouted.requiredScopesFor(request('resources/read', { uri: 'notes://7' }), authWith()), [], 'without routeResource nothing is routed');
  });

  test('a server sees subscriptions/listen with only its own URIs', () => {
    const seen: unknown[] = [];
    const set = compilePolicySet({
      servers: [{ name: 'notes', policy: { methods: { 'subscriptions/listen': (_a, m) => (seen.push((paramsOf(m) as { notifications: { resourceSubscriptions: unknown } }).notifications.resourceSubscriptions), []) } } }, { name: 'files' }],
      routeResource,
    });
    set.authorize(request('subscriptions/listen', { notifications: { resourceSubscriptions: ['file:///a', 'notes://1', 'notes://2'] } }), authWith());
    assert.deepEqual(seen, [['notes://1', 'notes://2']]);
  });

  test('merged lists keep an item when both the endpoint-wide rules and its server’s let the caller use it', () => {
    const set = makeSet();
    const tools = { tools: ['notes__add', 'notes__list', 'notes__a__b', 'py__run', 'py__debug_dump', 'py__other', 'files__wipe', 'files__read', 'nobody__x', 'plain'].map((name) => ({ name })), nextCursor: 'c' };
    const reader = set.filterListResult('tools/list', tools, authWith('mcp', 'notes', 'notes:read', 'py'));
    assert.deepEqual(names(reader, 'tools'), ['notes__list', 'py__other', 'files__read']);
    assert.equal(reader.nextCursor, 'c');
    const writer = set.filterListResult('tools/list', tools, authWith('mcp', 'notes', 'notes:admin', 'notes:odd', 'py', 'py:run', 'admin'));
    assert.deepEqual(names(writer, 'tools'), ['notes__add', 'notes__list', 'notes__a__b', 'py__run', 'py__other', 'files__wipe', 'files__read'], 'selection drops py__debug_dump for everyone; unknown servers are dropped');
    assert.deepEqual(names(set.filterListResult('tools/list', tools, authWith('notes', 'notes:admin')), 'tools'), [], 'without the endpoint-wide scopes nothing');
    assert.deepEqual(names(set.filterListResult('tools/list', tools, authWith('mcp')), 'tools'), ['files__read'], 'a server’s base scopes hold for its items');

    const prompts = set.filterListResult('prompts/list', { prompts: [{ name: 'notes__summary' }, { name: 'py__p' }, { name: 'x' }] }, authWith('mcp'));
    assert.deepEqual(names(prompts, 'prompts'), ['py__p']);
    const resources = { resources: [{ uri: 'notes://1' }, { uri: 'notes://secret' }, { uri: 'file:///etc/passwd' }, { uri: 'file:///home/a' }, { uri: 'other://z' }] };
    assert.deepEqual(names(set.filterListResult('resources/list', resources, authWith('mcp', 'notes', 'notes:read')), 'resources', 'uri'), ['notes://1', 'file:///home/a']);
    const templates = { resourceTemplates: [{ uriTemplate: 'notes://{id}' }, { uriTemplate: 'file:///{+path}' }, { uriTemplate: 'x://{y}' }] };
    assert.deepEqual(names(set.filterListResult('resources/templates/list', templates, authWith('mcp')), 'resourceTemplates', 'uriTemplate'), ['file:///{+path}']);
  });

  test('a server’s rule for the list method itself holds for its items; hints are those of any filtered list', () => {
    const set = compilePolicySet({ servers: [{ name: 'a', policy: { methods: { 'tools/list': ['a:list'] } } }, { name: 'b' }] });
    const tools = { tools: [{ name: 'a__x' }, { name: 'b__y' }] };
    assert.deepEqual(names(set.filterListResult('tools/list', tools, authWith()), 'tools'), ['b__y']);
    assert.deepEqual(names(set.filterListResult('tools/list', tools, authWith('a:list')), 'tools'), ['a__x', 'b__y']);
    const stateless = set.filterListResult('tools/list', { ...tools, ttlMs: 5 }, authWith(), undefined, '2026-07-28');
    assert.equal(stateless.cacheScope, 'private');
    assert.equal(stateless.ttlMs, 5);
    assert.equal(set.filterListResult('tools/call', tools, authWith()), tools, 'not a list: unchanged');
  });

  test('list rule functions see each item’s call, by exposed name for the endpoint and by own name for the server', () => {
    const seen: string[] = [];
    const set = compilePolicySet({
      gateway: { tools: { '*': (_a, m) => (seen.push(`g:${(paramsOf(m) as { name: string }).name}`), []) } },
      servers: [{ name: 'n', policy: { tools: { '*': (_a, m) => (seen.push(`n:${(paramsOf(m) as { name: string }).name}`), []) } } }],
    });
    set.filterListResult('tools/list', { tools: [{ name: 'n__add' }] }, authWith());
    assert.deepEqual(seen, ['g:n__add', 'n:add']);
  });

  test('listFilterKey exists only when every policy’s list rules are static', () => {
    const set = makeSet();
    const key = set.listFilterKey('tools/list', authWith('mcp', 'notes:admin'));
    assert.equal(typeof key, 'string');
    assert.notEqual(key, set.listFilterKey('tools/list', authWith('mcp', 'notes:write')), 'a server’s hierarchy makes the difference');
    assert.equal(set.listFilterKey('tools/list', authWith('mcp', 'notes:admin')), key);
    assert.equal(set.listFilterKey('tools/call', authWith()), undefined);
    const dynamicServer = makeSet({ servers: [{ name: 'notes', policy: { tools: { add: () => [] } } }] });
    assert.equal(dynamicServer.listFilterKey('tools/list', authWith()), undefined);
    const dynamicGateway = makeSet({ gateway: { tools: { '*': () => [] } } });
    assert.equal(dynamicGateway.listFilterKey('tools/list', authWith()), undefined);
    const single = compilePolicy({ requiredScopes: ['mcp'] });
    const plain = compilePolicySet({ gateway: { requiredScopes: ['mcp'] }, servers: [{ name: 'a' }, { name: 'b', policy: {} }] });
    assert.equal(plain.listFilterKey('tools/list', authWith('mcp')), single.listFilterKey('tools/list', authWith('mcp')), 'servers without rules add nothing');
  });

  test('scopes supported, required scopes, definition and hierarchy are the endpoint-wide policy’s, scopes supported with every server’s', () => {
    const gateway: PolicyDefinition = { requiredScopes: ['mcp'], scopesSupported: ['mcp', 'offline_access'], scopeHierarchy: { big: ['mcp'] } };
    const set = makeSet({ gateway });
    assert.deepEqual(set.scopesSupported, ['mcp', 'notes', 'notes:read', 'notes:write', 'notes:odd', 'notes:admin', 'py', 'py:run']);
    assert.deepEqual(set.requiredScopes, ['mcp']);
    assert.equal(set.definition, gateway);
    assert.deepEqual([...set.expandScopes(['big'])].sort(), ['big', 'mcp']);
    assert.deepEqual([...set.expandScopes(['notes:admin'])], ['notes:admin'], 'a server’s hierarchy is its own');
    assert.equal(set.isListMethod('tools/list'), true);
    assert.deepEqual(makeSet({ gateway: undefined }).definition, {});
  });

  test('tool rate limits by exposed name; a server’s * covers its other tools; the most specific limit applies', () => {
    const set = makeSet({ gateway: { rateLimits: { tools: { '*': '100/min', 'notes__add': '5/min' } } } });
    assert.deepEqual([...set.toolRateLimits.keys()].sort(), ['*', 'notes__add']);
    assert.equal(set.toolRateLimits.get('notes__add')!.text, '5/min', 'the endpoint-wide named limit first');
    const limitOf = (name: string) => set.toolRateLimit!(name)?.limit.text;
    const ruleOf = (name: string) => set.toolRateLimit!(name)?.rule;
    assert.equal(limitOf('py__run'), '1/min', 'the server’s * for a tool it does not name');
    assert.equal(limitOf('py__anything'), '1/min');
    assert.equal(limitOf('notes__add'), '5/min');
    assert.equal(limitOf('notes__list'), '100/min', 'no server limit: the endpoint-wide *');
    assert.equal(limitOf('plain'), '100/min');
    // Counted by the rule: a named tool by its name, the others by the `*` that covers them.
    assert.deepEqual(['py__run', 'py__anything', 'notes__add', 'notes__list', 'plain'].map(ruleOf), ['py__*', 'py__*', 'notes__add', '*', '*']);
    const serverNamed = makeSet({ gateway: {} });
    assert.equal(serverNamed.toolRateLimits.get('notes__add')!.text, '1/min');
    assert.equal(serverNamed.toolRateLimit!('files__x'), undefined);
    const noStar = compilePolicySet({ servers: [{ name: 'notes', policy: notes }] });
    assert.equal(noStar.toolRateLimit, undefined, 'no server *: the map alone, as for one policy');
    assert.deepEqual([...noStar.toolRateLimits.keys()], ['notes__add']);
  });

  test('bad policies and server names fail at once, every problem named by its path', () => {
    assert.throws(
      () =>
        compilePolicySet({
          gateway: { tool: {} } as unknown as PolicyDefinition,
          gatewaySetting: 'MCP_AUTH_POLICY',
          servers: [
            { name: 'notes', policy: { tools: { add: 'w' } } as unknown as PolicyDefinition, source: 'policy file notes.json' },
            { name: 'a__b' },
            { name: 'py' },
            { name: 'py' },
          ],
        }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigurationError);
        assert.deepEqual(
          error.problems.map((p) => p.setting),
          ['MCP_AUTH_POLICY', 'servers.notes.policy.tools.add', 'servers.a__b', 'servers.py'],
        );
        assert.match(error.message, /\(in policy file notes\.json\)/);
        return true;
      },
    );
  });

  test('says whether a caller holds a server\'s own requiredScopes, under its own hierarchy, a spread copy too', () => {
    const set = makeSet();
    assert.equal(mayReachServer(set, 'notes', authWith('mcp')), false);
    assert.equal(mayReachServer(set, 'notes', authWith('notes')), true);
    assert.equal(mayReachServer({ ...set }, 'notes', authWith('mcp')), false, 'a copy made by spreading keeps it');
    const hierarchy = makeSet({ servers: [{ name: 'notes', policy: { ...notes, scopeHierarchy: { 'notes:all': ['notes'] } } }] });
    assert.equal(mayReachServer(hierarchy, 'notes', authWith('notes:all')), true);
    assert.equal(mayReachServer(set, 'py', authWith()), true, 'a server policy without requiredScopes');
    assert.equal(mayReachServer(set, 'files', authWith()), true, 'a server without a policy');
    assert.equal(mayReachServer(set, 'nobody', authWith()), true, 'no such server');
    assert.equal(mayReachServer(compilePolicy({ requiredScopes: ['mcp'] }), 'notes', authWith()), true, 'a single policy');
  });

  test('names a tool or prompt the endpoint does not expose (unknownTarget), and nothing else', () => {
    const set = makeSet();
    assert.equal(set.unknownTarget?.(call('py__debug_dump')), 'tool', 'left out by the selection');
    assert.equal(set.unknownTarget?.(call('nobody__x')), 'tool', 'no such server');
    assert.equal(set.unknownTarget?.(call('plain')), 'tool', 'no server prefix');
    assert.equal(set.unknownTarget?.(call('py__run')), undefined);
    assert.equal(set.unknownTarget?.(request('prompts/get', { name: 'nobody__p' })), 'prompt');
    assert.equal(set.unknownTarget?.(request('prompts/get', { name: 'notes__summary' })), undefined);
    assert.equal(set.unknownTarget?.(request('completion/complete', { ref: { type: 'ref/prompt', name: 'x' } })), 'prompt');
    assert.equal(set.unknownTarget?.(request('resources/read', { uri: 'other://x' })), undefined, 'resources are not named by server');
    assert.equal(compilePolicy({}).unknownTarget, undefined, 'one policy knows no names');
  });
});

