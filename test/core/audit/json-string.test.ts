// A string written as JSON without JSON.stringify when it needs no escaping is exactly what JSON.stringify writes,
// whatever it holds: quotes, backslashes, every control character, DEL, U+2028, lone and paired surrogates.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jsonString } from '../../../src/core/audit/json-string.js';

describe('json string', () => {
  test('every code unit alone, and in the middle of text, is written as JSON.stringify writes it', () => {
    for (let unit = 0; unit <= 0xffff; unit++) {
      const c = String.fromCharCode(unit);
      assert.equal(jsonString(c), JSON.stringify(c));
      assert.equal(jsonString(`a${c}b`), JSON.stringify(`a${c}b`));
    }
  });

  test('random strings of the characters that matter are written as JSON.stringify writes them', () => {
    const pieces = ['a', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '😀', '\ud800', '\udc00', 'https://issuer.example.com/'];
    let state = 5;
    const next = (n: number) => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    for (let round = 0; round < 5_000; round++) {
      let text = '';
      for (let i = next(12); i > 0; i--) text += pieces[next(pieces.length)];
      assert.equal(jsonString(text), JSON.stringify(text));
    }
    assert.equal(jsonString('tools/call'), '"tools/call"');
  });
});
