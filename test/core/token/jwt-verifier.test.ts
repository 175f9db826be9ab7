import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT, base64url, exportJWK, exportSPKI, generateKeyPair } from 'jose';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { createJwtVerifier, DEFAULT_JWT_ALGORITHMS, resolveJwtAlgorithms, type JwtVerifierOptions } from '../../../src/core/token/jwt-verifier.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('createJwtVerifier', () => {
  let issuer: TestIssuer;
  let attacker: TestIssuer;

  before(async () => {
    [issuer, attacker] = await Promise.all([
      startTestIssuer({ algs: ['ES256', 'RS256', 'EdDSA'] }),
      startTestIssuer({ algs: ['ES256'] }),
    ]);
  });
  after(async () => {
    await Promise.all([issuer.close(), attacker.close()]);
  });

  function verifier(overrides: Partial<JwtVerifierOptions> = {}) {
    return createJwtVerifier({
      issuer: issuer.issuer,
      audiences: [RESOURCE],
      algorithms: DEFAULT_JWT_ALGORITHMS,
      clockToleranceSeconds: 5,
      strictJwtAccessTokens: false,
      jwksUri: new URL(issuer.jwksUri),
      httpTimeoutMs: 2000,
      jwksCooldownMs: 30_000,
      jwksCacheMaxAgeMs: 600_000,
      ...overrides,
    });
  }
  const now = (): number => Math.floor(Date.now() / 1000);

  for (const alg of ['ES256', 'RS256', 'EdDSA']) {
    it(`accepts a valid ${alg} token`, async () => {
      const token = await issuer.sign({ aud: RESOURCE, sub: 'u1' }, { alg });
      const { payload, protectedHeader } = await verifier()(token);
      assert.equal(payload.sub, 'u1');
      assert.equal(protectedHeader.alg, alg);
    });
  }

  it('gives the same verdict with no promise, once the keys are held, as while fetching them', async () => {
    // A second ES256 key, so that a token without kid matches two keys: jose then lets the signature decide.
    const second = await generateKeyPair('ES256');
    const local = await startTestIssuer({ algs: ['ES256', 'RS256'] });
    local.jwks.keys.push({ ...(await exportJWK(second.publicKey)), kid: 'second', alg: 'ES256', use: 'sig' });
    try {
      const make = () => verifier({ issuer: local.issuer, jwksUri: new URL(local.jwksUri) });
      const warm = make();
      // Held: each key the tokens below name, resolved once through the asynchronous path.
      for (const token of [await local.sign({ aud: RESOURCE }), await local.sign({ aud: RESOURCE }, { alg: 'RS256' })]) await warm(token);
      const cases: Record<string, string> = {
        valid: await local.sign({ aud: RESOURCE }),
        'valid RS256': await local.sign({ aud: RESOURCE }, { alg: 'RS256' }),
        'no kid, two ES256 keys': await local.sign({ aud: RESOURCE }, { header: { kid: undefined } }),
        'unknown kid': await local.sign({ aud: RESOURCE }, { header: { kid: 'rotated-in' } }),
        'kid that is a number': await local.sign({ aud: RESOURCE }, { header: { kid: 7 } }),
        'alg of another key': await local.sign({ aud: RESOURCE }, { header: { kid: 'key-RS256' } }),
        'another audience': await local.sign({ aud: 'https://elsewhere.example.com/mcp' }),
        expired: await local.sign({ aud: RESOURCE, exp: now() - 60 }),
        'typ dpop+jwt': await local.sign({ aud: RESOURCE }, { header: { typ: 'dpop+jwt' } }),
        'signed by another key': await local.sign({ aud: RESOURCE }, { key: second.privateKey }),
        tampered: (await local.sign({ aud: RESOURCE })).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      };
      const verdict = async (run: () => unknown): Promise<string> => {
        try {
          await run();
          return 'accepted';
        } catch (error) {
          return `${(error as Error).constructor.name} ${(error as InvalidTokenError).reason ?? ''}`;
        }
      };
      let decidedAtOnce = 0;
      for (const [name, token] of Object.entries(cases)) {
        const cold = await verdict(() => make()(token));
        const atOnce = await verdict(() => {
          let verified;
          try {
            verified = warm.now(token);
          } catch (error) {
            decidedAtOnce++; // refused at once
            throw error;
          }
          if (verified !== undefined) decidedAtOnce++;
          return verified ?? warm(token);
        });
        assert.equal(atOnce, cold, `${name}: the same verdict either way`);
      }
      assert.equal(cases.valid !== undefined && (await verdict(() => warm.now(cases.valid!) ?? Promise.reject(new Error('waited')))), 'accepted');
      assert.equal(warm.now(cases['no kid, two ES256 keys']!), undefined, 'two matching keys: never decided from memory');
      assert.equal(warm.now(cases['unknown kid']!), undefined, 'a kid never resolved: asked, not guessed');
      // Asked, not answered from memory: two matching keys, an unknown kid, a kid that is a number, a kid of another alg.
      assert.equal(decidedAtOnce, Object.keys(cases).length - 4, 'every other case decided with no promise');
    } finally {
      await local.close();
    }
  });

  it('rejects an expired token', async () => {
    const token = await issuer.sign({ aud: RESOURCE, exp: now() - 60 });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_expired', 401);
  });

  it('rejects a token whose nbf is in the future', async () => {
    const token = await issuer.sign({ aud: RESOURCE, nbf: now() + 60 });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_not_yet_valid', 401);
  });

  it('accepts an nbf within the clock tolerance', async () => {
    const token = await issuer.sign({ aud: RESOURCE, nbf: now() + 3 });
    await verifier()(token);
  });

  it('rejects a token from another issuer', async () => {
    const token = await issuer.sign({ aud: RESOURCE, iss: 'https://other.example.com' });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_issuer', 401);
  });

  it('rejects a token for another resource', async () => {
    const token = await issuer.sign({ aud: 'https://other.example.com/mcp' });
    const error = await assertGuardError(verifier()(token), InvalidTokenError, 'token_audience', 401);
    assert.equal(error.bearerError, 'invalid_token');
  });

  it('rejects a token without aud', async () => {
    const token = await issuer.sign({ sub: 'u1' });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_audience', 401);
  });

  it('accepts an aud array that contains this resource', async () => {
    const token = await issuer.sign({ aud: ['https://other.example.com', RESOURCE] });
    await verifier()(token);
  });

  it('accepts an extra configured audience', async () => {
    const token = await issuer.sign({ aud: 'api://notes' });
    await verifier({ audiences: [RESOURCE, 'api://notes'] })(token);
  });

  it('rejects a token without exp', async () => {
    const token = await issuer.sign({ aud: RESOURCE, exp: undefined });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_claims', 401);
  });

  it('rejects alg none', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const payload = base64url.encode(JSON.stringify({ iss: issuer.issuer, aud: RESOURCE, exp: now() + 60 }));
    await assertGuardError(verifier()(`${header}.${payload}.`), InvalidTokenError, 'token_algorithm', 401);
  });

  it('rejects HS256 signed with the public key bytes (key confusion)', async () => {
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    const secret = new TextEncoder().encode(await exportSPKI(publicKey));
    const token = await new SignJWT({ iss: issuer.issuer, aud: RESOURCE, exp: now() + 60 })
      .setProtectedHeader({ alg: 'HS256', kid: 'key-RS256' })
      .sign(secret);
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_algorithm', 401);
  });

  it('rejects an algorithm outside the allow-list', async () => {
    const token = await issuer.sign({ aud: RESOURCE }, { alg: 'RS256' });
    await assertGuardError(verifier({ algorithms: ['ES256'] })(token), InvalidTokenError, 'token_algorithm', 401);
  });

  it('refetches the JWKS for an unknown kid at most once per cooldown', async () => {
    const verify = verifier({ jwksCooldownMs: 30_000 });
    const before = issuer.requests('/jwks');
    await verify(await issuer.sign({ aud: RESOURCE }));
    assert.equal(issuer.requests('/jwks'), before + 1);
    for (let i = 0; i < 3; i++) {
      const token = await issuer.sign({ aud: RESOURCE }, { header: { kid: `rotated-${i}` } });
      await assertGuardError(verify(token), InvalidTokenError, 'token_signature', 401);
    }
    assert.equal(issuer.requests('/jwks'), before + 1, 'no refetch within the cooldown');

    const eager = verifier({ jwksCooldownMs: 0 });
    await eager(await issuer.sign({ aud: RESOURCE }));
    const afterFirst = issuer.requests('/jwks');
    await assertGuardError(eager(await issuer.sign({ aud: RESOURCE }, { header: { kid: 'rotated' } })), InvalidTokenError, 'token_signature', 401);
    assert.equal(issuer.requests('/jwks'), afterFirst + 1, 'one refetch once the cooldown is over');
  });

  it('rejects typ dpop+jwt', async () => {
    const token = await issuer.sign({ aud: RESOURCE }, { header: { typ: 'dpop+jwt' } });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_type', 401);
  });

  it('accepts typ at+jwt, application/at+jwt and JWT in any case', async () => {
    for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT', 'JWT', 'application/jwt']) {
      await verifier()(await issuer.sign({ aud: RESOURCE }, { header: { typ } }));
    }
  });

  it('passes a sender-constrained token (cnf) on with its claim: the guard judges it with the scheme and proof', async () => {
    const token = await issuer.sign({ aud: RESOURCE, cnf: { jkt: 'abc' } });
    assert.deepEqual((await verifier()(token)).payload.cnf, { jkt: 'abc' });
  });

  describe('strict RFC 9068 mode', () => {
    const full = () => ({ aud: RESOURCE, sub: 'u1', client_id: 'app', jti: 'id-1' });
    it('accepts a complete at+jwt', async () => {
      await verifier({ strictJwtAccessTokens: true })(await issuer.sign(full(), { header: { typ: 'at+jwt' } }));
    });
    it('requires typ at+jwt', async () => {
      const token = await issuer.sign(full(), { header: { typ: 'JWT' } });
      await assertGuardError(verifier({ strictJwtAccessTokens: true })(token), InvalidTokenError, 'token_type', 401);
    });
    it('requires client_id', async () => {
      const token = await issuer.sign({ ...full(), client_id: undefined }, { header: { typ: 'at+jwt' } });
      const error = await assertGuardError(verifier({ strictJwtAccessTokens: true })(token), InvalidTokenError, 'token_claims', 401);
      assert.match(error.message, /client_id/);
    });
    it('requires jti', async () => {
      const token = await issuer.sign({ ...full(), jti: undefined }, { header: { typ: 'at+jwt' } });
      const error = await assertGuardError(verifier({ strictJwtAccessTokens: true })(token), InvalidTokenError, 'token_claims', 401);
      assert.match(error.message, /jti/);
    });
  });

  it('never trusts a key embedded in the token (jwk header)', async () => {
    const attackerKeys = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(attackerKeys.publicKey);
    const claims = { aud: RESOURCE, sub: 'admin' };
    for (const header of [{ jwk, kid: undefined }, { jwk, kid: 'attacker' }, { jwk }]) {
      const token = await issuer.sign(claims, { key: attackerKeys.privateKey, header });
      await assertGuardError(verifier()(token), InvalidTokenError, 'token_signature', 401);
    }
  });

  it('never fetches keys from jku or x5u', async () => {
    const attackerKey = (await generateKeyPair('ES256')).privateKey;
    // The attacker's server publishes their own key under the kid the issuer uses.
    attacker.jwks.keys[0]!.kid = 'key-ES256';
    const header = { jku: attacker.jwksUri, x5u: `${attacker.issuer}/cert.pem` };
    const token = await issuer.sign({ aud: RESOURCE }, { key: attackerKey, header });
    await assertGuardError(verifier()(token), InvalidTokenError, 'token_signature', 401);
    assert.equal(attacker.totalRequests(), 0);
  });

  it('tries each key when the token has no kid and several keys fit', async () => {
    const extra = await generateKeyPair('ES256', { extractable: true });
    const multi = await startTestIssuer({ algs: ['ES256'] });
    try {
      multi.jwks.keys.unshift({ ...(await exportJWK(extra.publicKey)), kid: 'other', alg: 'ES256', use: 'sig' });
      const verify = verifier({ issuer: multi.issuer, jwksUri: new URL(multi.jwksUri) });
      await verify(await multi.sign({ aud: RESOURCE }, { header: { kid: undefined } }));
      const forged = await multi.sign({ aud: RESOURCE }, { header: { kid: undefined }, key: (await generateKeyPair('ES256')).privateKey });
      await assertGuardError(verify(forged), InvalidTokenError, 'token_signature', 401);
    } finally {
      await multi.close();
    }
  });

  it('rejects a malformed token as token_invalid', async () => {
    await assertGuardError(verifier()('abc.def.ghi'), InvalidTokenError, 'token_invalid', 401);
  });

  it('answers 503 with Retry-After when the JWKS endpoint is down', async () => {
    issuer.setJwksDown(true);
    try {
      const error = await assertGuardError(
        verifier()(await issuer.sign({ aud: RESOURCE })),
        AuthorizationServerUnavailableError,
        'authorization_server_unavailable',
        503,
      );
      assert.ok(Number(error.headers['Retry-After']) > 0);
    } finally {
      issuer.setJwksDown(false);
    }
  });

  // A verifier that ignored the timeout would hang here until the test's own timeout fails it.
  it('times out a hanging JWKS endpoint, as 503', { timeout: 10_000 }, async () => {
    issuer.setJwksHang(true);
    try {
      const token = await issuer.sign({ aud: RESOURCE });
      const jwksRequests = issuer.requests('/jwks');
      const error = await assertGuardError(verifier({ httpTimeoutMs: 300 })(token), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      assert.ok(Number(error.headers['Retry-After']) > 0);
      assert.equal(issuer.requests('/jwks'), jwksRequests + 1, 'the JWKS was asked for, and never answered');
    } finally {
      issuer.setJwksHang(false);
    }
  });

  it('never puts the token in an error message', async () => {
    const token = await issuer.sign({ aud: 'https://other.example.com' });
    const error = await assertGuardError(verifier()(token), InvalidTokenError, 'token_audience', 401);
    assert.ok(!error.message.includes(token) && !error.message.includes(token.split('.')[1]!));
  });
});

describe('resolveJwtAlgorithms', () => {
  it('defaults to asymmetric algorithms only', () => {
    assert.ok(!resolveJwtAlgorithms(undefined).some((alg) => alg === 'none' || alg.startsWith('HS')));
  });
  it('refuses none, HS*, unknown names and an empty list, naming the setting', () => {
    for (const bad of [['none'], ['RS256', 'HS256'], ['hs512'], ['RS257'], []]) {
      assert.throws(() => resolveJwtAlgorithms(bad), (e: unknown) => e instanceof ConfigurationError && e.setting === 'algorithms', JSON.stringify(bad));
    }
  });
});
