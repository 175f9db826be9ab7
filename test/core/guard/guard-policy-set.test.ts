// A guard under a policy compiled already (a policy set for an endpoint serving several servers): taken in the
// options and by setPolicy, with tokens from a real issuer, and every part derived from the policy following it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { ConfigurationError, InsufficientScopeError, RateLimitedError, RequestRejectedError } from '../../../src/core/kernel/errors.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { compilePolicySet } from '../../../src/core/policy/policy-set.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import { compileToolSelection } from '../../../src/core/policy/tool-selection.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

const call = (name: string, id = 1): JsonRpcMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) as JsonRpcMessage;
const list: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list' } as JsonRpcMessage;
const listAnswer: JsonRpcMessage = {
  jsonrpc: '2.0',
  id: 7,
  result: { tools: ['notes__add', 'notes__read', 'py__run', 'py__debug', 'other__x'].map((name) => ({ name })) },
} as JsonRpcMessage;
const listed = (answer: JsonRpcMessage): string[] => (answer as unknown as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);

function policySet() {
  return compilePolicySet({
    gateway: { requiredScopes: ['mcp'] },
    servers: [
      { name: 'notes', policy: { tools: { add: ['notes:write'], read: ['notes:read'] }, rateLimits: { tools: { '*': '1/min' } } } },
      { name: 'py', policy: { requiredScopes: ['py'] }, selection: compileToolSelection({ exclude: ['debug'] }, 'servers.py.tools') },
    ],
  });
}

describe('a guard under a policy set', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer();
  });
  after(async () => {
    await issuer?.close();
  });

  async function caller(guard: ReturnType<typeof createGuard>, scope: string, sub = 'alice'): Promise<AuthInfo> {
    return await guard.authenticate(`Bearer ${await issuer.sign({ aud: RESOURCE, sub, client_id: 'client-1', scope })}`, '/mcp');
  }

  test('takes the compiled set as its policy: authorization, filtering, metadata and rate limits follow it', async () => {
    const set = policySet();
    const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: set });
    assert.equal(guard.policy, set, 'used as it is, not compiled again');
    assert.deepEqual(guard.metadata.scopes_supported, ['mcp', 'notes:write', 'notes:read', 'py']);

    const reader = await caller(guard, 'mcp notes:read');
    assert.deepEqual(guard.authorize(call('notes__read'), reader, {}).requiredScopes, ['mcp', 'notes:read']);
    assert.throws(() => guard.authorize(call('notes__add'), reader, {}), (error: unknown) => {
      assert.ok(error instanceof InsufficientScopeError);
      assert.match(guard.errorResponse(error, 1).headers['WWW-Authenticate']!, /error="insufficient_scope".*missing notes:write", scope="mcp notes:write[^"]*"/);
      return true;
    });
    // An excluded tool is no 403: it is refused as an unknown tool (200, -32602), reported as target_unknown.
    assert.throws(() => guard.authorize(call('py__debug'), reader, {}), (error: unknown) => {
      assert.ok(error instanceof RequestRejectedError);
      assert.equal(error.reason, 'target_unknown');
      const answer = guard.errorResponse(error, 1);
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['WWW-Authenticate'], undefined);
      assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: py__debug' } });
      return true;
    });
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, reader)), ['notes__read']);
    const all = await caller(guard, 'mcp notes:read notes:write py', 'bob');
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, all)), ['notes__add', 'notes__read', 'py__run']);

    // The notes server's * limit counts each of its tools apart, under its exposed name; py has none.
    assert.equal(typeof guard.checkRateLimit, 'function');
    assert.equal(guard.checkRateLimit!(call('notes__add'), all), undefined);
    assert.throws(() => guard.checkRateLimit!(call('notes__add'), all), RateLimitedError);
    assert.equal(guard.checkRateLimit!(call('notes__read'), all), undefined, 'another tool of the server has its own count');
    assert.equal(guard.checkRateLimit!(call('py__run'), all), undefined);
    assert.equal(guard.checkRateLimit!(call('py__run'), all), undefined, 'no limit for py');
  });

  test('setPolicy puts a compiled set in force, and a definition back, with snapshots kept', async () => {
    const single: PolicyDefinition = { requiredScopes: ['mcp'] };
    const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: single });
    const auth = await caller(guard, 'mcp');
    assert.equal(guard.checkRateLimit, undefined);
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, auth)).length, 5);
    const pinned = guard.snapshot();

    const set = policySet();
    assert.equal(guard.setPolicy(set, { source: 'ignored' }), set);
    assert.equal(guard.policy, set);
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, auth)), []);
    assert.throws(() => guard.authorize(call('py__run'), auth, {}), InsufficientScopeError);
    assert.equal(typeof guard.checkRateLimit, 'function', 'a server * alone turns the rate-limit step on');
    assert.deepEqual(listed(pinned.filterResponse(list, listAnswer, auth)).length, 5, 'a snapshot keeps its policy');

    const compiled = compilePolicy(single);
    assert.equal(guard.setPolicy(compiled), compiled, 'a compiled single policy is taken as it is too');
    assert.equal(guard.checkRateLimit, undefined);
    assert.equal(guard.setPolicy(single).definition, single, 'a definition is compiled as before');
    assert.throws(() => guard.setPolicy({ tool: {} } as unknown as PolicyDefinition), (error: unknown) => error instanceof ConfigurationError && error.setting === 'options.policy');
  });

  test('a spread copy of a compiled policy is still taken as compiled; a plain object never is', () => {
    const set = policySet();
    const copy = { ...set, scopesSupported: ['x'] };
    const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: copy });
    assert.equal(guard.policy, copy);
    assert.deepEqual(guard.metadata.scopes_supported, ['x']);
    // An object shaped like a compiled policy but not built by the library is read as a definition, and refused.
    const { definition: _definition, ...lookalike } = compilePolicy({});
    assert.throws(() => createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: JSON.parse(JSON.stringify(lookalike)) as PolicyDefinition }), ConfigurationError);
  });
});
