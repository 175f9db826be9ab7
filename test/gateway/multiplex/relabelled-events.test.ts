import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ownResponseOnly } from '../../../src/gateway/multiplex/forward-to-member.js';
import { EventIdVector, EventRelabeller } from '../../../src/gateway/multiplex/relabelled-events.js';
import { exposeRequestId, readRequestId } from '../../../src/gateway/multiplex/server-request-ids.js';

describe('ids of server requests', () => {
  it('name the server and read back to its own id, numbers and strings alike', () => {
    assert.equal(exposeRequestId('notes', 7), 'notes__n7');
    assert.equal(exposeRequestId('notes', 'a__b'), 'notes__sa__b');
    assert.deepEqual(readRequestId('notes__n7'), { server: 'notes', id: 7 });
    assert.deepEqual(readRequestId('notes__sa__b'), { server: 'notes', id: 'a__b' });
    for (const other of [7, null, 'notes', '__n7', 'notes__x7', 'notes__n']) assert.equal(readRequestId(other), undefined, String(other));
  });
});

describe('relabelled event streams', () => {
  it('gives each event a vector id of every server\'s last id, and server requests ids naming the server', () => {
    const ids = new EventIdVector();
    const a = new EventRelabeller('a', ids);
    const b = new EventRelabeller('b', ids);
    const first = a.push(Buffer.from('id: 1\nevent: message\ndata: {"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}\n\n'))!;
    assert.match(first, /"id":"a__n5"/);
    const second = b.push(Buffer.from('id: x9\r\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\r\n\r\n'))!;
    const vector = /^id: (.+)$/m.exec(second)![1]!;
    assert.deepEqual(Object.fromEntries(EventIdVector.read(vector, new Set(['a', 'b']))), { a: '1', b: 'x9' });
    // Unknown servers and junk read as nothing to resume.
    assert.equal(EventIdVector.read('junk', new Set(['a'])).size, 0);
    assert.deepEqual([...EventIdVector.read(vector, new Set(['a']))], [['a', '1']]);
  });

  it('keeps only the POST\'s own response (ownResponseOnly), in a batch too, and a data field over lines stays whole', () => {
    const relabeller = new EventRelabeller('s', new EventIdVector(), ownResponseOnly(2));
    const response = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [] } });
    const note = '{"jsonrpc":"2.0","method":"notifications/progress","params":{}}';
    assert.equal(relabeller.push(Buffer.from(`data: ${response(3)}\n\ndata: ${response('2')}\n\ndata: {"jsonrpc":"2.0",\ndata: "id":9,"error":{"code":1,"message":"x"}}\n\n`)), '');
    assert.equal(relabeller.push(Buffer.from(`data: [${response(4)},${note}]\n\n`)), `event: message\ndata: [${note}]\n\n`);
    assert.equal(relabeller.push(Buffer.from(`data: ${note}\n\ndata: ${response(2)}\n\n`)), `event: message\ndata: ${note}\n\nevent: message\ndata: ${response(2)}\n\n`);
    assert.equal(new EventRelabeller('s', new EventIdVector(), ownResponseOnly(null)).push(Buffer.from(`data: ${response(2)}\n\n`)), '', 'a notification\'s POST has no response');
    assert.equal(relabeller.push(Buffer.from('data: not\ndata: json\n\n')), 'event: message\ndata: not\ndata: json\n\n');
  });

  it('holds an event split across chunks, a CRLF split included, until it is complete', () => {
    const relabeller = new EventRelabeller('s', new EventIdVector());
    assert.equal(relabeller.push(Buffer.from('id: 1\r')), '');
    assert.equal(relabeller.push(Buffer.from('\ndata: {"jsonrpc":"2.0","method":"x"}\r')), '');
    const out = relabeller.push(Buffer.from('\n\r\n'))!;
    assert.match(out, /data: \{"jsonrpc":"2.0","method":"x"\}\n\n$/);
  });

  it('drops what keep refuses, and passes a priming event with its id relabelled', () => {
    const relabeller = new EventRelabeller('s', new EventIdVector(), (message) => message.method !== 'drop');
    assert.equal(relabeller.push(Buffer.from('data: {"method":"drop"}\n\n')), '');
    assert.match(relabeller.push(Buffer.from('id: 3\ndata: \n\n'))!, /^id: \S+\ndata: \n\n$/);
  });
});
