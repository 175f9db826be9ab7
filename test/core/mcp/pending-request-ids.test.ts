import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPendingRequestIds } from '../../../src/core/mcp/pending-request-ids.js';

test('an id in progress is refused in its session only, and free again once released', () => {
  const pending = createPendingRequestIds();
  const release = pending.claim('s1', 5);
  assert.equal(typeof release, 'function');
  assert.equal(pending.claim('s1', 5), 'in_use');
  assert.equal(typeof pending.claim('s1', '5'), 'function', '5 and "5" differ');
  assert.equal(typeof pending.claim('s2', 5), 'function');
  (release as () => void)();
  assert.equal(typeof pending.claim('s1', 5), 'function');
});

test('forgetSession gives back every id of a session that ended, and a late release counts nothing twice', () => {
  const pending = createPendingRequestIds();
  const a = pending.claim('s1', 1) as () => void;
  pending.claim('s1', 2);
  pending.claim('s2', 1);
  assert.equal(pending.size, 3);
  pending.forgetSession('s1');
  assert.equal(pending.size, 1);
  a();
  assert.equal(pending.size, 1, 'a release after the session was forgotten does nothing');
  assert.equal(typeof pending.claim('s1', 1), 'function');
  assert.equal(pending.size, 2);
  pending.forgetSession('unknown');
  assert.equal(pending.size, 2);
});

test('a long string id is kept as a digest: still refused when reused, and told apart from another', () => {
  const pending = createPendingRequestIds();
  const long = 'x'.repeat(1_000_000);
  const release = pending.claim('s1', long) as () => void;
  assert.equal(pending.claim('s1', long), 'in_use');
  assert.equal(typeof pending.claim('s1', `${long}y`), 'function');
  release();
  assert.equal(typeof pending.claim('s1', long), 'function');
});
