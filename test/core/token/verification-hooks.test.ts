// The token verifier's metrics hooks: what became of each token check, and how each JWKS request ended.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTokenVerifier } from '../../../src/core/token/create-token-verifier.js';
import { ConfigurationError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import type { JwksFetchResult, TokenVerificationResult, TokenVerifierOptions } from '../../../src/core/token/token-verifier.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('token verifier hooks', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer({ algs: ['ES256'] });
  });
  after(() => issuer.close());

  const recorder = (overrides: Partial<TokenVerifierOptions> = {}) => {
    const results: TokenVerificationResult[] = [];
    const fetches: JwksFetchResult[] = [];
    const verifier = createTokenVerifier({
      issuer: issuer.issuer,
      resource: RESOURCE,
      httpTimeoutMs: 1000,
      jwksCooldownMs: 0,
      onTokenVerification: (result) => results.push(result),
      onJwksFetch: (result) => fetches.push(result),
      ...overrides,
    });
    return { verifier, results, fetches };
  };

  it('reports verified, then a cache hit for each reuse, through verify() and cached()', async () => {
    const { verifier, results, fetches } = recorder();
    const token = await issuer.sign({ aud: RESOURCE, sub: 'u1' });
    assert.equal(verifier.cached?.(token), undefined);
    assert.deepEqual(results, [], 'a cache miss alone is no outcome: the verification that follows reports it');
    await verifier.verify(token);
    await verifier.verify(token); // its second use: verified again, and cached
    await verifier.verify(token);
    assert.ok(verifier.cached?.(token));
    assert.deepEqual(results, ['verified', 'verified', 'cache_hit', 'cache_hit']);
    assert.deepEqual(fetches, ['success']);
  });

  it('reports each caller of a shared verification', async () => {
    const { verifier, results } = recorder();
    const token = await issuer.sign({ aud: RESOURCE, sub: 'u2' });
    await Promise.all([verifier.verify(token), verifier.verify(token), verifier.verify(token)]);
    assert.deepEqual(results, ['verified', 'verified', 'verified']);
  });

  it('reports refused for an invalid token and unavailable when the keys cannot be fetched', async () => {
    const { verifier, results, fetches } = recorder();
    const wrongAudience = await issuer.sign({ aud: 'https://elsewhere.example.com/mcp', sub: 'u3' });
    await assert.rejects(verifier.verify(wrongAudience), InvalidTokenError);
    assert.deepEqual(results, ['refused']);
    const unknownKey = await issuer.sign({ aud: RESOURCE, sub: 'u3' }, { header: { kid: 'rotated-in' } });
    issuer.setJwksDown(true);
    try {
      await assert.rejects(verifier.verify(unknownKey), (e: unknown) => (e as { status?: number }).status === 503);
    } finally {
      issuer.setJwksDown(false);
    }
    assert.deepEqual(results, ['refused', 'unavailable']);
    assert.deepEqual(fetches, ['success', 'failure']);
  });

  it('ignores a hook that throws, and refuses a hook that is not a function at start-up', async () => {
    const verifier = createTokenVerifier({
      issuer: issuer.issuer,
      resource: RESOURCE,
      onTokenVerification: () => {
        throw new Error('broken metrics');
      },
      onJwksFetch: () => {
        throw new Error('broken metrics');
      },
    });
    const token = await issuer.sign({ aud: RESOURCE, sub: 'u4' });
    assert.equal((await verifier.verify(token)).extra.sub, 'u4');
    assert.equal((await verifier.verify(token)).extra.sub, 'u4');
    assert.ok(verifier.cached?.(token));
    for (const setting of ['onTokenVerification', 'onJwksFetch'] as const) {
      assert.throws(
        () => createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE, [setting]: 'counter' as never }),
        (e: unknown) => e instanceof ConfigurationError && e.setting === setting,
      );
    }
  });
});
