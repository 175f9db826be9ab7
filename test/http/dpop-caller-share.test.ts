// One DPoP caller cannot make every other DPoP caller get 503, on real HTTP with real jose keys and tokens: the
// attack (one caller flooding fresh proofs dated ahead of the server while its rate limit refuses it) against a
// small replay cache, through the node:http pipeline. The flood claims freely until the cache is half full, then
// stops at the caller's share (429 with Retry-After), a proof dated 55 s ahead is refused outright, and another caller's fresh proof is served.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop/dpop-proof.js';
import { RATE_LIMITED_JSONRPC_CODE, UNAUTHORIZED_JSONRPC_CODE } from '../../src/core/kernel/errors.js';
import { createMemoryReplayCache, type MemoryReplayCache } from '../../src/core/limits/replay-cache.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send, type HttpAnswer } from '../helpers/http-client.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const METADATA = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';
const ALGS = DPOP_SIGNING_ALGORITHMS.join(' ');
/** A small cache keeps the test fast: the default share of 300 entries is 1 %, three live proofs per caller once half full. */
const MAX_ENTRIES = 300;
const SHARE = 3;

let issuer: TestIssuer;
let cache: MemoryReplayCache;
let server: Server;
let url: string;

before(async () => {
  issuer = await startTestIssuer();
  cache = createMemoryReplayCache({ maxEntries: MAX_ENTRIES });
  // As in the attack: a rate limit is set, and did not help, since the jti was claimed before it ran.
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, rateLimit: '2/min', dpopReplayCache: cache });
  const pipeline = createRequestPipeline(guard, (message, context) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { sub: context.auth.extra.sub ?? null } }));
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

interface Client {
  key: DpopKey;
  token: string;
  /** One tools/list with a fresh proof, its `iat` `aheadSeconds` after now. */
  call(id: number, aheadSeconds?: number): Promise<HttpAnswer>;
}

async function client(sub: string): Promise<Client> {
  const key = await makeDpopKey();
  const token = await issuer.sign({ aud: RESOURCE, sub, client_id: 'app', cnf: { jkt: key.thumbprint } });
  return {
    key,
    token,
    async call(id, aheadSeconds = 0) {
      const proof = await signDpopProof(key, { htu: RESOURCE, token, claims: { iat: Math.floor(Date.now() / 1000) + aheadSeconds } });
      return send(url, {
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `DPoP ${token}`, dpop: proof },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }),
      });
    },
  };
}

describe('one DPoP caller against the replay cache', () => {
  test('a flood of fresh proofs fills only its own share: 429 with Retry-After, and another caller is served, not 503', async () => {
    const mallory = await client('mallory');
    // The flood: as many fresh proofs as the whole cache holds, dated as far ahead as is allowed, ten at a time.
    const answers: HttpAnswer[] = [];
    for (let sent = 0; sent < MAX_ENTRIES; sent += 10) {
      answers.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => mallory.call(100 + sent + i, 5)))));
    }
    // Everyone else is unaffected.
    for (const [i, sub] of ['alice', 'bob'].entries()) {
      const res = await (await client(sub)).call(1_000 + i);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.result.sub, sub);
    }

    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 503).length, 0, 'no 503 for the flooding caller either: its share runs out first');
    assert.equal(statuses.filter((s) => s === 200).length, 2, 'its rate limit served two');
    assert.equal(statuses.filter((s) => s === 429).length, MAX_ENTRIES - 2);
    const refusedByShare = answers.filter((a) => a.status === 429 && /DPoP proofs in flight/.test(a.json.error.message));
    assert.equal(refusedByShare.length, MAX_ENTRIES / 2, 'once the cache is half full, every proof past its share is refused before it is kept');
    const one = refusedByShare[0]!;
    assert.equal(one.json.error.message, `Too many DPoP proofs in flight: at most ${SHARE} per caller within a proof's lifetime; retry later`);
    assert.equal(one.json.error.code, RATE_LIMITED_JSONRPC_CODE);
    assert.equal(one.headers['www-authenticate'], undefined);
    // Its oldest proof expires at most the window plus twice the tolerance after it was made: 70 s.
    const retryAfter = Number(one.headers['retry-after']);
    assert.ok(retryAfter >= 60 && retryAfter <= 70, `Retry-After ${retryAfter}`);
    assert.equal(cache.size, MAX_ENTRIES / 2 + 2, "the cache holds half its size from the flood, and the two others' proofs");
  });

  test('a proof dated 55 s ahead, which would hold its jti for about 120 s, is refused: ahead, only the clock tolerance', async () => {
    const erin = await client('erin');
    const ahead = await erin.call(1, 55);
    assert.equal(ahead.status, 401);
    assert.equal(
      ahead.headers['www-authenticate'],
      `Bearer resource_metadata="${METADATA}", DPoP error="invalid_dpop_proof", error_description="DPoP proof \\"iat\\" is more than 5 seconds ahead of the server's time; send a proof dated now, from a synchronized clock (RFC 9449 section 11.1)", algs="${ALGS}", resource_metadata="${METADATA}"`,
    );
    assert.equal(ahead.json.error.code, UNAUTHORIZED_JSONRPC_CODE);
    assert.equal((await erin.call(2, 5)).status, 200, 'within the tolerance it is served');
  });

  test('an unsigned proof (alg none, empty signature) is an invalid proof: 401 invalid_dpop_proof in the DPoP challenge', async () => {
    const dave = await client('dave');
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${b64({ typ: 'dpop+jwt', alg: 'none', jwk: dave.key.publicJwk })}.${b64({ jti: 'j1', iat: Math.floor(Date.now() / 1000), htm: 'POST', htu: RESOURCE })}.`;
    const res = await send(url, {
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `DPoP ${dave.token}`, dpop: unsigned },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
    assert.equal(
      res.headers['www-authenticate'],
      `Bearer resource_metadata="${METADATA}", DPoP error="invalid_dpop_proof", error_description="DPoP proof must be signed with an asymmetric algorithm: one of ${DPOP_SIGNING_ALGORITHMS.join(', ')} (RFC 9449 section 4.2)", algs="${ALGS}", resource_metadata="${METADATA}"`,
    );
    assert.deepEqual(res.json, {
      jsonrpc: '2.0',
      id: 4,
      error: { code: UNAUTHORIZED_JSONRPC_CODE, message: `DPoP proof must be signed with an asymmetric algorithm: one of ${DPOP_SIGNING_ALGORITHMS.join(', ')} (RFC 9449 section 4.2)`, data: { error: 'invalid_dpop_proof' } },
    });
    // What is not a compact JWS at all stays a malformed request: 400 invalid_request.
    const malformed = await send(url, {
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `DPoP ${dave.token}`, dpop: unsigned.slice(0, -1) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
    });
    assert.equal(malformed.status, 400);
    assert.equal(
      malformed.headers['www-authenticate'],
      `DPoP error="invalid_request", error_description="DPoP header is not a well-formed DPoP proof: expected one compact JWS (RFC 9449 section 4.3)", algs="${ALGS}", resource_metadata="${METADATA}"`,
    );
    assert.equal(malformed.json.error.code, -32600);
  });
});
