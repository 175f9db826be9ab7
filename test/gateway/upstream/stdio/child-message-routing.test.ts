import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonRpcMessage } from '../../../../src/core/wire/jsonrpc.js';
import { routeChildMessage } from '../../../../src/gateway/upstream/stdio/child-message-routing.js';
import type { Exchange } from '../../../../src/gateway/upstream/stdio/stdio-exchange.js';

const V2025 = '2025-11-25';

function exchange(name: string, got: string[], options: { sse?: boolean; connected?: boolean; isGet?: boolean } = {}): Exchange {
  return {
    res: undefined as never,
    isGet: options.isGet ?? false,
    sse: options.sse ?? true,
    protocolVersion: V2025,
    connected: () => options.connected ?? true,
    push: (_message: JsonRpcMessage) => (got.push(name), true),
    end: () => {},
  };
}

const notification = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: 'x' } };
const request = { jsonrpc: '2.0' as const, id: 1, method: 'sampling/createMessage' };

describe('routeChildMessage', () => {
  it('prefers the one waiting POST, then the GET stream, then the newest streaming POST', () => {
    const got: string[] = [];
    const a = exchange('a', got);
    assert.equal(routeChildMessage({ waiting: new Set([a]), get: exchange('get', got, { isGet: true }) }, notification), true);
    const b = exchange('b', got);
    assert.equal(routeChildMessage({ waiting: new Set([a, b]), get: undefined }, notification), true);
    assert.equal(routeChildMessage({ waiting: new Set([a, b]), get: exchange('get', got, { isGet: true }) }, notification), true);
    assert.deepEqual(got, ['a', 'b', 'get']);
  });

  it('gives a stream whose client is away a notification only, and refuses a request no connected stream can carry', () => {
    const got: string[] = [];
    const away = exchange('away', got, { connected: false });
    assert.equal(routeChildMessage({ waiting: new Set([away]), get: undefined }, request), false);
    assert.equal(routeChildMessage({ waiting: new Set([away]), get: undefined }, notification), true);
    assert.equal(routeChildMessage({ waiting: new Set(), get: undefined }, notification), false);
    assert.deepEqual(got, ['away']);
  });

  it('skips POSTs whose client accepts JSON only when several wait', () => {
    const got: string[] = [];
    const json = exchange('json', got, { sse: false });
    const other = exchange('other', got, { sse: false });
    assert.equal(routeChildMessage({ waiting: new Set([json, other]), get: undefined }, notification), false);
    assert.deepEqual(got, []);
  });
});
