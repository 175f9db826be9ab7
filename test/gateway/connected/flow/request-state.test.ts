// The gateway's requestState: bound to the caller, the request and an expiry, integrity-protected and one-time; a
// state that is not the gateway's is recognised as the upstream's.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import type { JsonRpcRequest } from '../../../../src/core/wire/jsonrpc.js';
import { createRequestStates, isGatewayRequestState, REQUEST_STATE_PREFIX } from '../../../../src/gateway/connected/flow/request-state.js';

const alice: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://id.example', sub: 'alice', claims: {}, tokenType: 'jwt' } };
const bob: AuthInfo = { ...alice, extra: { ...alice.extra, sub: 'bob' } };
const call = (args: Record<string, unknown> = { title: 'a', body: 'b' }, name = 'notes_add'): JsonRpcRequest => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

function codec(now = () => Date.now(), secrets = [randomBytes(32)]) {
  return createRequestStates({ secrets, now });
}

describe('request state', () => {
  it('verifies once for the same caller and request, then is refused as replayed', async () => {
    const states = codec();
    const state = states.mint({ auth: alice, message: call(), server: 'notes' });
    assert.ok(state.startsWith(REQUEST_STATE_PREFIX));
    assert.ok(!state.includes('alice'), 'no subject in the state');
    assert.deepEqual(await states.verify(state, { ...call(), id: 2 }, alice, 'notes'), {});
    assert.deepEqual(await states.verify(state, call(), alice, 'notes'), { refused: 'replayed' });
  });

  it('matches arguments whatever their key order, and refuses other arguments, another tool or another server', async () => {
    const states = codec();
    const mint = () => states.mint({ auth: alice, message: call({ title: 'a', body: 'b' }), server: 'notes' });
    assert.deepEqual(await states.verify(mint(), call({ body: 'b', title: 'a' }), alice, 'notes'), {});
    assert.deepEqual(await states.verify(mint(), call({ title: 'a', body: 'other' }), alice, 'notes'), { refused: 'other_request' });
    assert.deepEqual(await states.verify(mint(), call({ title: 'a', body: 'b' }, 'notes_delete'), alice, 'notes'), { refused: 'other_request' });
    assert.deepEqual(await states.verify(mint(), call(), alice, 'mail'), { refused: 'other_request' });
    assert.deepEqual(await states.verify(mint(), { ...call(), method: 'prompts/get' }, alice, 'notes'), { refused: 'other_request' });
  });

  it('refuses another caller, and a refused state keeps its nonce for its own caller', async () => {
    const states = codec();
    const state = states.mint({ auth: alice, message: call(), server: '' });
    assert.deepEqual(await states.verify(state, call(), bob, ''), { refused: 'other_caller' });
    assert.deepEqual(await states.verify(state, call(), alice, ''), {});
  });

  it('refuses an expired state', async () => {
    let now = 1_000_000;
    const states = codec(() => now);
    const state = states.mint({ auth: alice, message: call(), server: '' });
    now += 600_000;
    assert.deepEqual(await states.verify(state, call(), alice, ''), { refused: 'expired' });
  });

  it('refuses a tampered payload, a forged MAC, another key and a malformed state', async () => {
    const states = codec();
    const state = states.mint({ auth: alice, message: call(), server: '' });
    const [head, mac] = [state.slice(0, state.lastIndexOf('.')), state.slice(state.lastIndexOf('.') + 1)];
    const payload = JSON.parse(Buffer.from(head.slice(REQUEST_STATE_PREFIX.length), 'base64url').toString()) as Record<string, unknown>;
    const tampered = `${REQUEST_STATE_PREFIX}${Buffer.from(JSON.stringify({ ...payload, x: Date.now() + 86_400_000 })).toString('base64url')}.${mac}`;
    assert.deepEqual(await states.verify(tampered, call(), alice, ''), { refused: 'forged' });
    const bytes = Buffer.from(mac, 'base64url');
    bytes[0] = bytes[0]! ^ 1;
    const flipped = `${head}.${bytes.toString('base64url')}`;
    assert.deepEqual(await states.verify(flipped, call(), alice, ''), { refused: 'forged' });
    assert.deepEqual(await codec().verify(state, call(), alice, ''), { refused: 'forged' });
    assert.deepEqual(await states.verify(`${REQUEST_STATE_PREFIX}nodot`, call(), alice, ''), { refused: 'malformed' });
    assert.deepEqual(await states.verify(`${REQUEST_STATE_PREFIX}${'a'.repeat(20_000)}.x`, call(), alice, ''), { refused: 'malformed' });
  });

  it('verifies with an older key after rotation, and carries a step-up scope and the upstream state', async () => {
    const [old, next] = [randomBytes(32), randomBytes(32)];
    const state = codec(undefined, [old]).mint({ auth: alice, message: call(), server: '', stepUpScope: 'notes:write', upstreamState: 'their-state' });
    assert.deepEqual(await codec(undefined, [next, old]).verify(state, call(), alice, ''), { stepUpScope: 'notes:write', upstreamState: 'their-state' });
  });

  it('tells the gateway state from the upstream one', () => {
    assert.equal(isGatewayRequestState(`${REQUEST_STATE_PREFIX}x.y`), true);
    assert.equal(isGatewayRequestState('opaque-1'), false);
    assert.equal(isGatewayRequestState(undefined), false);
    assert.throws(() => createRequestStates({ secrets: [randomBytes(16)] }), RangeError);
  });
});
