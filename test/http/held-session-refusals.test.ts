// A session refusal held back for a request (a server set that may still send it again in a new session) is told
// to the hook only if it stands, the first one only; dropped, never; a request not held, or no longer, is told at once.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import type { SessionRefusal } from '../../src/core/session/session-gate.js';
import { holdSessionRefusals } from '../../src/http/held-session-refusals.js';
import type { GuardedRequest } from '../../src/http/http-handler.js';
import { refuseSession } from '../../src/http/session-gate.js';
import { watchForLostSession } from '../../src/gateway/multiplex/forward-to-member.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';
import { send } from '../helpers/http-client.js';

const auth = { token: '', clientId: 'console', scopes: [], extra: { sub: 'alice' } } as unknown as AuthInfo;
/** What the hook was told, with what was told before the answer was written. */
const told: { path: string; reason: string; beforeAnswer: boolean }[] = [];

/**
 * Refuses every request for its session; the path says how: `/plain` with no hold; `/report` held, then reported;
 * `/drop` held while its 404 is held back too (as a server set does), dropped, then refused again; `/twice` held
 * and held back, refused twice, reported, then refused again.
 */
const server = createServer((req, res) => {
  const path = req.url ?? '';
  const guarded = Object.assign(req, { auth, body: { jsonrpc: '2.0', id: 7, method: 'tools/call' } }) as unknown as GuardedRequest;
  const hook = (r: GuardedRequest, refusal: SessionRefusal): void => void told.push({ path: r.url ?? '', reason: refusal.reason, beforeAnswer: !res.headersSent });
  const refuse = (reason: SessionRefusal['reason']): void => refuseSession(guarded, res, { reason, sessionId: 'gone' }, auth, hook);
  if (path === '/plain') return refuse('session_unknown');
  const held = holdSessionRefusals(req);
  const watch = path === '/report' ? undefined : watchForLostSession(res);
  refuse('session_unknown');
  if (path === '/twice') refuse('session_owner_mismatch');
  if (path === '/drop') held.drop();
  else held.report();
  watch?.restore();
  // Ended: a later refusal of the same request is told at once.
  if (watch) refuse('session_no_identity');
});
let base: string;

before(async () => {
  base = await listenOnLoopback(server);
});
after(() => closeServer(server));

describe('held session refusals', () => {
  it('are told only when they stand, once each; a request not held is told at once', async () => {
    for (const path of ['/plain', '/report', '/drop', '/twice']) {
      const answer = await send(`${base}${path}`, { method: 'POST' });
      assert.equal(answer.status, 404, `${path}: the client is answered 404 whatever is told`);
      assert.equal(answer.json?.error?.code, -32001);
      assert.equal(answer.json?.id, 7);
    }
    assert.deepEqual(told, [
      { path: '/plain', reason: 'session_unknown', beforeAnswer: true },
      { path: '/report', reason: 'session_unknown', beforeAnswer: false },
      { path: '/drop', reason: 'session_no_identity', beforeAnswer: true },
      { path: '/twice', reason: 'session_unknown', beforeAnswer: true },
      { path: '/twice', reason: 'session_no_identity', beforeAnswer: true },
    ]);
  });
});
