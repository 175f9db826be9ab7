import assert from 'node:assert/strict';
import { test } from 'node:test';
import { estimateIdentityBytes } from '../../../src/core/kernel/identity-size.js';

test('counts what V8 keeps per shape, not per JSON character', () => {
  const base = estimateIdentityBytes({});
  // 1,500 empty objects are 4.5 KB of JSON but about 64 bytes each in memory.
  const empties = estimateIdentityBytes({ objs: Array.from({ length: 1_500 }, () => ({})) });
  assert.ok(empties - base >= 1_500 * 64, `${empties - base}`);
  // Small integers live in the array's slots; doubles are boxed.
  const ints = estimateIdentityBytes({ ids: Array.from({ length: 1_000 }, (_, i) => i) }) - base;
  const doubles = estimateIdentityBytes({ ids: Array.from({ length: 1_000 }, (_, i) => i + 0.5) }) - base;
  assert.ok(ints >= 8_000 && doubles >= ints + 16_000, `${ints} ${doubles}`);
  // Strings: their length, twice for characters beyond Latin-1.
  assert.equal(estimateIdentityBytes({ a: 'x'.repeat(100) }) - estimateIdentityBytes({ a: '' }), 100);
  assert.equal(estimateIdentityBytes({ a: 'ж'.repeat(100) }) - estimateIdentityBytes({ a: '' }), 200);
});

test('walks any depth without overflowing the stack', () => {
  let deep: unknown = [];
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.ok(estimateIdentityBytes({ deep }) > 200_000 * 24);
});
