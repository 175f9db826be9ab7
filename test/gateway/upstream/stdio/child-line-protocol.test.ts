import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../../../src/core/wire/jsonrpc.js';
import { ChildLineProtocol } from '../../../../src/gateway/upstream/stdio/child-line-protocol.js';
import type { ChildEndReason, ChildLogEvent, RequestSink } from '../../../../src/gateway/upstream/stdio/stdio-child.js';

/** A protocol with no process: what it writes to the child, logs and routes is recorded. */
function harness(onMessage: (message: JsonRpcRequest | JsonRpcNotification) => boolean = () => false) {
  const written: Record<string, unknown>[] = [];
  const logged: ChildLogEvent[] = [];
  const routed: (JsonRpcRequest | JsonRpcNotification)[] = [];
  let answered = 0;
  const protocol = new ChildLineProtocol(
    {
      label: 's1',
      log: (event) => logged.push(event),
      onMessage: (message) => {
        routed.push(message);
        return onMessage(message);
      },
      onAnswered: () => answered++,
    },
    (message) => {
      written.push(message as Record<string, unknown>);
      return true;
    },
  );
  return { protocol, written, logged, routed, answers: () => answered };
}

function sink() {
  const messages: JsonRpcMessage[] = [];
  const responses: JsonRpcResponse[] = [];
  const failures: ChildEndReason[] = [];
  const value: RequestSink = {
    message: (message) => (messages.push(message), true),
    response: (message) => void responses.push(message),
    fail: (reason) => void failures.push(reason),
  };
  return { value, messages, responses, failures };
}

describe('ChildLineProtocol', () => {
  it('gives requests ids unique in the child and restores the client id and progress token in what reaches the sink', () => {
    const { protocol, written, answers } = harness();
    const a = sink();
    const b = sink();
    protocol.request({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 'p' } } }, a.value);
    protocol.request({ jsonrpc: '2.0', id: 7, method: 'tools/list' }, b.value);
    assert.deepEqual(written, [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    assert.equal(protocol.pending, 2);
    protocol.readLine('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}');
    assert.deepEqual(a.messages, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } }]);
    protocol.readLine('[{"jsonrpc":"2.0","id":2,"result":{"tools":[]}},{"jsonrpc":"2.0","id":1,"result":{}}]');
    assert.deepEqual(b.responses, [{ jsonrpc: '2.0', id: 7, result: { tools: [] } }]);
    assert.deepEqual(a.responses, [{ jsonrpc: '2.0', id: 7, result: {} }]);
    assert.equal(protocol.pending, 0);
    assert.equal(answers(), 1, 'onAnswered is told once');
  });

  it('tells the child of an abandoned request once, and drops its late answer', () => {
    const { protocol, written } = harness();
    const a = sink();
    const pending = protocol.request({ jsonrpc: '2.0', id: 'q', method: 'tools/call' }, a.value);
    pending.abandon(true, 'the client went away');
    pending.abandon(true, 'again');
    assert.deepEqual(written.slice(1), [{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'the client went away' } }]);
    protocol.readLine('{"jsonrpc":"2.0","id":1,"result":{}}');
    assert.deepEqual(a.responses, []);
  });

  it("rewrites a client's cancellation to the child's id, and drops one naming nothing in flight", () => {
    const { protocol, written } = harness();
    protocol.request({ jsonrpc: '2.0', id: 5, method: 'tools/call' }, sink().value);
    assert.equal(protocol.notify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }), true);
    assert.equal(protocol.notify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 6 } }), true);
    assert.deepEqual(written.slice(1), [{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }]);
  });

  it("gives the child's requests gateway ids, answers one no client can carry, and sends a client's answer back with the child's id", () => {
    let deliver = true;
    const { protocol, written, routed } = harness(() => deliver);
    protocol.readLine('{"jsonrpc":"2.0","id":"c1","method":"sampling/createMessage"}');
    assert.deepEqual(routed, [{ jsonrpc: '2.0', id: 1, method: 'sampling/createMessage' }]);
    assert.equal(protocol.answer({ jsonrpc: '2.0', id: 1, result: { ok: true } }), true);
    assert.equal(protocol.answer({ jsonrpc: '2.0', id: 1, result: { ok: true } }), false, 'answered once');
    deliver = false;
    protocol.readLine('{"jsonrpc":"2.0","id":"c2","method":"roots/list"}');
    assert.deepEqual(written, [
      { jsonrpc: '2.0', id: 'c1', result: { ok: true } },
      { jsonrpc: '2.0', id: 'c2', error: { code: -32603, message: 'Internal error: no client stream is open to carry this request' } },
    ]);
  });

  it('logs lines that are not JSON-RPC and responses that match nothing, never routing them', () => {
    const { protocol, logged, routed } = harness();
    protocol.readLine('   ');
    protocol.readLine('hello');
    protocol.readLine('42');
    protocol.readLine('{"jsonrpc":"2.0","id":99,"result":{}}');
    assert.deepEqual(
      logged.map((event) => [event.event, event.session, event.line]),
      [
        ['upstream_stdout_not_json', 's1', 'hello'],
        ['upstream_stdout_not_json', 's1', '42'],
        ['upstream_unmatched_response', 's1', '{"jsonrpc":"2.0","id":99,"result":{}}'],
      ],
    );
    assert.deepEqual(routed, []);
  });

  it('fails every request in flight when the child ends', () => {
    const { protocol } = harness();
    const a = sink();
    const b = sink();
    protocol.request({ jsonrpc: '2.0', id: 1, method: 'x' }, a.value);
    protocol.request({ jsonrpc: '2.0', id: 2, method: 'y' }, b.value).abandon(false);
    protocol.failAll('upstream_exited');
    assert.deepEqual(a.failures, ['upstream_exited']);
    assert.deepEqual(b.failures, [], 'an abandoned request has no sink left');
    assert.equal(protocol.pending, 0);
  });
});
