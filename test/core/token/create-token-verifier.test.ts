import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTokenVerifier, estimateIdentityBytes } from '../../../src/core/token/create-token-verifier.js';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { cachedOrVerify, type TokenVerifierOptions } from '../../../src/core/token/token-verifier.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('createTokenVerifier', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer({ algs: ['ES256'] });
  });
  after(() => issuer.close());

  const options = (overrides: Partial<TokenVerifierOptions> = {}): TokenVerifierOptions => ({
    issuer: issuer.issuer,
    resource: RESOURCE,
    httpTimeoutMs: 1000,
    ...overrides,
  });

  describe('configuration', () => {
    const expectSetting = (build: () => unknown, setting: string): void => {
      assert.throws(build, (e: unknown) => e instanceof ConfigurationError && e.setting === setting, setting);
    };
    it('refuses an http issuer on a non-loopback host', () => {
      expectSetting(() => createTokenVerifier(options({ issuer: 'http://as.example.com' })), 'issuer');
    });
    it('refuses none and HS* algorithms, naming the setting', () => {
      expectSetting(() => createTokenVerifier(options({ algorithms: ['ES256', 'HS256'] })), 'algorithms');
      expectSetting(() => createTokenVerifier(options({ algorithms: ['none'] })), 'algorithms');
    });
    it('refuses other bad settings, naming each', () => {
      expectSetting(() => createTokenVerifier(options({ resource: '' })), 'resource');
      expectSetting(() => createTokenVerifier(options({ resource: 'not a url' })), 'resource');
      expectSetting(() => createTokenVerifier(options({ jwksUri: 'http://keys.example.com/jwks' })), 'jwksUri');
      expectSetting(() => createTokenVerifier(options({ httpTimeoutMs: 0 })), 'httpTimeoutMs');
      expectSetting(() => createTokenVerifier(options({ clockToleranceSeconds: -1 })), 'clockToleranceSeconds');
      expectSetting(() => createTokenVerifier(options({ audiences: [''] })), 'audiences');
      expectSetting(() => createTokenVerifier(options({ introspection: { clientId: 'a', clientSecret: '' } })), 'introspection.clientSecret');
      expectSetting(() => createTokenVerifier(options({ tokenCache: { maxEntries: 0 } })), 'tokenCache.maxEntries');
    });
    it('does not touch the network when constructed', () => {
      const before = issuer.totalRequests();
      createTokenVerifier(options());
      assert.equal(issuer.totalRequests(), before);
    });
  });

  it('discovers the issuer once and returns the SDK-shaped AuthInfo', async () => {
    const fresh = await startTestIssuer({ algs: ['ES256'] });
    try {
      const verifier = createTokenVerifier(options({ issuer: fresh.issuer }));
      const token = await fresh.sign({ aud: RESOURCE, sub: 'u1', client_id: 'app', scope: 'notes:read notes:write' });
      const auth = await verifier.verify(token);
      assert.equal(auth.token, token);
      assert.equal(auth.clientId, 'app');
      assert.deepEqual(auth.scopes, ['notes:read', 'notes:write']);
      assert.equal(auth.resource?.href, new URL(RESOURCE).href);
      assert.equal(auth.extra.sub, 'u1');
      assert.equal(auth.extra.iss, fresh.issuer);
      assert.equal(auth.extra.tokenType, 'jwt');
      assert.equal(typeof auth.expiresAt, 'number');
      await verifier.verify(await fresh.sign({ aud: RESOURCE }));
      assert.equal(fresh.requests('/.well-known/oauth-authorization-server'), 1);
    } finally {
      await fresh.close();
    }
  });

  it('reads scopes from scp and the client from azp', async () => {
    const verifier = createTokenVerifier(options());
    const auth = await verifier.verify(await issuer.sign({ aud: RESOURCE, scp: ['a', 'b'], azp: 'spa' }));
    assert.deepEqual(auth.scopes, ['a', 'b']);
    assert.equal(auth.clientId, 'spa');
  });

  it('caches a JWT on its second use, and then serves it without verifying it again', async () => {
    const verifier = createTokenVerifier(options());
    const token = await issuer.sign({ aud: RESOURCE });
    const once = await verifier.verify(token);
    assert.equal(verifier.cached?.(token), undefined, 'a token seen once is not cached');
    const first = await verifier.verify(token);
    assert.notEqual(first.extra, once.extra, 'verified again on its second use');
    assert.equal(verifier.cached?.(token)?.extra, first.extra, 'and cached then');
    issuer.setJwksDown(true); // any verification work would now fail
    try {
      const again = await verifier.verify(token);
      assert.equal(again.extra, first.extra, 'the cached identity, shared');
      assert.equal(again.token, token);
    } finally {
      issuer.setJwksDown(false);
    }
  });

  it('cachedOrVerify answers a cached token synchronously and verifies any other, also for a custom verifier', async () => {
    const verifier = createTokenVerifier(options());
    const token = await issuer.sign({ aud: RESOURCE, jti: 'cached-or-verify' });
    const first = cachedOrVerify(verifier, token);
    assert.ok(first instanceof Promise, 'the first token waits for the keys');
    const firstAuth = await first;
    const second = cachedOrVerify(verifier, token);
    assert.ok(!(second instanceof Promise), 'its second use is verified with the key held, synchronously, and cached');
    assert.notEqual(second.extra, firstAuth.extra, 'verified again');
    const cachedAuth = second;
    issuer.setJwksDown(true);
    try {
      const third = cachedOrVerify(verifier, token);
      assert.ok(!(third instanceof Promise), 'then it is answered from the cache, with no promise');
      assert.equal(third.extra, cachedAuth.extra);
    } finally {
      issuer.setJwksDown(false);
    }
    // Refusals known at once are thrown; through verify() they are rejections, as always.
    assert.throws(() => cachedOrVerify(verifier, 'not.a.jwt'), InvalidTokenError);
    await assert.rejects(verifier.verify('not.a.jwt'), InvalidTokenError);
    // An opaque token may need introspection: always the asynchronous way.
    const opaque = cachedOrVerify(verifier, 'opaque');
    assert.ok(opaque instanceof Promise);
    await assert.rejects(opaque, InvalidTokenError);
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.${'A'.repeat(86)}`;
    assert.throws(() => cachedOrVerify(verifier, forged), (e: unknown) => e instanceof InvalidTokenError && e.reason === 'token_signature');
    await assert.rejects(verifier.verify(forged), (e: unknown) => e instanceof InvalidTokenError && e.reason === 'token_signature');

    // A verifier of the operator's own, with only verify() and cached().
    const calls: string[] = [];
    const custom = {
      verify: async (t: string) => (calls.push('verify'), { ...cachedAuth, token: t }),
      cached: (t: string) => (calls.push('cached'), t === 'known' ? cachedAuth : undefined),
      ready: async () => {},
    };
    assert.equal(cachedOrVerify(custom, 'known'), cachedAuth);
    assert.equal((await cachedOrVerify(custom, 'other')).token, 'other');
    assert.deepEqual(calls, ['cached', 'cached', 'verify']);
    // A thenable that is not a native promise is made one, so that callers can tell the two answers apart.
    const thenable = { verify: (t: string) => ({ then: (resolve: (auth: AuthInfo) => void) => resolve({ ...cachedAuth, token: t }) }) as unknown as Promise<AuthInfo>, ready: async () => {} };
    const answer = cachedOrVerify(thenable, 'late');
    assert.ok(answer instanceof Promise);
    assert.equal((await answer).token, 'late');
  });

  it('keeps at most tokenCache.maxEntries tokens, evicting the least recently used', async () => {
    const verifier = createTokenVerifier(options({ tokenCache: { maxEntries: 2 } }));
    const tokens = await Promise.all([1, 2, 3].map((n) => issuer.sign({ aud: RESOURCE, jti: `t${n}` })));
    // Each used twice: a JWT enters the cache on its second use.
    const twice = async (token: string): Promise<AuthInfo> => (await verifier.verify(token), verifier.verify(token));
    const a = await twice(tokens[0]!);
    const b = await twice(tokens[1]!);
    const c = await twice(tokens[2]!);
    assert.equal((await verifier.verify(tokens[2]!)).extra, c.extra);
    assert.equal((await verifier.verify(tokens[1]!)).extra, b.extra);
    assert.notEqual((await verifier.verify(tokens[0]!)).extra, a.extra, 'the first token was evicted and verified again');
  });

  it('keeps a reused token cached while tokens used once each pass through', async () => {
    const verifier = createTokenVerifier(options({ tokenCache: { maxEntries: 2 } }));
    const reused = await issuer.sign({ aud: RESOURCE, jti: 'reused' });
    await verifier.verify(reused);
    const identity = await verifier.verify(reused);
    // A token minted for each request, as some clients do: 50 of them, twenty-five times the cache's room.
    const once = await Promise.all(Array.from({ length: 50 }, (_, i) => issuer.sign({ aud: RESOURCE, jti: `once-${i}` })));
    for (const token of once) await verifier.verify(token);
    assert.equal(verifier.cached?.(reused)?.extra, identity.extra, 'the reused token was not evicted');
    // A Bloom filter's false positive could admit one on its first use (about once in 3 000 runs).
    assert.ok(once.filter((token) => verifier.cached?.(token) !== undefined).length <= 1, 'no token used once was cached');
  });

  it('bounds the cache in bytes with large tokens, keeping the most recent', async () => {
    const maxBytes = 1_048_576;
    // Discovery waits longer than the file's other tests allow: signing 400 large tokens at once keeps a busy machine
    // (the suite runs files side by side) from answering the issuer's metadata within a second.
    const verifier = createTokenVerifier(options({ tokenCache: { maxEntries: 100_000, maxBytes }, httpTimeoutMs: 10_000 }));
    // ~6 KB of claims each, as identity providers with group or role claims issue them.
    const groups = Array.from({ length: 150 }, (_, i) => `group-${i.toString().padStart(4, '0')}-${'g'.repeat(24)}`);
    const tokens = await Promise.all(Array.from({ length: 400 }, (_, i) => issuer.sign({ aud: RESOURCE, jti: `big-${i}`, groups })));
    assert.ok(tokens[0]!.length > 6_000, `token size ${tokens[0]!.length}`);
    for (const token of tokens) await verifier.verify(token).then(() => verifier.verify(token));
    const held = tokens.filter((token) => verifier.cached?.(token) !== undefined).length;
    const perEntry = estimateIdentityBytes(JSON.parse(Buffer.from(tokens[0]!.split('.')[1]!, 'base64url').toString()) as unknown);
    assert.ok(held > 0 && held <= Math.floor(maxBytes / perEntry), `${held} entries of ~${perEntry} bytes within ${maxBytes}`);
    assert.ok(held < tokens.length, 'older entries were evicted');
    assert.ok(tokens.slice(-held).every((token) => verifier.cached?.(token) !== undefined), 'the most recent ones are those kept');
    const served = verifier.cached?.(tokens.at(-1)!);
    assert.equal(served?.token, tokens.at(-1), 'each answer carries the token presented');
  });

  it('refuses a sender-constrained token on its own, and returns it with boundTokens: return for the caller to check', async () => {
    const bound = await issuer.sign({ aud: RESOURCE, cnf: { jkt: 'k'.repeat(43) } });
    const refused = await assertGuardError(createTokenVerifier(options()).verify(bound), InvalidTokenError, 'token_binding', 401);
    assert.match(refused.message, /sender-constrained/);
    const returned = await createTokenVerifier(options({ boundTokens: 'return' })).verify(bound);
    assert.deepEqual(returned.extra.claims['cnf'], { jkt: 'k'.repeat(43) });
    assert.throws(() => createTokenVerifier(options({ boundTokens: 'maybe' as 'refuse' })), (e: unknown) => e instanceof ConfigurationError && e.setting === 'boundTokens');
  });

  it('verifies every time with tokenCache: false', async () => {
    const verifier = createTokenVerifier(options({ tokenCache: false }));
    const token = await issuer.sign({ aud: RESOURCE });
    assert.notEqual((await verifier.verify(token)).extra, (await verifier.verify(token)).extra);
  });

  it('does no discovery when jwksUri is configured', async () => {
    const fresh = await startTestIssuer({ algs: ['ES256'] });
    try {
      const verifier = createTokenVerifier(options({ issuer: fresh.issuer, jwksUri: fresh.jwksUri }));
      await verifier.ready();
      await verifier.verify(await fresh.sign({ aud: RESOURCE }));
      assert.equal(fresh.requests('/.well-known/oauth-authorization-server'), 0);
      assert.equal(fresh.requests('/jwks'), 1);
    } finally {
      await fresh.close();
    }
  });

  it('answers 503 when discovery fails, from verify and from ready', async () => {
    const down = await startTestIssuer({ algs: ['ES256'] });
    try {
      down.setDiscoveryDown(true);
      const verifier = createTokenVerifier(options({ issuer: down.issuer }));
      await assertGuardError(verifier.ready(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      const token = await down.sign({ aud: RESOURCE });
      await assertGuardError(verifier.verify(token), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
    } finally {
      await down.close();
    }
  });

  it('refuses opaque tokens and JWEs when introspection is not configured', async () => {
    const verifier = createTokenVerifier(options());
    await assertGuardError(verifier.verify('opaque-token'), InvalidTokenError, 'token_invalid', 401);
    await assertGuardError(verifier.verify('a.b.c.d.e'), InvalidTokenError, 'token_invalid', 401);
  });

  describe('with introspection', () => {
    const introspection = { clientId: 'rs-client', clientSecret: 'rs-secret' };

    it('introspects an opaque token, caches the answer, and still verifies JWTs locally', async () => {
      const verifier = createTokenVerifier(options({ introspection }));
      issuer.setIntrospection('opaque-1', { active: true, aud: RESOURCE, iss: issuer.issuer, sub: 'u2', scope: 'x y', client_id: 'cli', exp: Math.floor(Date.now() / 1000) + 60 });
      const before = issuer.requests('/introspect');
      const auth = await verifier.verify('opaque-1');
      assert.equal(auth.extra.tokenType, 'introspection');
      assert.deepEqual(auth.scopes, ['x', 'y']);
      assert.equal(auth.clientId, 'cli');
      assert.equal((await verifier.verify('opaque-1')).extra, auth.extra);
      assert.equal(issuer.requests('/introspect'), before + 1);

      const jwt = await verifier.verify(await issuer.sign({ aud: RESOURCE }));
      assert.equal(jwt.extra.tokenType, 'jwt');
      assert.equal(issuer.requests('/introspect'), before + 1);
    });

    it('introspects a new token once for concurrent requests', async () => {
      const verifier = createTokenVerifier(options({ introspection }));
      issuer.setIntrospection('opaque-burst', { active: true, aud: RESOURCE });
      const before = issuer.requests('/introspect');
      const results = await Promise.all(Array.from({ length: 5 }, () => verifier.verify('opaque-burst')));
      assert.ok(results.every((r) => r === results[0]));
      assert.equal(issuer.requests('/introspect'), before + 1);
    });

    it('sends a JWE to introspection', async () => {
      const verifier = createTokenVerifier(options({ introspection }));
      const before = issuer.requests('/introspect');
      await assertGuardError(verifier.verify('a.b.c.d.e'), InvalidTokenError, 'token_inactive', 401);
      assert.equal(issuer.requests('/introspect'), before + 1);
    });

    it('rejects an introspected token for another resource', async () => {
      const verifier = createTokenVerifier(options({ introspection }));
      issuer.setIntrospection('opaque-2', { active: true, aud: 'https://other.example.com' });
      await assertGuardError(verifier.verify('opaque-2'), InvalidTokenError, 'token_audience', 401);
    });
  });

  describe('one trusted issuer', () => {
    it('a token from another issuer is refused for its issuer, before its signature and without a JWKS fetch', async () => {
      // The outsider's key has the same kid as the trusted issuer's (key-ES256), as independent servers' keys may.
      const outsider = await startTestIssuer({ algs: ['ES256'] });
      try {
        const verifier = createTokenVerifier(options());
        await verifier.verify(await issuer.sign({ aud: RESOURCE }));
        const fetches = issuer.requests('/jwks');
        const expected = `access token was issued by ${outsider.issuer} (iss), which is not a trusted issuer: expected one of ${issuer.issuer}`;
        const colliding = await assertGuardError(verifier.verify(await outsider.sign({ aud: RESOURCE })), InvalidTokenError, 'token_issuer', 401);
        assert.equal(colliding.message, expected);
        const unknownKid = await assertGuardError(verifier.verify(await outsider.sign({ aud: RESOURCE }, { header: { kid: 'elsewhere' } })), InvalidTokenError, 'token_issuer', 401);
        assert.equal(unknownKid.message, expected);
        assert.equal(issuer.requests('/jwks'), fetches, 'no JWKS fetch for a token the issuer never signed');
      } finally {
        await outsider.close();
      }
    });
  });
});
