// When a store the guard must consult is down (the rate limiter's counters, the DPoP replay cache), the request is
// refused the same way through the pipeline: 503, Retry-After 5, the unavailable JSON-RPC code with the request's
// id, no challenge (the credentials are fine), the handler never called, and the decision hook told which store.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../src/core/kernel/decision.js';
import { UNAVAILABLE_JSONRPC_CODE } from '../../src/core/kernel/errors.js';
import type { GuardOptions } from '../../src/core/guard/guard-options.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send, type HttpAnswer } from '../helpers/http-client.js';
import { closeServer, servePipeline } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const down = (): never => {
  throw new Error('store down');
};

let issuer: TestIssuer;
let key: DpopKey;
const servers: Server[] = [];
const decisions: DecisionEvent[] = [];
let handled = 0;

async function serve(options: Partial<GuardOptions>): Promise<string> {
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, onDecision: (event) => void decisions.push(event), ...options });
  const { server, url } = await servePipeline(createRequestPipeline(guard, (message) => (handled++, { jsonrpc: '2.0', id: (message as { id: number }).id, result: {} })));
  servers.push(server);
  return url;
}

before(async () => {
  issuer = await startTestIssuer();
  key = await makeDpopKey();
});
after(async () => {
  for (const server of servers) closeServer(server);
  await issuer?.close();
});

function post(url: string, headers: Record<string, string>): Promise<HttpAnswer> {
  return send(url, {
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'req-9', method: 'tools/list', params: {} }),
  });
}

function assertStoreUnavailable(res: HttpAnswer, message: string): void {
  assert.equal(res.status, 503, res.text);
  assert.equal(res.headers['retry-after'], '5');
  assert.equal(res.headers['www-authenticate'], undefined);
  assert.deepEqual(res.json, { jsonrpc: '2.0', id: 'req-9', error: { code: UNAVAILABLE_JSONRPC_CODE, message } });
}

describe('a store the guard needs is down', () => {
  test('the rate limiter (a rejected promise, or a throw)', async () => {
    for (const consume of [() => Promise.reject(new Error('store down')), down]) {
      const url = await serve({ rateLimit: '10/min', rateLimiter: { consume } });
      handled = 0;
      decisions.length = 0;
      assertStoreUnavailable(await post(url, { authorization: `Bearer ${await issuer.sign({ aud: RESOURCE, sub: 'alice' })}` }), 'Rate limiter unavailable: retry later');
      assert.equal(handled, 0);
      assert.deepEqual(decisions.map((d) => [d.decision, d.reason, d.status]), [['deny', 'rate_limiter_unavailable', 503]]);
    }
  });

  test('the DPoP replay cache', async () => {
    const url = await serve({ dpop: 'allow', dpopReplayCache: { claim: down } });
    handled = 0;
    decisions.length = 0;
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', cnf: { jkt: key.thumbprint } });
    const res = await post(url, { authorization: `DPoP ${token}`, dpop: await signDpopProof(key, { htu: RESOURCE, token }) });
    assertStoreUnavailable(res, 'DPoP proofs cannot be checked for replay right now; retry later');
    assert.equal(handled, 0);
    assert.deepEqual(decisions.map((d) => [d.decision, d.reason, d.status]), [['deny', 'dpop_replay_cache_unavailable', 503]]);
  });
});
