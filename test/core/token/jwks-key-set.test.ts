// The JWKS backoff against a real loopback JWKS server that counts its hits: at most one fetch per cooldown,
// whether fetches succeed or fail, and keys already fetched keep working through an outage.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { base64url, errors as joseErrors } from 'jose';
import { AuthorizationServerUnavailableError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { createJwksKeySet, type JwksKeySet } from '../../../src/core/token/jwks-key-set.js';
import { createJwtVerifier, DEFAULT_JWT_ALGORITHMS, type JwtVerifierOptions } from '../../../src/core/token/jwt-verifier.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const KNOWN = { alg: 'ES256', kid: 'key-ES256' };
const NO_TOKEN = { payload: '', signature: '' };

/** A token with an unknown `kid` and a signature that is not one: it costs an attacker nothing. */
function junkToken(issuer: string, kid: string): string {
  const part = (value: unknown): string => base64url.encode(JSON.stringify(value));
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'ES256', kid })}.${part({ iss: issuer, aud: RESOURCE, exp: now + 300 })}.${base64url.encode('not a signature')}`;
}

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let time = start;
  return { now: () => time, advance: (ms) => void (time += ms) };
}

async function assertUnavailable(promise: Promise<unknown>, maxRetryAfter: number): Promise<void> {
  const error = await assertGuardError(promise, AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
  const retryAfter = Number(error.headers['Retry-After']);
  assert.ok(retryAfter >= 1 && retryAfter <= maxRetryAfter, `Retry-After ${retryAfter} within 1..${maxRetryAfter}`);
}

describe('createJwksKeySet', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer({ algs: ['ES256'] });
  });
  after(async () => {
    await issuer.close();
  });

  function keySet(clock: { now: () => number }, overrides: { cooldownMs?: number; maxAgeMs?: number; jwksUri?: () => Promise<URL> } = {}): JwksKeySet {
    return createJwksKeySet({
      jwksUri: overrides.jwksUri ?? new URL(issuer.jwksUri),
      httpTimeoutMs: 2_000,
      cooldownMs: overrides.cooldownMs ?? 30_000,
      maxAgeMs: overrides.maxAgeMs ?? 600_000,
      now: clock.now,
    });
  }
  const hits = (): number => issuer.requests('/jwks');

  it('fetches nothing until the first call, then once for concurrent callers', async () => {
    const before = hits();
    const keys = keySet(manualClock());
    assert.equal(hits(), before);
    const found = await Promise.all(Array.from({ length: 20 }, () => keys(KNOWN, NO_TOKEN)));
    assert.equal(found.length, 20);
    assert.equal(found[0]?.type, 'public');
    assert.equal(hits(), before + 1);
  });

  it('knows, with no promise, only the keys it resolved, and only while its set is fresh', async () => {
    const clock = manualClock();
    const keys = keySet(clock, { maxAgeMs: 60_000 });
    assert.equal(keys.known(KNOWN), undefined, 'nothing before the first fetch');
    const resolved = await keys(KNOWN, NO_TOKEN);
    assert.equal(keys.known(KNOWN), resolved, 'the key the call resolved');
    assert.equal(keys.known({ alg: 'ES256', kid: 'another' }), undefined, 'a kid it never resolved');
    assert.equal(keys.known({ alg: 'ES384', kid: KNOWN.kid }), undefined, 'another algorithm');
    assert.equal(keys.known({ alg: 'ES256', kid: 7 as unknown as string }), undefined, 'a kid that is not a string');
    assert.equal(keys.known({ alg: 'ES256' }), undefined, 'no kid: not resolved yet');
    assert.equal(await keys({ alg: 'ES256' }, NO_TOKEN), resolved, 'the only ES256 key');
    assert.equal(keys.known({ alg: 'ES256' }), resolved);
    await assert.rejects(keys({ alg: 'ES256', kid: 'junk' }, NO_TOKEN));
    assert.equal(keys.known({ alg: 'ES256', kid: 'junk' }), undefined, 'a refused kid is not remembered');
    clock.advance(60_000);
    assert.equal(keys.known(KNOWN), undefined, 'a set past maxAgeMs is asked again');
    const before = hits();
    assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public');
    assert.equal(hits(), before + 1, 'and refetched');
    assert.ok(keys.known(KNOWN), 'then known from the new set');
  });

  it('after a failed fetch, waits the cooldown before the next one, then resumes', async () => {
    const clock = manualClock();
    const keys = keySet(clock, { cooldownMs: 30_000 });
    const before = hits();
    issuer.setJwksDown(true);
    try {
      await assertUnavailable(keys(KNOWN, NO_TOKEN), 30);
      for (let i = 0; i < 50; i++) await assertUnavailable(keys({ alg: 'ES256', kid: `junk-${i}` }, NO_TOKEN), 30);
      assert.equal(hits(), before + 1, 'one fetch, then none within the cooldown');
      clock.advance(29_999);
      issuer.setJwksDown(false);
      await assertUnavailable(keys(KNOWN, NO_TOKEN), 1);
      assert.equal(hits(), before + 1, 'the JWKS recovered, yet the cooldown still holds');
      clock.advance(1);
      assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public');
      assert.equal(hits(), before + 2, 'fetching resumed once the cooldown was over');
    } finally {
      issuer.setJwksDown(false);
    }
  });

  it('serves a known kid from the fetched set while refetches fail; unknown kids get 503, not 401', async () => {
    const clock = manualClock();
    const keys = keySet(clock, { cooldownMs: 1_000 });
    await keys(KNOWN, NO_TOKEN);
    const before = hits();
    // Within the cooldown of a successful fetch, an unknown kid is the token's problem.
    await assert.rejects(keys({ alg: 'ES256', kid: 'rotated' }, NO_TOKEN), joseErrors.JWKSNoMatchingKey);
    assert.equal(hits(), before);

    issuer.setJwksDown(true);
    try {
      clock.advance(1_000);
      await assertUnavailable(keys({ alg: 'ES256', kid: 'rotated' }, NO_TOKEN), 1);
      assert.equal(hits(), before + 1, 'the unknown kid refetched once the cooldown allowed');
      for (let i = 0; i < 20; i++) {
        // A key rotated in cannot be told from a junk kid while the JWKS fails: 503, so the client retries.
        await assertUnavailable(keys({ alg: 'ES256', kid: `junk-${i}` }, NO_TOKEN), 1);
        assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public', 'the cached key keeps working');
      }
      assert.equal(hits(), before + 1);
    } finally {
      issuer.setJwksDown(false);
    }
  });

  it('stops using a set older than maxAgeMs once it cannot be refreshed', async () => {
    const clock = manualClock();
    const keys = keySet(clock, { cooldownMs: 1_000, maxAgeMs: 10_000 });
    await keys(KNOWN, NO_TOKEN);
    const before = hits();
    issuer.setJwksDown(true);
    try {
      clock.advance(10_000);
      await assertUnavailable(keys(KNOWN, NO_TOKEN), 1);
      await assertUnavailable(keys(KNOWN, NO_TOKEN), 1);
      assert.equal(hits(), before + 1);
    } finally {
      issuer.setJwksDown(false);
    }
    clock.advance(1_000);
    assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public');
    assert.equal(hits(), before + 2);
  });

  it('keeps a set younger than the cooldown when maxAgeMs is shorter', async () => {
    const clock = manualClock();
    const keys = keySet(clock, { cooldownMs: 5_000, maxAgeMs: 0 });
    await keys(KNOWN, NO_TOKEN);
    const before = hits();
    clock.advance(4_999);
    assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public');
    assert.equal(hits(), before, 'no fetch within the cooldown, and no 503 either');
    clock.advance(1);
    await keys(KNOWN, NO_TOKEN);
    assert.equal(hits(), before + 1);
  });

  it('does not spend the cooldown on a failed discovery, which backs off on its own', async () => {
    const clock = manualClock();
    let discoveries = 0;
    const keys = keySet(clock, {
      jwksUri: async () => {
        discoveries++;
        if (discoveries === 1) throw new AuthorizationServerUnavailableError('authorization server metadata is unavailable', 7);
        return new URL(issuer.jwksUri);
      },
    });
    const before = hits();
    const error = await assertGuardError(keys(KNOWN, NO_TOKEN), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
    assert.equal(error.headers['Retry-After'], '7', "discovery's own error and Retry-After");
    assert.equal(hits(), before);
    assert.equal((await keys(KNOWN, NO_TOKEN)).type, 'public');
    assert.equal(hits(), before + 1);
  });
});

describe('createJwtVerifier during a JWKS outage (real time)', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer({ algs: ['ES256'] });
  });
  after(async () => {
    await issuer.close();
  });
  function verifier(overrides: Partial<JwtVerifierOptions> = {}) {
    return createJwtVerifier({
      issuer: issuer.issuer,
      audiences: [RESOURCE],
      algorithms: DEFAULT_JWT_ALGORITHMS,
      clockToleranceSeconds: 5,
      strictJwtAccessTokens: false,
      jwksUri: new URL(issuer.jwksUri),
      httpTimeoutMs: 2_000,
      jwksCooldownMs: 60_000,
      jwksCacheMaxAgeMs: 600_000,
      ...overrides,
    });
  }

  it('100 junk tokens with unknown kids while the JWKS answers 500 cause one fetch', { timeout: 20_000 }, async () => {
    const verify = verifier();
    const before = issuer.requests('/jwks');
    issuer.setJwksDown(true);
    try {
      // Half at once, half one after the other.
      await Promise.all(Array.from({ length: 50 }, (_, i) => assertUnavailable(verify(junkToken(issuer.issuer, `burst-${i}`)), 60)));
      for (let i = 0; i < 50; i++) await assertUnavailable(verify(junkToken(issuer.issuer, `serial-${i}`)), 60);
      assert.equal(issuer.requests('/jwks'), before + 1);
    } finally {
      issuer.setJwksDown(false);
    }
  });

  it('a token whose kid is cached keeps working; fetching resumes after the cooldown', { timeout: 20_000 }, async () => {
    const cooldownMs = 300;
    const verify = verifier({ jwksCooldownMs: cooldownMs });
    const token = await issuer.sign({ aud: RESOURCE });
    await verify(token);
    const before = issuer.requests('/jwks');
    issuer.setJwksDown(true);
    try {
      await new Promise((resolve) => setTimeout(resolve, cooldownMs + 50));
      const started = Date.now();
      await Promise.all(Array.from({ length: 100 }, (_, i) => assertUnavailable(verify(junkToken(issuer.issuer, `junk-${i}`)), 1)));
      const elapsed = Date.now() - started;
      // Fetches start at least a cooldown apart: a slow machine may fit a second window into the burst, no more.
      const fetches = issuer.requests('/jwks') - before;
      assert.ok(fetches >= 1 && fetches <= 1 + Math.floor(elapsed / cooldownMs), `${fetches} fetches in ${elapsed} ms`);
      assert.equal((await verify(token)).payload.aud, RESOURCE, 'the cached key keeps working');
    } finally {
      issuer.setJwksDown(false);
    }
    const another = await issuer.sign({ aud: RESOURCE, jti: 'another' });
    await new Promise((resolve) => setTimeout(resolve, cooldownMs + 50));
    const atRecovery = issuer.requests('/jwks');
    await assertGuardError(verify(junkToken(issuer.issuer, 'after-recovery')), InvalidTokenError, 'token_signature', 401);
    assert.equal(issuer.requests('/jwks'), atRecovery + 1, 'one fetch after the cooldown, which succeeded');
    assert.equal((await verify(another)).payload.aud, RESOURCE);
  });
});
