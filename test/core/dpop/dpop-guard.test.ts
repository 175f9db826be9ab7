// DPoP at the guard (RFC 9449 §7, MCP SEP-1932): the three modes, the binding of tokens to proof keys for JWTs and
// introspected tokens alike, replay, and the challenges, with real tokens from a local issuer and real proofs.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { createGuard, type Guard } from '../../../src/core/guard/create-guard.js';
import type { DpopRequest } from '../../../src/core/dpop/dpop-authenticator.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../../src/core/dpop/dpop-proof.js';
import {
  ConfigurationError,
  InsufficientScopeError,
  InvalidDpopProofError,
  InvalidRequestError,
  InvalidTokenError,
  MissingTokenError,
  RATE_LIMITED_JSONRPC_CODE,
  RateLimitedError,
  RequestRejectedError,
  UNAUTHORIZED_JSONRPC_CODE,
  type GuardError,
} from '../../../src/core/kernel/errors.js';
import type { GuardOptions } from '../../../src/core/guard/guard-options.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { createMemoryReplayCache } from '../../../src/core/limits/replay-cache.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { makeDpopKey, signDpopProof, type DpopKey, type ProofParts } from '../../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const METADATA_URL = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';
const ALGS = DPOP_SIGNING_ALGORITHMS.join(' ');
const policy = { scopesSupported: ['mcp', 'x:admin'], requiredScopes: ['mcp'], tools: { admin_tool: ['x:admin'] } };

let issuer: TestIssuer;
let key: DpopKey;
let otherKey: DpopKey;
before(async () => {
  issuer = await startTestIssuer();
  [key, otherKey] = await Promise.all([makeDpopKey('ES256'), makeDpopKey('ES256')]);
});
after(async () => {
  await issuer?.close();
});

const guardWith = (extra: Partial<GuardOptions> = {}): Guard => createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy, ...extra });
const boundToken = (jkt = key.thumbprint, claims: Record<string, unknown> = {}) =>
  issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'c1', scope: 'mcp', cnf: { jkt }, ...claims });
const plainToken = () => issuer.sign({ aud: RESOURCE, sub: 'bob', client_id: 'c2', scope: 'mcp' });
const requestWith = (dpop: string | string[] | undefined, method = 'POST'): DpopRequest => ({ method, dpopHeader: () => dpop });
const proofFor = (token: string, parts: ProofParts = {}, signer = key) => signDpopProof(signer, { htu: RESOURCE, token, ...parts });

/** Runs `authenticate` as an adapter would: a synchronous throw and a rejection are the same refusal. */
const authenticate = (guard: Guard, authorization: string, request?: DpopRequest): Promise<AuthInfo> =>
  Promise.resolve().then(() => guard.authenticate(authorization, '/mcp', request));

const challengeOf = (guard: Guard, error: GuardError): string | undefined => guard.errorResponse(error).headers['WWW-Authenticate'];

describe('dpop: allow (the default)', () => {
  test('a DPoP-bound token with a valid proof is accepted', async () => {
    const guard = guardWith();
    assert.equal(guard.dpop, 'allow');
    const token = await boundToken();
    const auth = await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    assert.equal(auth.extra.sub, 'alice');
    assert.deepEqual(auth.extra.claims['cnf'], { jkt: key.thumbprint });
    // Seen again with a fresh proof, for GET too (verified again and cached: a JWT's second use), then from the cache.
    const again = await authenticate(guard, `dpop ${token}`, requestWith(await proofFor(token, { htm: 'GET' }), 'GET'));
    assert.equal(again.extra.sub, 'alice');
    const cached = await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    assert.equal(cached.extra, again.extra);
  });

  test('a plain Bearer token works as before, answered from the cache without a promise', async () => {
    const guard = guardWith();
    const token = await plainToken();
    await authenticate(guard, `Bearer ${token}`);
    await authenticate(guard, `Bearer ${token}`);
    const cached = guard.authenticate(`Bearer ${token}`, '/mcp');
    assert.equal(cached instanceof Promise, false);
    assert.equal((cached as AuthInfo).extra.sub, 'bob');
  });

  test('a DPoP-bound token sent as Bearer is refused (401 invalid_token), even once it is in the cache', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const first = await assertGuardError(authenticate(guard, `Bearer ${token}`), InvalidTokenError, 'token_binding', 401);
    assert.match(first.message, /DPoP-bound/);
    assert.equal(
      challengeOf(guard, first),
      `Bearer error="invalid_token", error_description="${first.message.replaceAll('"', '\\"')}", scope="mcp", resource_metadata="${METADATA_URL}", DPoP algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`,
    );
    // Cached by valid DPoP uses (a JWT enters the cache on its second); the downgrade is refused all the same.
    await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    await assertGuardError(authenticate(guard, `Bearer ${token}`), InvalidTokenError, 'token_binding', 401);
  });

  test('a proof signed by another key than the token is bound to: 401 invalid_token (RFC 9449 §7.1)', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const error = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token, {}, otherKey))), InvalidTokenError, 'token_binding', 401);
    assert.match(error.message, /another key/);
    // The error goes in the DPoP challenge; the Bearer one is offered bare beside it.
    assert.equal(
      challengeOf(guard, error),
      `Bearer scope="mcp", resource_metadata="${METADATA_URL}", DPoP error="invalid_token", error_description="${error.message}", algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`,
    );
  });

  test('an unbound token sent with the DPoP scheme is refused: 401 invalid_token', async () => {
    const guard = guardWith();
    const token = await plainToken();
    const error = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token))), InvalidTokenError, 'token_binding', 401);
    assert.match(error.message, /not DPoP-bound/);
    assert.match(error.message, /send it as "Authorization: Bearer/, 'in allow mode, Bearer is the way for an unbound token');
    const strict = guardWith({ dpop: 'require' });
    const refused = await assertGuardError(authenticate(strict, `DPoP ${token}`, requestWith(await proofFor(token))), InvalidTokenError, 'token_binding', 401);
    assert.match(refused.message, /accepts DPoP-bound tokens only/, 'in require mode, Bearer is no way out');
  });

  test('a token bound by another confirmation method (mTLS x5t#S256) is refused either way', async () => {
    const guard = guardWith();
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', scope: 'mcp', cnf: { 'x5t#S256': 'abc' } });
    await assertGuardError(authenticate(guard, `Bearer ${token}`), InvalidTokenError, 'token_binding', 401);
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token))), InvalidTokenError, 'token_binding', 401);
  });

  test('a replayed proof is refused: 401 invalid_dpop_proof', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const proof = await proofFor(token);
    await authenticate(guard, `DPoP ${token}`, requestWith(proof));
    const error = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(proof)), InvalidDpopProofError, 'dpop_proof_replayed', 401);
    assert.equal(
      challengeOf(guard, error),
      `Bearer scope="mcp", resource_metadata="${METADATA_URL}", DPoP error="invalid_dpop_proof", error_description="${error.message}", algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`,
    );
    assert.equal(guard.errorResponse(error, 7).body.error.code, UNAUTHORIZED_JSONRPC_CODE);
  });

  test('of two concurrent requests with one proof, exactly one is accepted', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const proof = await proofFor(token);
    const results = await Promise.allSettled([authenticate(guard, `DPoP ${token}`, requestWith(proof)), authenticate(guard, `DPoP ${token}`, requestWith(proof))]);
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
  });

  test('a proof that fails a check does not use up its jti', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const proof = await proofFor(token);
    // Same proof, wrong method: refused before the claim.
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(proof, 'GET')), InvalidDpopProofError, 'dpop_proof_invalid', 401);
    await authenticate(guard, `DPoP ${token}`, requestWith(proof));
  });

  test('a bad proof costs no token verification', async () => {
    const guard = guardWith();
    const token = await boundToken(key.thumbprint, { sub: 'carol' });
    const jwks = issuer.requests('/jwks');
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token, { htm: 'PUT' }))), InvalidDpopProofError, 'dpop_proof_invalid', 401);
    assert.equal(issuer.requests('/jwks'), jwks);
  });

  test('a missing proof is 401 invalid_dpop_proof; two DPoP headers or a malformed one are 400', async () => {
    const guard = guardWith();
    const token = await boundToken();
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(undefined)), InvalidDpopProofError, 'dpop_proof_missing', 401);
    // An adapter that passes no request facts cannot have proofs checked.
    await assertGuardError(authenticate(guard, `DPoP ${token}`), InvalidDpopProofError, 'dpop_proof_missing', 401);
    const proof = await proofFor(token);
    const two = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith([proof, proof])), InvalidRequestError, 'dpop_proof_malformed', 400);
    assert.equal(challengeOf(guard, two), `DPoP error="invalid_request", error_description="${two.message}", algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`);
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith('garbage')), InvalidRequestError, 'dpop_proof_malformed', 400);
  });

  test('a proof is checked against the token it comes with (ath)', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const other = await boundToken(key.thumbprint, { sub: 'dave' });
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(other))), InvalidDpopProofError, 'dpop_proof_invalid', 401);
  });

  test('insufficient scope for a DPoP-bound token is told in the DPoP challenge', async () => {
    const guard = guardWith();
    const token = await boundToken();
    const auth = await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'admin_tool' } } as JsonRpcMessage;
    const error = await assertGuardError(() => guard.authorize(message, auth, {}), InsufficientScopeError, 'scope_insufficient', 403);
    assert.match(challengeOf(guard, error) ?? '', /^DPoP error="insufficient_scope", error_description="[^"]+", algs="[^"]+", scope="mcp x:admin", resource_metadata=/);
  });

  test('the bare 401 offers both schemes, each with resource_metadata and scope; metadata lists the proof algorithms', () => {
    const guard = guardWith();
    assert.equal(challengeOf(guard, new MissingTokenError()), `Bearer scope="mcp", resource_metadata="${METADATA_URL}", DPoP algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`);
    assert.deepEqual(guard.metadata.dpop_signing_alg_values_supported, [...DPOP_SIGNING_ALGORITHMS]);
    assert.equal('dpop_bound_access_tokens_required' in guard.metadata, false);
  });

  test('a Basic header gets the bare 401 too (so the client starts the OAuth flow)', async () => {
    const guard = guardWith();
    const error = await assertGuardError(authenticate(guard, 'Basic dXNlcjpwYXNz'), MissingTokenError, 'token_missing', 401);
    assert.equal(challengeOf(guard, error), challengeOf(guard, new MissingTokenError()));
  });
});

describe('dpop: require', () => {
  test('a plain Bearer token is turned away: 401 invalid_token in the DPoP challenge, the only one offered', async () => {
    const guard = guardWith({ dpop: 'require' });
    const token = await plainToken();
    const error = await assertGuardError(authenticate(guard, `Bearer ${token}`), InvalidTokenError, 'token_binding', 401);
    assert.match(error.message, /accepts only DPoP-bound access tokens/);
    assert.equal(challengeOf(guard, error), `DPoP error="invalid_token", error_description="${error.message.replaceAll('"', '\\"')}", algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`);
  });

  test('a DPoP-bound token with a proof is accepted', async () => {
    const guard = guardWith({ dpop: 'require' });
    const token = await boundToken();
    assert.equal((await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)))).extra.sub, 'alice');
  });

  test('the metadata says dpop_bound_access_tokens_required; the bare 401 offers DPoP only and asks for it', async () => {
    const guard = guardWith({ dpop: 'require' });
    assert.equal(guard.metadata.dpop_bound_access_tokens_required, true);
    assert.deepEqual(JSON.parse(guard.metadataJson).dpop_signing_alg_values_supported, [...DPOP_SIGNING_ALGORITHMS]);
    const error = await assertGuardError(authenticate(guard, ''), MissingTokenError, 'token_missing', 401);
    assert.match(error.message, /Authorization: DPoP <token>/);
    assert.equal(challengeOf(guard, error), `DPoP algs="${ALGS}", scope="mcp", resource_metadata="${METADATA_URL}"`);
  });
});

describe('dpop: off', () => {
  test('the DPoP scheme is another scheme: the bare 401, offering Bearer only', async () => {
    const guard = guardWith({ dpop: 'off' });
    const token = await boundToken();
    const error = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token))), MissingTokenError, 'token_missing', 401);
    assert.equal(challengeOf(guard, error), `Bearer scope="mcp", resource_metadata="${METADATA_URL}"`);
  });

  test('a token with cnf is refused as a bearer token, as before DPoP support', async () => {
    const guard = guardWith({ dpop: 'off' });
    const error = await assertGuardError(authenticate(guard, `Bearer ${await boundToken()}`), InvalidTokenError, 'token_binding', 401);
    assert.match(error.message, /sender-constrained/);
    assert.equal(challengeOf(guard, error)?.includes('DPoP'), false);
  });

  test('the metadata says nothing of DPoP', () => {
    const guard = guardWith({ dpop: 'off' });
    assert.equal('dpop_signing_alg_values_supported' in guard.metadata, false);
    assert.equal('dpop_bound_access_tokens_required' in guard.metadata, false);
  });
});

describe('dpop: introspected tokens follow the same rules', () => {
  const options = (extra: Partial<GuardOptions> = {}): Partial<GuardOptions> => ({
    introspection: { clientId: 'rs-client', clientSecret: 'rs-secret', endpoint: issuer.introspectionEndpoint },
    jwksUri: issuer.jwksUri,
    ...extra,
  });
  const active = (extra: Record<string, unknown>) => ({ active: true, aud: RESOURCE, sub: 'erin', scope: 'mcp', exp: Math.floor(Date.now() / 1000) + 300, ...extra });

  test('an opaque token bound by cnf.jkt needs the DPoP scheme and a proof by that key', async () => {
    const guard = guardWith(options());
    const token = 'opaque-bound-1';
    issuer.setIntrospection(token, active({ token_type: 'DPoP', cnf: { jkt: key.thumbprint } }));
    await assertGuardError(authenticate(guard, `Bearer ${token}`), InvalidTokenError, 'token_binding', 401);
    await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token, {}, otherKey))), InvalidTokenError, 'token_binding', 401);
    const auth = await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    assert.equal(auth.extra.tokenType, 'introspection');
    assert.equal(auth.extra.sub, 'erin');
  });

  test('token_type DPoP with no cnf.jkt is refused; an unbound opaque token works as Bearer', async () => {
    const guard = guardWith(options());
    issuer.setIntrospection('opaque-unbound-dpop', active({ token_type: 'DPoP' }));
    await assertGuardError(authenticate(guard, 'Bearer opaque-unbound-dpop'), InvalidTokenError, 'token_binding', 401);
    issuer.setIntrospection('opaque-plain', active({ token_type: 'Bearer' }));
    assert.equal((await authenticate(guard, 'Bearer opaque-plain')).extra.sub, 'erin');
  });
});

describe('dpop: settings', () => {
  test('an unknown mode is a start-up error naming the setting', () => {
    assert.throws(() => guardWith({ dpop: 'on' as never }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'options.dpop' && /off, allow, require/.test(e.message));
  });

  test('a replay cache without claim() is a start-up error', () => {
    assert.throws(() => guardWith({ dpopReplayCache: {} as never }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'options.dpopReplayCache');
  });

  test('a given replay cache is the one claimed in, and its failure is a 503, never an accepted proof', async () => {
    const claimed: string[] = [];
    const guard = guardWith({ dpopReplayCache: { claim: async (jti) => (claimed.push(jti), true) } });
    const token = await boundToken();
    const proof = await proofFor(token, { claims: { jti: 'shared-1' } });
    await authenticate(guard, `DPoP ${token}`, requestWith(proof));
    assert.deepEqual(claimed, ['shared-1']);

    const down = guardWith({ dpopReplayCache: { claim: () => Promise.reject(new Error('store down')) } });
    const error = await assertGuardError(authenticate(down, `DPoP ${token}`, requestWith(await proofFor(token))), RequestRejectedError, 'dpop_replay_cache_unavailable', 503);
    assert.equal(down.errorResponse(error).headers['Retry-After'], '5');
  });

  test('the default replay cache is bounded, and full of live proofs it answers 503 rather than forget one', async () => {
    const cache = createMemoryReplayCache({ maxEntries: 2, maxEntriesPerCaller: 2 });
    const guard = guardWith({ dpopReplayCache: cache });
    const token = await boundToken();
    for (let i = 0; i < 2; i++) await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    const other = await boundToken(otherKey.thumbprint, { sub: 'carol' });
    await assertGuardError(authenticate(guard, `DPoP ${other}`, requestWith(await proofFor(other, {}, otherKey))), RequestRejectedError, 'dpop_replay_cache_unavailable', 503);
    assert.equal(cache.size, 2);
  });

  test("a caller past its share of the replay cache gets 429 with Retry-After, whichever key or token it uses; other callers do not", async () => {
    // Shares hold once the cache is half full: two proofs of four make it so.
    const cache = createMemoryReplayCache({ maxEntries: 4, maxEntriesPerCaller: 2 });
    const guard = guardWith({ dpopReplayCache: cache });
    const token = await boundToken();
    for (let i = 0; i < 2; i++) await authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token)));
    const refused = await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(await proofFor(token))), RateLimitedError, 'rate_limited', 429);
    assert.equal(refused.message, 'Too many DPoP proofs in flight: at most 2 per caller within a proof\'s lifetime; retry later');
    const response = guard.errorResponse(refused, 7);
    assert.ok(Number(response.headers['Retry-After']) >= 60 && Number(response.headers['Retry-After']) <= 70, response.headers['Retry-After']);
    assert.equal(response.headers['WWW-Authenticate'], undefined, 'not a credentials problem: no challenge');
    assert.equal(response.body.error.code, RATE_LIMITED_JSONRPC_CODE);
    // The same caller (issuer, subject, client) with another key and token shares the same count.
    const sameCaller = await boundToken(otherKey.thumbprint);
    await assertGuardError(authenticate(guard, `DPoP ${sameCaller}`, requestWith(await proofFor(sameCaller, {}, otherKey))), RateLimitedError, 'rate_limited', 429);
    const carol = await boundToken(otherKey.thumbprint, { sub: 'carol' });
    assert.equal((await authenticate(guard, `DPoP ${carol}`, requestWith(await proofFor(carol, {}, otherKey)))).extra.sub, 'carol');
    assert.equal(cache.size, 3);
  });

  test('a proof that expires while its token is being verified is refused, whatever the store records', async () => {
    // A store that, like a careless shared cache, records any claim: only the guard's own check stands between
    // a replay that lands after the proof's expiry and acceptance.
    let clock = Date.now();
    const guard = guardWith({ dpopReplayCache: { claim: () => true } });
    const token = await boundToken();
    const proof = await proofFor(token);
    const realNow = Date.now;
    Date.now = () => clock;
    try {
      const verify = guard.verifier.verify.bind(guard.verifier);
      guard.verifier.cached = undefined;
      guard.verifier.cachedOrVerify = undefined;
      guard.verifier.verify = async (t) => {
        clock += 10 * 60_000; // verification outlasts the proof window
        return verify(t);
      };
      await assertGuardError(authenticate(guard, `DPoP ${token}`, requestWith(proof)), InvalidDpopProofError, 'dpop_proof_invalid', 401);
    } finally {
      Date.now = realNow;
    }
  });
});
