// DPoP proof checks (RFC 9449 §4.3), one failing check per test, with real jose keys and signatures.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { exportJWK, generateSecret, SignJWT } from 'jose';
import { DPOP_PROOF_WINDOW_SECONDS, readDpopProofHeader, verifyDpopProof, type DpopProofExpectations } from '../../../src/core/dpop/dpop-proof.js';
import { InvalidDpopProofError, InvalidRequestError } from '../../../src/core/kernel/errors.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { makeDpopKey, signDpopProof, type DpopKey, type ProofParts } from '../../helpers/dpop.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln';

let key: DpopKey;
before(async () => {
  key = await makeDpopKey('ES256');
});

const expected = (over: Partial<DpopProofExpectations> = {}): DpopProofExpectations => ({ method: 'POST', resource: RESOURCE, accessToken: TOKEN, ...over });
const proof = (parts: ProofParts = {}, signer: DpopKey = key) => signDpopProof(signer, { htu: RESOURCE, token: TOKEN, ...parts });

async function assertInvalid(p: string | Promise<string>, message: RegExp, over: Partial<DpopProofExpectations> = {}): Promise<void> {
  const error = await assertGuardError(verifyDpopProof(await p, expected(over)), InvalidDpopProofError, 'dpop_proof_invalid', 401);
  assert.equal(error.bearerError, 'invalid_dpop_proof');
  assert.match(error.message, message);
}

describe('verifyDpopProof: a valid proof', () => {
  it('returns the jti, the key thumbprint (cnf.jkt) and when the proof stops being acceptable', async () => {
    const now = Date.now();
    const iat = Math.floor(now / 1000);
    const verified = await verifyDpopProof(await proof({ claims: { jti: 'one-time', iat } }), expected({ now: () => now }));
    assert.equal(verified.jti, 'one-time');
    assert.equal(verified.thumbprint, key.thumbprint);
    assert.equal(verified.expiresAtMs, (iat + DPOP_PROOF_WINDOW_SECONDS + 5) * 1000);
  });

  it('accepts RSA-PSS and EdDSA keys too', async () => {
    for (const alg of ['PS256', 'EdDSA']) {
      const other = await makeDpopKey(alg);
      assert.equal((await verifyDpopProof(await proof({}, other), expected())).thumbprint, other.thumbprint, alg);
    }
  });

  it('compares htu as a URL: case of scheme and host, default port, one trailing slash; query and fragment ignored', async () => {
    for (const htu of ['HTTPS://MCP.Example.com/mcp', 'https://mcp.example.com:443/mcp', 'https://mcp.example.com/mcp/', 'https://mcp.example.com/mcp?x=1#f']) {
      await verifyDpopProof(await proof({ htu }), expected());
    }
  });

  it('accepts the method it is told, for GET and DELETE', async () => {
    await verifyDpopProof(await proof({ htm: 'GET' }), expected({ method: 'GET' }));
    await verifyDpopProof(await proof({ htm: 'DELETE' }), expected({ method: 'DELETE' }));
  });
});

describe('verifyDpopProof: each check refuses on its own', () => {
  it('typ must be dpop+jwt', async () => {
    await assertInvalid(proof({ header: { typ: 'JWT' } }), /typ "dpop\+jwt"/);
    await assertInvalid(proof({ header: { typ: undefined } }), /typ "dpop\+jwt"/);
  });

  it('alg must be asymmetric: an HMAC proof is refused', async () => {
    const secret = await generateSecret('HS256');
    const hmac = await new SignJWT({ jti: 'j', iat: Math.floor(Date.now() / 1000), htm: 'POST', htu: RESOURCE, ath: 'x' })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.publicJwk })
      .sign(secret);
    await assertInvalid(hmac, /asymmetric algorithm/);
  });

  it('alg must be allowed: "none" (an unsigned proof, empty signature) is an invalid proof, 401, not a malformed one', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const unsigned = `${b64({ alg: 'none', typ: 'dpop+jwt', jwk: key.publicJwk })}.${b64({ jti: 'j', iat: 1, htm: 'POST', htu: RESOURCE })}.`;
    // A complete unsecured JWS (RFC 7515 section 7.1, RFC 7518 section 3.6): well formed, its algorithm refused (RFC 9449 section 7.1).
    await assertInvalid(unsigned, /asymmetric algorithm/);
    await assertInvalid(`${unsigned}AAAA`, /asymmetric algorithm/);
    // An allowed algorithm with the signature left out is invalid too: it does not verify.
    const stripped = (await proof()).replace(/[^.]+$/, '');
    await assertInvalid(stripped, /cannot be verified|signature/);
  });

  it('alg must be one of the configured ones', async () => {
    await assertInvalid(proof(), /one of RS256/, { algorithms: ['RS256'] });
  });

  it('the jwk header must be present', async () => {
    await assertInvalid(proof({ header: { jwk: undefined } }), /"jwk" header/);
  });

  it('the jwk header must hold a public key only: a private key is refused', async () => {
    const privateJwk = await exportJWK(key.privateKey);
    assert.ok(privateJwk.d !== undefined);
    await assertInvalid(proof({ header: { jwk: privateJwk } }), /public key only/);
  });

  it('the jwk header must not be a symmetric key', async () => {
    await assertInvalid(proof({ header: { jwk: { kty: 'oct', k: 'c2VjcmV0' } } }), /public key only/);
  });

  it('the signature must verify with the jwk header key', async () => {
    const other = await makeDpopKey('ES256');
    // Signed by another key than the one it names.
    await assertInvalid(proof({ header: { jwk: other.publicJwk } }), /signature is invalid/);
    const good = await proof();
    const [h, p, sig] = good.split('.') as [string, string, string];
    await assertInvalid(`${h}.${p}.${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`, /signature is invalid/);
  });

  it('htm must equal the request method', async () => {
    await assertInvalid(proof({ htm: 'GET' }), /"htm" does not match the request method POST/);
    await assertInvalid(proof({ htm: 'post' }), /"htm"/);
  });

  it('htu must name the canonical resource, not whatever host the request came in on', async () => {
    await assertInvalid(proof({ htu: 'http://127.0.0.1:8080/mcp' }), /"htu" does not name this resource, https:\/\/mcp\.example\.com\/mcp/);
    await assertInvalid(proof({ htu: 'https://mcp.example.com/other' }), /"htu"/);
    await assertInvalid(proof({ htu: 'https://mcp.example.com:8443/mcp' }), /"htu"/);
    await assertInvalid(proof({ htu: 'https://user@mcp.example.com/mcp' }), /"htu"/);
    await assertInvalid(proof({ htu: 'not a url' }), /"htu"/);
  });

  it('iat must be within the window: a stale proof is refused', async () => {
    const stale = Math.floor(Date.now() / 1000) - DPOP_PROOF_WINDOW_SECONDS - 60;
    await assertInvalid(proof({ claims: { iat: stale } }), /"iat" is more than 65 seconds old/);
  });

  it('iat must be within the window: a proof from the future is refused', async () => {
    const future = Math.floor(Date.now() / 1000) + DPOP_PROOF_WINDOW_SECONDS + 60;
    await assertInvalid(proof({ claims: { iat: future } }), /"iat"/);
  });

  it('iat may be ahead of the server by the clock tolerance only, not by the window: a proof never lives past window + 2 x tolerance', async () => {
    const now = 1_700_000_000_000;
    const iat = now / 1000;
    // 55 s ahead was inside the old symmetric window, and kept its jti for 120 s.
    await assertInvalid(proof({ claims: { iat: iat + 55 } }), /^DPoP proof "iat" is more than 5 seconds ahead of the server's time; send a proof dated now, from a synchronized clock \(RFC 9449 section 11\.1\)$/, { now: () => now });
    await assertInvalid(proof({ claims: { iat: iat + 6 } }), /more than 5 seconds ahead/, { now: () => now });
    const ahead = await verifyDpopProof(await proof({ claims: { iat: iat + 5 } }), expected({ now: () => now }));
    assert.equal(ahead.expiresAtMs - now, (DPOP_PROOF_WINDOW_SECONDS + 2 * 5) * 1000);
    // The tolerance is the setting's: with 0, a proof from the next second is refused; the past window keeps its 60 s.
    await assertInvalid(proof({ claims: { iat: iat + 1 } }), /more than 0 seconds ahead/, { now: () => now, clockToleranceSeconds: 0 });
    await verifyDpopProof(await proof({ claims: { iat: iat - DPOP_PROOF_WINDOW_SECONDS } }), expected({ now: () => now, clockToleranceSeconds: 0 }));
    await assertInvalid(proof({ claims: { iat: iat - DPOP_PROOF_WINDOW_SECONDS - 1 } }), /more than 60 seconds old/, { now: () => now, clockToleranceSeconds: 0 });
  });

  it('jti, htm, htu and iat are required', async () => {
    await assertInvalid(proof({ claims: { jti: undefined } }), /"jti"/);
    await assertInvalid(proof({ claims: { jti: 'x'.repeat(129) } }), /"jti" of 1 to 128/);
    await assertInvalid(proof({ claims: { htu: undefined } }), /"htm", "htu"/);
    await assertInvalid(proof({ claims: { iat: undefined } }), /"htm", "htu"/);
  });

  it('ath must be the hash of the access token presented', async () => {
    await assertInvalid(proof({ token: 'another-token' }), /"ath" does not match/);
    await assertInvalid(proof({ token: undefined }), /"ath" does not match/);
    // The hash is over the token's characters, base64url, no padding (RFC 9449 §4.1).
    const ath = createHash('sha256').update(TOKEN).digest('base64url');
    await verifyDpopProof(await proof({ token: undefined, claims: { ath } }), expected());
  });

  it('never quotes the proof or the token in the message', async () => {
    const p = await proof({ htm: 'GET' });
    const error = await verifyDpopProof(p, expected()).catch((e: Error) => e);
    assert.ok(error instanceof InvalidDpopProofError);
    assert.ok(!error.message.includes(p.slice(0, 20)) && !error.message.includes(TOKEN));
  });
});

describe('verifyDpopProof and readDpopProofHeader: the header itself', () => {
  it('a value that is no compact JWS, or whose parts are not JSON, is malformed: 400', async () => {
    for (const bad of ['not-a-jwt', 'a.b', 'a.b.c.d.e', `${'a'.repeat(9000)}.b.c`, 'eyJhIjoxfQ.bm90IGpzb24.c2ln', 'eyJhIjoxfQ.bm90IGpzb24.', '.eyJhIjoxfQ.', 'a+b.c.d']) {
      const error = await assertGuardError(verifyDpopProof(bad, expected()), InvalidRequestError, 'dpop_proof_malformed', 400);
      assert.equal(error.bearerError, 'invalid_request');
    }
  });

  it('two DPoP headers are refused with 400, as two values or joined by a comma', async () => {
    await assertGuardError(() => readDpopProofHeader(['a.b.c', 'd.e.f']), InvalidRequestError, 'dpop_proof_malformed', 400);
    await assertGuardError(() => readDpopProofHeader('a.b.c, d.e.f'), InvalidRequestError, 'dpop_proof_malformed', 400);
  });

  it('no DPoP header, or an empty one, is a missing proof: 401 invalid_dpop_proof', async () => {
    for (const missing of [undefined, [], '', ['']]) {
      const error = await assertGuardError(() => readDpopProofHeader(missing), InvalidDpopProofError, 'dpop_proof_missing', 401);
      assert.equal(error.bearerError, 'invalid_dpop_proof');
    }
    assert.equal(readDpopProofHeader(['a.b.c']), 'a.b.c');
  });
});
