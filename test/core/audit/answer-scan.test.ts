// An answer chunk read in one pass says exactly what three substring searches say: whether it names a message and
// whether that message may be an error, for short chunks (the loop) and long ones (native searches) alike.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAYBE_AN_ERROR, NO_MESSAGE, NOT_AN_ERROR, scanAnswerBytes } from '../../../src/core/audit/answer-scan.js';

/** What the three searches say of `text`. */
function bySearches(text: string): number {
  if (!text.includes('"jsonrpc"')) return NO_MESSAGE;
  return text.includes('"error"') || text.includes('\\u') ? MAYBE_AN_ERROR : NOT_AN_ERROR;
}

const PIECES = ['"jsonrpc"', '"json', 'rpc"', '"error"', '"err', 'or"', '\\u', '\\', 'u', '"', ':', '{', 'x', 'é', '"jsonrpc"error"', 'data: '];

describe('answer chunk scan', () => {
  test('known answers', () => {
    assert.equal(scanAnswerBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')), NOT_AN_ERROR);
    assert.equal(scanAnswerBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}')), MAYBE_AN_ERROR);
    assert.equal(scanAnswerBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"\\u0065rror":{"code":1}}')), MAYBE_AN_ERROR, 'a key with escapes');
    assert.equal(scanAnswerBytes(Buffer.from(': ping\n\n')), NO_MESSAGE, 'an event stream opening with no message');
    assert.equal(scanAnswerBytes(Buffer.from('"error" and \\u but no message')), NO_MESSAGE);
    assert.equal(scanAnswerBytes(Buffer.from('"jsonrpc"')), NOT_AN_ERROR, 'a needle at the very end');
    assert.equal(scanAnswerBytes(Buffer.from('"jsonrpc"\\')), NOT_AN_ERROR, 'a backslash at the very end');
  });

  test('random chunks, short and long, agree with the searches', () => {
    let state = 3;
    const next = (n: number) => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    for (let round = 0; round < 5_000; round++) {
      const pieces = next(10) === 0 ? 600 + next(400) : next(30);
      let text = '';
      for (let i = 0; i < pieces; i++) text += PIECES[next(PIECES.length)];
      assert.equal(scanAnswerBytes(Buffer.from(text)), bySearches(text), text);
    }
  });
});
