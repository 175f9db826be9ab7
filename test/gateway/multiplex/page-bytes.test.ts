import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pageBytesOf, samePage } from '../../../src/gateway/multiplex/page-bytes.js';

const page = (id: string, rest = '"result":{"tools":[{"name":"a"}]}'): ReturnType<typeof pageBytesOf> => pageBytesOf(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},${rest}}`), JSON.stringify(id));

test('two answers to the same page compare equal whatever ids the requests had, even of other lengths', () => {
  assert.equal(samePage(page('gw-1'), page('gw-1234')), true);
  assert.equal(samePage(page('gw-99'), page('gw-7')), true);
});

test('a page that differs anywhere but in the id is another page', () => {
  assert.equal(samePage(page('gw-1'), page('gw-2', '"result":{"tools":[{"name":"b"}]}')), false);
  assert.equal(samePage(page('gw-1'), page('gw-2', '"result":{"tools":[{"name":"a"}],"nextCursor":"x"}')), false);
  // The same bytes around an id found at another place are not the same answer.
  const moved = pageBytesOf(Buffer.from('{"jsonrpc":"2.0","result":{"tools":[{"name":"a"}]},"id":"gw-3"}'), '"gw-3"');
  assert.equal(samePage(page('gw-1'), moved), false);
});

test('an answer without the id (an error, a body from elsewhere) is compared whole', () => {
  const a = pageBytesOf(Buffer.from('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}'), '"gw-1"');
  const b = pageBytesOf(Buffer.from('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}'), '"gw-2"');
  assert.equal(a.idAt, -1);
  assert.equal(samePage(a, b), true);
  assert.equal(samePage(a, page('gw-1')), false);
});

test('the id is found in bytes, with multi-byte text before it', () => {
  const p = pageBytesOf(Buffer.from('{"note":"é","id":"gw-5","result":{}}'), '"gw-5"');
  assert.equal(p.bytes.subarray(p.idAt, p.idAt + p.idLength).toString(), '"gw-5"');
});
