// guard.setPolicy: a new policy in force at once for everything derived from it (authorization, filtering, the
// metadata's scopes_supported, the bare challenge's scope, per-tool rate limits), an invalid one refused with the
// policy in force kept, and snapshots that keep a request under the policy it started with.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { ConfigurationError, InsufficientScopeError, MissingTokenError, RateLimitedError } from '../../../src/core/kernel/errors.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const ISSUER = 'https://auth.example.com';

const before: PolicyDefinition = { requiredScopes: ['mcp'], tools: { notes_read: ['notes:read'], notes_write: ['notes:admin'] } };
const after: PolicyDefinition = {
  requiredScopes: ['mcp:basic'],
  tools: { notes_read: ['notes:admin'], notes_write: ['notes:write'] },
  rateLimits: { tools: { notes_write: '1/min' } },
};

function authWith(scopes: string[]): AuthInfo {
  return { token: 'not-a-real-token', clientId: 'client-1', scopes, extra: { sub: 'alice', iss: ISSUER, claims: {}, tokenType: 'jwt' } };
}
const call = (name: string, id = 1): JsonRpcMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) as JsonRpcMessage;
const list: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list' } as JsonRpcMessage;
const listAnswer: JsonRpcMessage = { jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'notes_read' }, { name: 'notes_write' }] } } as JsonRpcMessage;
const listed = (answer: JsonRpcMessage): string[] => (answer as unknown as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);

describe('guard.setPolicy', () => {
  test('authorization and list filtering follow the new policy at once; a snapshot taken before keeps the old one', () => {
    const guard = createGuard({ issuer: ISSUER, resource: RESOURCE, policy: before });
    const caller = authWith(['mcp', 'mcp:basic', 'notes:read', 'notes:write']);
    const pinned = guard.snapshot();
    assert.equal(guard.snapshot(), pinned, 'the same snapshot until the policy changes');
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, caller)), ['notes_read']);
    assert.throws(() => guard.authorize(call('notes_write'), caller, {}), InsufficientScopeError);

    const compiled = guard.setPolicy(after);
    assert.equal(guard.policy, compiled);
    assert.equal(guard.policy.definition, after);
    assert.notEqual(guard.snapshot(), pinned);
    assert.deepEqual(guard.authorize(call('notes_write'), caller, {}).requiredScopes, ['mcp:basic', 'notes:write']);
    assert.throws(() => guard.authorize(call('notes_read'), caller, {}), (error: unknown) => {
      assert.ok(error instanceof InsufficientScopeError);
      // The step-up challenge names the new policy's scopes.
      assert.match(guard.errorResponse(error, 1).headers['WWW-Authenticate']!, /error="insufficient_scope", error_description="[^"]*", scope="[^"]*notes:admin/);
      return true;
    });
    assert.deepEqual(listed(guard.filterResponse(list, listAnswer, caller)), ['notes_write']);

    // The request that took its snapshot before the change finishes under the old policy.
    assert.throws(() => pinned.authorize(call('notes_write'), caller, {}), InsufficientScopeError);
    assert.deepEqual(listed(pinned.filterResponse(list, listAnswer, caller)), ['notes_read']);
    assert.equal(pinned.policy.definition, before);
  });

  test("the metadata's scopes_supported and the bare 401 challenge's scope follow the policy", () => {
    const guard = createGuard({ issuer: ISSUER, resource: RESOURCE, policy: before });
    assert.deepEqual(guard.metadata.scopes_supported, ['mcp', 'notes:read', 'notes:admin']);
    assert.match(guard.errorResponse(new MissingTokenError()).headers['WWW-Authenticate']!, /^Bearer scope="mcp", resource_metadata=/);
    guard.setPolicy(after);
    assert.deepEqual(guard.metadata.scopes_supported, ['mcp:basic', 'notes:admin', 'notes:write']);
    assert.deepEqual(JSON.parse(guard.metadataJson).scopes_supported, ['mcp:basic', 'notes:admin', 'notes:write']);
    assert.match(guard.errorResponse(new MissingTokenError()).headers['WWW-Authenticate']!, /^Bearer scope="mcp:basic", resource_metadata=/);
  });

  test('per-tool rate limits come and go with the policy', () => {
    const guard = createGuard({ issuer: ISSUER, resource: RESOURCE, policy: before });
    const caller = authWith(['mcp:basic', 'notes:write']);
    assert.equal(guard.checkRateLimit, undefined, 'no limit: no step at all');
    guard.setPolicy(after);
    assert.equal(typeof guard.checkRateLimit, 'function');
    assert.equal(guard.checkRateLimit!(call('notes_write'), caller), undefined);
    assert.throws(() => guard.checkRateLimit!(call('notes_write'), caller), RateLimitedError);
    guard.setPolicy(before);
    assert.equal(guard.checkRateLimit, undefined);
  });

  test('a caller-wide limit keeps its counts across a policy change', () => {
    const guard = createGuard({ issuer: ISSUER, resource: RESOURCE, policy: before, rateLimit: '1/min' });
    const caller = authWith(['mcp']);
    assert.equal(guard.checkRateLimit!(call('notes_read'), caller), undefined);
    guard.setPolicy({ requiredScopes: ['mcp'] });
    assert.throws(() => guard.checkRateLimit!(call('notes_read'), caller), RateLimitedError, 'a reload is no way around a limit');
  });

  test('an invalid definition throws the error creation would, named as the policy was, and changes nothing', () => {
    const guard = createGuard({ issuer: ISSUER, resource: RESOURCE, policy: before });
    const inForce = guard.policy;
    const pinned = guard.snapshot();
    for (const [bad, setting, message] of [
      [{ tool: {} }, 'options.policy', /unknown key "tool"/],
      [{ tools: { notes_read: 'notes:read' } }, 'options.policy.tools.notes_read', /expected an array of scope strings/],
      [{ requiredScopes: ['a b'] }, 'options.policy.requiredScopes[0]', /is not a valid scope/],
    ] as const) {
      assert.throws(
        () => guard.setPolicy(bad as unknown as PolicyDefinition, { source: 'policy file p.json' }),
        (error: unknown) => error instanceof ConfigurationError && error.setting === setting && message.test(error.message) && error.message.endsWith('(in policy file p.json)'),
      );
      assert.equal(guard.policy, inForce);
      assert.equal(guard.snapshot(), pinned);
    }
    // Compiled at creation the same way, under the same name.
    assert.throws(() => createGuard({ issuer: ISSUER, resource: RESOURCE, policy: { tool: {} } as unknown as PolicyDefinition }), (error: unknown) => error instanceof ConfigurationError && error.setting === 'options.policy');
  });

  test('a guard built from the environment names its policy errors MCP_AUTH_POLICY, on a reload too', () => {
    const guard = createGuard(loadOptionsFromEnv({ MCP_AUTH_ISSUER: ISSUER, MCP_AUTH_RESOURCE: RESOURCE }), { policy: 'MCP_AUTH_POLICY' });
    assert.throws(() => guard.setPolicy({ tool: {} } as unknown as PolicyDefinition), (error: unknown) => error instanceof ConfigurationError && error.setting === 'MCP_AUTH_POLICY');
  });
});
