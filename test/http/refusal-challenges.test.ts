// The exact WWW-Authenticate value of each of the newer refusals, end to end on real HTTP: a DPoP-bound token sent
// without its proof (as Bearer, or as DPoP with no DPoP header), a token from an issuer that is not trusted, another
// scheme, a token only in the query, a replayed proof, a resource that requires DPoP, and a rate limit (no
// challenge at all). A client acts on these values (RFC 6750 §3, RFC 9449 §7.1, RFC 9728 §5.1), so they are
// compared whole: the scheme order, every parameter and its quoting.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop/dpop-proof.js';
import { RATE_LIMITED_JSONRPC_CODE, UNAUTHORIZED_JSONRPC_CODE } from '../../src/core/kernel/errors.js';
import type { GuardOptions } from '../../src/core/guard/guard-options.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send, type HttpAnswer } from '../helpers/http-client.js';
import { closeServer, servePipeline } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const METADATA = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';
const ALGS = DPOP_SIGNING_ALGORITHMS.join(' ');
// The parts every challenge ends with: the scope a client should ask for, and where the metadata is.
const TAIL = `scope="mcp", resource_metadata="${METADATA}"`;
const BARE_BEARER = `Bearer ${TAIL}`;
const BARE_DPOP = `DPoP algs="${ALGS}", ${TAIL}`;

let issuer: TestIssuer;
let partner: TestIssuer;
let outsider: TestIssuer;
let key: DpopKey;
const servers: Server[] = [];
let allowing: string;
let requiring: string;

async function serve(options: Partial<GuardOptions>): Promise<string> {
  const guard = createGuard({ issuers: [issuer.issuer, partner.issuer], resource: RESOURCE, policy: { scopesSupported: ['mcp'], requiredScopes: ['mcp'] }, ...options });
  const { server, url } = await servePipeline(createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: {} })));
  servers.push(server);
  return url;
}

before(async () => {
  [issuer, partner, outsider] = await Promise.all([startTestIssuer(), startTestIssuer(), startTestIssuer()]);
  key = await makeDpopKey();
  allowing = await serve({ dpop: 'allow', rateLimit: '2/min' });
  requiring = await serve({ dpop: 'require' });
});
after(async () => {
  for (const server of servers) closeServer(server);
  await Promise.all([issuer, partner, outsider].map((each) => each?.close()));
});

const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: {} });

function post(url: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return send(url, { headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body });
}

/** Asserts a 401 with exactly `challenge`, and the JSON-RPC error with the request's id and `error` in its data. */
function assertUnauthorized(res: HttpAnswer, challenge: string, error: string | undefined, message: string): void {
  assert.equal(res.status, 401, res.text);
  assert.equal(res.headers['www-authenticate'], challenge);
  assert.deepEqual(res.json, { jsonrpc: '2.0', id: 5, error: { code: UNAUTHORIZED_JSONRPC_CODE, message, ...(error ? { data: { error } } : {}) } });
}

const boundToken = () => issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { jkt: key.thumbprint } });

describe('the exact challenge of each refusal', () => {
  test('a DPoP-bound token sent as Bearer: invalid_token in the Bearer challenge, then the bare DPoP one', async () => {
    const description = 'token is DPoP-bound: send it as \\"Authorization: DPoP <token>\\" with a DPoP proof (RFC 9449 section 7.1)';
    const res = await post(allowing, { authorization: `Bearer ${await boundToken()}` });
    assertUnauthorized(res, `Bearer error="invalid_token", error_description="${description}", ${TAIL}, ${BARE_DPOP}`, 'invalid_token', description.replaceAll('\\"', '"'));
  });

  test('a DPoP-bound token in the DPoP scheme without a DPoP header: the bare Bearer challenge, then invalid_dpop_proof', async () => {
    const description = 'A DPoP-bound access token needs a DPoP proof: send it in the DPoP header (RFC 9449 section 7)';
    const res = await post(allowing, { authorization: `DPoP ${await boundToken()}` });
    assertUnauthorized(res, `${BARE_BEARER}, DPoP error="invalid_dpop_proof", error_description="${description}", algs="${ALGS}", ${TAIL}`, 'invalid_dpop_proof', description);
  });

  test('a token from an issuer that is not trusted: invalid_token naming the issuers expected', async () => {
    const description = `access token was issued by ${outsider.issuer} (iss), which is not a trusted issuer: expected one of ${issuer.issuer}, ${partner.issuer}`;
    const res = await post(allowing, { authorization: `Bearer ${await outsider.sign({ aud: RESOURCE, sub: 'mallory', scope: 'mcp' })}` });
    assertUnauthorized(res, `Bearer error="invalid_token", error_description="${description}", ${TAIL}, ${BARE_DPOP}`, 'invalid_token', description);
  });

  test('another scheme (Basic) and a token only in the query: the bare challenges, no error (RFC 6750 §3.1)', async () => {
    const message = 'Authorization required: send an OAuth 2.1 access token as "Authorization: Bearer <token>"';
    assertUnauthorized(await post(allowing, { authorization: 'Basic dXNlcjpwYXNz' }), `${BARE_BEARER}, ${BARE_DPOP}`, undefined, message);
    // The challenge stays bare; the message says why the query token was ignored.
    const ignored = `An access_token in the query string is never read (RFC 6750 section 2.3, MCP authorization). ${message}`;
    assertUnauthorized(await post(`${allowing}?access_token=${await issuer.sign({ aud: RESOURCE, scope: 'mcp' })}`), `${BARE_BEARER}, ${BARE_DPOP}`, undefined, ignored);
  });

  test('a replayed proof: the bare Bearer challenge, then invalid_dpop_proof', async () => {
    const token = await boundToken();
    const proof = await signDpopProof(key, { htu: RESOURCE, token });
    assert.equal((await post(allowing, { authorization: `DPoP ${token}`, dpop: proof })).status, 200);
    const description = 'DPoP proof was already used (jti replayed): send a fresh proof with every request (RFC 9449 section 11.1)';
    const replay = await post(allowing, { authorization: `DPoP ${token}`, dpop: proof });
    assertUnauthorized(replay, `${BARE_BEARER}, DPoP error="invalid_dpop_proof", error_description="${description}", algs="${ALGS}", ${TAIL}`, 'invalid_dpop_proof', description);
  });

  test('a resource that requires DPoP: a Bearer token gets invalid_token in the DPoP challenge only; no token, the bare DPoP one', async () => {
    const description = 'this resource accepts only DPoP-bound access tokens, sent as \\"Authorization: DPoP <token>\\" with a DPoP proof (RFC 9449 section 7.1)';
    const res = await post(requiring, { authorization: `Bearer ${await issuer.sign({ aud: RESOURCE, sub: 'bob', scope: 'mcp' })}` });
    assertUnauthorized(res, `DPoP error="invalid_token", error_description="${description}", algs="${ALGS}", ${TAIL}`, 'invalid_token', description.replaceAll('\\"', '"'));
    assertUnauthorized(await post(requiring), BARE_DPOP, undefined, 'Authorization required: send a DPoP-bound OAuth 2.1 access token as "Authorization: DPoP <token>" with a DPoP proof header');
  });

  test('a rate limit: 429 with Retry-After and no challenge, since the credentials are fine', async () => {
    const authorization = `Bearer ${await issuer.sign({ aud: RESOURCE, sub: 'carol', scope: 'mcp' })}`;
    for (let i = 0; i < 2; i++) assert.equal((await post(allowing, { authorization })).status, 200);
    const res = await post(allowing, { authorization });
    assert.equal(res.status, 429, res.text);
    assert.equal(res.headers['www-authenticate'], undefined);
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(res.headers['retry-after']));
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: 5, error: { code: RATE_LIMITED_JSONRPC_CODE, message: 'Rate limit exceeded: at most 2/min requests per caller; retry later' } });
  });
});
