import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { deadlineSignal } from '../../../src/gateway/multiplex/deadline-signal.js';

test('the signal aborts with a TimeoutError once the time is up', async () => {
  const parent = new AbortController();
  const deadline = deadlineSignal(parent.signal, 20);
  assert.equal(deadline.signal.aborted, false);
  await sleep(60);
  assert.equal(deadline.signal.aborted, true);
  assert.equal((deadline.signal.reason as DOMException).name, 'TimeoutError');
  deadline.release();
});

test('the signal aborts with the parent, with its reason', () => {
  const parent = new AbortController();
  const deadline = deadlineSignal(parent.signal, 10_000);
  parent.abort(new Error('client left'));
  assert.equal(deadline.signal.aborted, true);
  assert.equal((deadline.signal.reason as Error).message, 'client left');
  deadline.release();
});

test('a parent already aborted gives an aborted signal', () => {
  const parent = new AbortController();
  parent.abort();
  assert.equal(deadlineSignal(parent.signal, 10_000).signal.aborted, true);
});

test('once released, neither the timer nor the parent aborts it', async () => {
  const parent = new AbortController();
  const deadline = deadlineSignal(parent.signal, 20);
  deadline.release();
  await sleep(60);
  parent.abort();
  assert.equal(deadline.signal.aborted, false);
});
