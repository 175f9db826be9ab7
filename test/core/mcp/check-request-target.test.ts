import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkRequestTarget } from '../../../src/core/mcp/check-request-target.js';
import { RequestRejectedError } from '../../../src/core/kernel/errors.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

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

  it('refuses a resource URI that is not spelled in its resolved form, and names that form', () => {
    const cases: ReadonlyArray<readonly [sent: string, resolved: string]> = [
      ['DOCS://private/plan', 'docs://private/plan'], // scheme case
      ['docs://private/x/../plan', 'docs://private/plan'], // dot segments
      ['docs://private/./plan', 'docs://private/plan'],
      ['docs://private/%2e%2E/plan', 'docs://private/plan'], // encoded dot segments
      ['https://example.com:443/doc', 'https://example.com/doc'], // default port
      ['https://EXAMPLE.com/doc', 'https://example.com/doc'], // host case
      ['https://example.com', 'https://example.com/'], // empty path of a special scheme
      ['docs://private/%70lan', 'docs://private/plan'], // an unreserved character percent-encoded
      ['docs://private/caf%c3%a9', 'docs://private/caf%C3%A9'], // lower-case hexadecimal digits
      ['notes://x/café', 'notes://x/caf%C3%A9'], // raw non-ASCII
      ['notes://x/my note', 'notes://x/my%20note'],
    ];
    for (const [sent, resolved] of cases) {
      for (const method of ['resources/read', 'resources/subscribe']) {
        assertInvalidParams(request(method, { uri: sent }), new RegExp(`needs params\\.uri in its resolved form, "${resolved.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"$`));
      }
      checkRequestTarget(request('resources/read', { uri: resolved }));
    }
    // Reserved characters keep their escapes: a%2Fb is another URI than a/b (RFC 3986 §2.2).
    checkRequestTarget(request('resources/read', { uri: 'docs://private/a%2Fb' }));
    // A non-special scheme's host keeps its case, as WHATWG URL and the MCP SDKs keep it.
    checkRequestTarget(request('resources/read', { uri: 'notes://Alice/1' }));
  });

  it('checks every URI subscriptions/listen names', () => {
    const listen = (resourceSubscriptions: unknown) => request('subscriptions/listen', { notifications: { toolsListChanged: true, resourceSubscriptions } });
    checkRequestTarget(listen(['docs://private/plan', 'notes://x/1']));
    checkRequestTarget(request('subscriptions/listen', { notifications: { toolsListChanged: true } }));
    assertInvalidParams(listen(['docs://private/plan', 'DOCS://private/plan']), /resourceSubscriptions entries in its resolved form, "docs:\/\/private\/plan"/);
    for (const bad of ['docs://private/plan', [42], [''], null, { 0: 'docs://x' }]) {
      assertInvalidParams(listen(bad), /resourceSubscriptions to be an array of URIs/);
    }
    assertInvalidParams(listen([' docs://private/plan']), /entries to be an absolute URI/);
  });

  it('checks the prompt name and the resource URI or template a completion refers to', () => {
    const complete = (ref: unknown) => request('completion/complete', { ref, argument: { name: 'a', value: '' } });
    checkRequestTarget(complete({ type: 'ref/prompt', name: 'summary' }));
    checkRequestTarget(complete({ type: 'ref/resource', uri: 'docs://private/{id}' }));
    checkRequestTarget(complete({ type: 'ref/resource', uri: 'file:///{+path}' }));
    checkRequestTarget(complete({ type: 'ref/resource', uri: 'docs://private/plan' }));
    for (const name of [42, '', undefined]) assertInvalidParams(complete({ type: 'ref/prompt', name }), /non-empty string params\.ref\.name/);
    for (const uri of [42, '', undefined]) assertInvalidParams(complete({ type: 'ref/resource', uri }), /non-empty string params\.ref\.uri/);
    assertInvalidParams(complete({ type: 'ref/resource', uri: 'DOCS://private/{id}' }), /params\.ref\.uri in its resolved form, "docs:\/\/private\/\{id\}"/);
    assertInvalidParams(complete({ type: 'ref/resource', uri: 'docs://x/{a}/../{b}' }), /params\.ref\.uri to be an absolute URI template/);
    assertInvalidParams(complete({ type: 'ref/resource', uri: 'DOCS://private/plan' }), /params\.ref\.uri in its resolved form, "docs:\/\/private\/plan"/);
  });

  it('never normalizes a tool or prompt name: look-alikes, other cases and NFD forms pass as the names they are', () => {
    for (const name of ['Add', ' add', 'add ', 'ａｄｄ', 'café'.normalize('NFD'), 'd\u0435lete']) {
      checkRequestTarget(request('tools/call', { name }));
      checkRequestTarget(request('prompts/get', { name }));
    }
  });

  it('leaves other methods, notifications and responses alone', () => {
    checkRequestTarget(request('tools/list', {}));
    checkRequestTarget({ jsonrpc: '2.0', method: 'notifications/initialized' });
    checkRequestTarget({ jsonrpc: '2.0', id: 1, result: {} });
  });
});
