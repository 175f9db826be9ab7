// DPoP through the node:http pipeline, on real HTTP: the method and every DPoP header reach the guard, htu is the
// canonical resource whatever Host the request names (behind a proxy, in the gateway), and refusals are the
// standard answers with their JSON-RPC codes.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop/dpop-proof.js';
import { FORBIDDEN_JSONRPC_CODE, UNAUTHORIZED_JSONRPC_CODE } from '../../src/core/kernel/errors.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send } from '../helpers/http-client.js';

// The public URL clients use; the server itself listens on a loopback port (as behind a reverse proxy).
const RESOURCE = 'https://mcp.example.com/mcp';
const METADATA = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';
const ALGS = DPOP_SIGNING_ALGORITHMS.join(' ');
const BARE_BEARER = `Bearer resource_metadata="${METADATA}"`;

let issuer: TestIssuer;
let key: DpopKey;
let server: Server;
let url: string;

before(async () => {
  issuer = await startTestIssuer();
  key = await makeDpopKey();
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: { scopesSupported: ['mcp', 'x:admin'], tools: { admin_tool: ['x:admin'] } } });
  const pipeline = createRequestPipeline(guard, (message, context) => ({
    jsonrpc: '2.0',
    id: (message as { id: number }).id,
    result: { sub: context.auth.extra.sub ?? null },
  }));
  server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await issuer?.close();
});

const body = (method = 'tools/list', params: Record<string, unknown> = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const headers = (token: string, dpop: string | string[]) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `DPoP ${token}`,
  dpop,
});
const boundToken = () => issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { jkt: key.thumbprint } });

describe('DPoP through the request pipeline', () => {
  test('a proof for the canonical resource is accepted, whatever the Host header says', async () => {
    const token = await boundToken();
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    const res = await send(url, { headers: { ...headers(token, proof), host: 'internal-backend:8080' }, body: body() });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.result.sub, 'alice');
  });

  test('a proof naming the Host the request came in on, not the resource, is refused', async () => {
    const token = await boundToken();
    const proof = await signDpopProof(key, { htu: url, token });
    const res = await send(url, { headers: headers(token, proof), body: body() });
    assert.equal(res.status, 401);
    assert.equal(res.headers['www-authenticate'], `${BARE_BEARER}, DPoP error="invalid_dpop_proof", error_description="DPoP proof \\"htu\\" does not name this resource, ${RESOURCE} (RFC 9449 section 4.3)", algs="${ALGS}", resource_metadata="${METADATA}"`);
    assert.equal(res.json.error.code, UNAUTHORIZED_JSONRPC_CODE);
    assert.equal(res.json.id, 1);
  });

  test('two DPoP headers are refused with 400, seen although Node keeps one in req.headers', async () => {
    const token = await boundToken();
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    const res = await send(url, { headers: headers(token, [proof, proof]), body: body() });
    assert.equal(res.status, 400);
    assert.equal(res.headers['www-authenticate'], `DPoP error="invalid_request", error_description="Send exactly one DPoP header (RFC 9449 section 4.3)", algs="${ALGS}", resource_metadata="${METADATA}"`);
    assert.equal(res.json.error.code, -32600);
  });

  test('the proof must be for this request: a proof for GET is refused on a POST, and a replay is refused', async () => {
    const token = await boundToken();
    const forGet = await signDpopProof(key, { htu: RESOURCE, token, htm: 'GET' });
    assert.equal((await send(url, { headers: headers(token, forGet), body: body() })).status, 401);
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    assert.equal((await send(url, { headers: headers(token, proof), body: body() })).status, 200);
    const replay = await send(url, { headers: headers(token, proof), body: body() });
    assert.equal(replay.status, 401);
    assert.equal(
      replay.headers['www-authenticate'],
      `${BARE_BEARER}, DPoP error="invalid_dpop_proof", error_description="DPoP proof was already used (jti replayed): send a fresh proof with every request (RFC 9449 section 11.1)", algs="${ALGS}", resource_metadata="${METADATA}"`,
    );
  });

  test('insufficient scope is a 403 in the DPoP challenge, with the forbidden code', async () => {
    const token = await boundToken();
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    const res = await send(url, { headers: headers(token, proof), body: body('tools/call', { name: 'admin_tool' }) });
    assert.equal(res.status, 403);
    assert.equal(res.headers['www-authenticate'], `DPoP error="insufficient_scope", error_description="Insufficient scope for tool 'admin_tool' (tools/call): missing x:admin", algs="${ALGS}", scope="x:admin mcp", resource_metadata="${METADATA}"`);
    assert.equal(res.json.error.code, FORBIDDEN_JSONRPC_CODE);
  });

  test('a Basic header, or a token only in the query, gets the bare 401 that starts the OAuth flow', async () => {
    for (const extra of [{ headers: { authorization: 'Basic dXNlcjpwYXNz' } }, { query: '?access_token=abc' }]) {
      const res = await send(`${url}${extra.query ?? ''}`, { headers: { 'content-type': 'application/json', ...extra.headers }, body: body() });
      assert.equal(res.status, 401);
      assert.equal(res.headers['www-authenticate'], `${BARE_BEARER}, DPoP algs="${ALGS}", resource_metadata="${METADATA}"`);
      assert.equal(res.json.error.code, UNAUTHORIZED_JSONRPC_CODE);
    }
  });
});
