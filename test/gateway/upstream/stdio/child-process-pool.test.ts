// The stdio children's pool hands back the session of a child it just started, however short the idle timeout:
// looked up again, a session bound a moment before could be found expired already and its new process stopped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { createChildProcessPool, type PooledChild } from '../../../../src/gateway/upstream/stdio/child-process-pool.js';
import type { StdioChild } from '../../../../src/gateway/upstream/stdio/stdio-child.js';

const ALICE: AuthInfo = { token: 't', clientId: 'client-1', scopes: [], extra: { sub: 'alice', iss: 'https://as.example', claims: {}, tokenType: 'jwt' } };

test('a child started with a 1 ms idle timeout is handed back and left running, on a clock that moves on at every reading', async () => {
  let now = 0;
  const stopped: string[] = [];
  const pool = createChildProcessPool<PooledChild>({
    maxProcesses: 4,
    maxProcessesPerCaller: 4,
    idleTimeoutMs: 1,
    now: () => now++,
    createSlot: () => ({ child: undefined as unknown as StdioChild }),
    // Only what the pool uses of a child: whether it is alive, how to stop it, and when it ended.
    startChild: (_slot, sessionId) => ({ alive: true, stop: async () => void stopped.push(sessionId), ended: new Promise<void>(() => {}) }) as unknown as StdioChild,
  });
  try {
    const opened = pool.open(ALICE, 'session-1');
    assert.ok('session' in opened, `the new session is handed back, not refused (${JSON.stringify(opened)})`);
    assert.equal(opened.session.id, 'session-1');
    assert.equal(stopped.length, 0, 'the child was not stopped as it started');
    const forCaller = pool.forCaller(ALICE);
    assert.ok('session' in forCaller, `the caller's sessionless child too (${JSON.stringify(forCaller)})`);
    // The first child, idle past its millisecond by now, may go; the one just started may not.
    assert.ok(!stopped.includes(forCaller.session.id), 'the sessionless child was not stopped as it started');
  } finally {
    await pool.close();
  }
});

test('a child that fails to start gives its slot back', async () => {
  let fail = true;
  const pool = createChildProcessPool<PooledChild>({
    maxProcesses: 1,
    maxProcessesPerCaller: 1,
    idleTimeoutMs: 60_000,
    createSlot: () => ({ child: undefined as unknown as StdioChild }),
    startChild: () => {
      if (fail) throw new Error('cannot start');
      return { alive: true, stop: async () => {}, ended: new Promise<void>(() => {}) } as unknown as StdioChild;
    },
  });
  try {
    assert.throws(() => pool.open(ALICE, 'first'), /cannot start/);
    fail = false;
    const second = pool.open(ALICE, 'second');
    assert.ok('session' in second, `the only slot is free again (${JSON.stringify(second)})`);
  } finally {
    await pool.close();
  }
});
