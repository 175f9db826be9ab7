import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkRequestTarget } from '../../src/core/check-request-target.js';
import { RequestRejectedError } from '../../src/core/errors.js';
import type { JsonRpcMessage } from '../../src/core/jsonrpc.js';

const request = (method: string, params: Record<string, unknown>): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method, params });

function assertInvalidParams(message: JsonRpcMessage, text: RegExp): void {
  assert.throws(
    () => checkRequestTarget(message),
    (e: unknown) => e instanceof RequestRejectedError && e.status === 400 && e.jsonRpcCode === -32602 && text.test(e.message),
  );
}

describe('checkRequestTarget', () => {
  it('accepts string names and absolute URIs', () => {
    checkRequestTarget(request('tools/call', { name: 'echo' }));
    checkRequestTarget(request('prompts/get', { name: 'summary' }));
    checkRequestTarget(request('resources/read', { uri: 'notes://alice/1' }));
    checkRequestTarget(request('resources/subscribe', { uri: 'https://example.com/doc' }));
  });

  it('refuses a tool or prompt name that is not a non-empty string', () => {
    for (const name of [['delete_note'], 42, null, '', { toString: 'x' }, undefined]) {
      assertInvalidParams(request('tools/call', { name }), /tools\/call needs a non-empty string params\.name/);
    }
    assertInvalidParams(request('prompts/get', {}), /prompts\/get needs a non-empty string params\.name/);
  });

  it('refuses a resource URI that does not parse or carries stray whitespace', () => {
    for (const uri of [' notes://host/secret', 'notes://host/secret ', 'notes://host/sec\tret', 'notes://host/a\nb', 'not a uri', 'relative/path']) {
      assertInvalidParams(request('resources/read', { uri }), /params\.uri to be an absolute URI/);
    }
    assertInvalidParams(request('resources/unsubscribe', { uri: ['notes://x'] }), /non-empty string params\.uri/);
  });

  it('leaves other methods, notifications and responses alone', () => {
    checkRequestTarget(request('tools/list', {}));
    checkRequestTarget({ jsonrpc: '2.0', method: 'notifications/initialized' });
    checkRequestTarget({ jsonrpc: '2.0', id: 1, result: {} });
  });
});
