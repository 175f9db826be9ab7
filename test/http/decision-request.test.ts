// The decision hook sees a narrowed view of the request, never its credentials: a hook that serialises everything
// it is given (as an audit logger would) must find no token, DPoP proof, cookie or proxy credential in it, on
// allowed and refused requests alike. Real HTTP, real jose tokens and proofs.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent, DecisionRequest } from '../../src/core/kernel/decision.js';
import { decisionRequestOf } from '../../src/http/decision-request.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const COOKIE = 'session=cookie-secret-4711';
const PROXY_CREDENTIAL = 'Basic cHJveHk6cHJveHktc2VjcmV0LTQ3MTE=';

let issuer: TestIssuer;
let key: DpopKey;
let server: Server;
let url: string;
/** Everything each hook call was given, serialised both ways a logger would. */
const serialised: string[] = [];
const calls: { event: DecisionEvent; request: DecisionRequest | undefined }[] = [];
/** The view the server's own middleware got for each request, by the request's x-request-id. */
const seenByMiddleware = new Map<string, DecisionRequest>();

before(async () => {
  issuer = await startTestIssuer();
  key = await makeDpopKey();
  const guard = createGuard({
    issuer: issuer.issuer,
    resource: RESOURCE,
    dpop: 'allow',
    onDecision: (...args) => {
      serialised.push(JSON.stringify(args), inspect(args, { depth: Infinity, showHidden: true, getters: true }));
      calls.push({ event: args[0], request: args[1] });
    },
  });
  const pipeline = createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { tools: [] } }));
  server = createServer((req, res) => {
    // An operator's middleware joins its own per-request state to the decision through the same view.
    const requestId = req.headers['x-request-id'];
    if (typeof requestId === 'string') seenByMiddleware.set(requestId, decisionRequestOf(req));
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  url = `${await listenOnLoopback(server)}/mcp?debug=query-secret-4711`;
});
after(async () => {
  if (server) closeServer(server);
  await issuer?.close();
});

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const common = (requestId: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  'user-agent': 'audit-test/1.0',
  'x-request-id': requestId,
  'mcp-session-id': 'session-id-secret-4711',
  'x-api-key': 'api-key-secret-4711',
  cookie: COOKIE,
  'proxy-authorization': PROXY_CREDENTIAL,
});

/** Sends the request and returns the hook's one call for it, having asserted nothing secret reached the hook. */
async function decide(requestId: string, headers: Record<string, string>, secrets: string[], status: number): Promise<{ event: DecisionEvent; request: DecisionRequest | undefined }> {
  serialised.length = 0;
  calls.length = 0;
  const res = await send(url, { headers: { ...common(requestId), ...headers }, body });
  assert.equal(res.status, status, res.text);
  assert.equal(calls.length, 1);
  for (const text of serialised) {
    for (const secret of [...secrets, 'cookie-secret-4711', 'cHJveHk6cHJveHktc2VjcmV0LTQ3MTE=', 'session-id-secret-4711', 'api-key-secret-4711', 'query-secret-4711']) {
      assert.ok(!text.includes(secret), `the hook was given ${JSON.stringify(secret)}: ${text.slice(0, 400)}`);
    }
  }
  return calls[0]!;
}

describe('the decision hook gets no credentials', () => {
  test('an allowed Bearer request: the view names method, path, client address and the safe headers only', async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp' });
    const { event, request } = await decide('req-1', { authorization: `Bearer ${token}` }, [token, token.split('.')[2]!], 200);
    assert.equal(event.decision, 'allow');
    assert.deepEqual(request, {
      httpMethod: 'POST',
      path: '/mcp',
      clientAddress: '127.0.0.1',
      headers: { 'mcp-protocol-version': '2025-11-25', 'user-agent': 'audit-test/1.0', 'x-request-id': 'req-1' },
    });
    assert.ok(Object.isFrozen(request) && Object.isFrozen(request!.headers));
    assert.equal(request, seenByMiddleware.get('req-1'), 'the hook gets the very view the middleware got');
  });

  test('a refused Bearer token', async () => {
    const token = await issuer.sign({ aud: 'https://other.example.com/mcp', sub: 'alice', scope: 'mcp' });
    const { event, request } = await decide('req-2', { authorization: `Bearer ${token}` }, [token, token.split('.')[2]!], 401);
    assert.equal(event.reason, 'token_audience');
    assert.equal(request?.path, '/mcp');
  });

  test('an allowed DPoP request: neither the token nor the proof', async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { jkt: key.thumbprint } });
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    const { event } = await decide('req-3', { authorization: `DPoP ${token}`, dpop: proof }, [token, proof, proof.split('.')[2]!], 200);
    assert.equal(event.decision, 'allow');
  });

  test('a refused DPoP proof', async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { jkt: key.thumbprint } });
    const proof = await signDpopProof(key, { htu: 'https://elsewhere.example.com/mcp', token });
    const { event } = await decide('req-4', { authorization: `DPoP ${token}`, dpop: proof }, [token, proof, proof.split('.')[2]!], 401);
    assert.equal(event.reason, 'dpop_proof_invalid');
  });

  test('a header value is bounded', async () => {
    const { request } = await decide('req-5', { 'user-agent': 'u'.repeat(5000) }, [], 401);
    assert.equal(request?.headers['user-agent'], `${'u'.repeat(256)}…`);
  });
});
