import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
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
