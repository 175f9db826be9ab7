import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { createTokenVerifier } from '../../../src/core/token/create-token-verifier.js';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';
import type { TokenVerifierOptions } from '../../../src/core/token/token-verifier.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

/** Metadata and JWKS requests an issuer has served. */
function networkUse(issuer: TestIssuer): number {
  return issuer.totalRequests();
}

describe('several issuers, each a real server on loopback', () => {
  // `a` and `b` are trusted; `b` spells its issuer with a trailing slash (as Entra v1 does) and `a` does not
  // (as Entra v2). `outsider` is a working authorization server nobody trusts. All sign with kid "key-ES256".
  let a: TestIssuer;
  let b: TestIssuer;
  let outsider: TestIssuer;
  before(async () => {
    [a, b, outsider] = await Promise.all([startTestIssuer(), startTestIssuer({ trailingSlash: true }), startTestIssuer()]);
  });
  after(() => Promise.all([a.close(), b.close(), outsider.close()]));

  const options = (overrides: Partial<TokenVerifierOptions> = {}): TokenVerifierOptions => ({
    issuers: [a.issuer, b.issuer],
    resource: RESOURCE,
    httpTimeoutMs: 1000,
    ...overrides,
  });

  it('accepts a token from each issuer and tells which one issued it', async () => {
    const verifier = createTokenVerifier(options());
    const fromA = await verifier.verify(await a.sign({ aud: RESOURCE, sub: 'alice' }));
    const fromB = await verifier.verify(await b.sign({ aud: RESOURCE, sub: 'bob' }));
    assert.equal(fromA.extra.iss, a.issuer);
    assert.equal(fromB.extra.iss, b.issuer);
    assert.ok(b.issuer.endsWith('/'));
  });

  it('discovers each issuer lazily and on its own', async () => {
    const before = { a: networkUse(a), b: networkUse(b) };
    const verifier = createTokenVerifier(options());
    assert.deepEqual({ a: networkUse(a), b: networkUse(b) }, before, 'nothing is fetched at construction');
    await verifier.verify(await a.sign({ aud: RESOURCE }));
    assert.ok(networkUse(a) > before.a, 'a token from a fetched what a publishes');
    assert.equal(networkUse(b), before.b, 'and nothing from b');
    await verifier.ready();
    assert.ok(networkUse(b) > before.b, 'ready() discovers every issuer');
  });

  it('refuses a token naming an untrusted issuer before any request to it, and says what was expected', async () => {
    const verifier = createTokenVerifier(options());
    const before = networkUse(outsider);
    const error = await assertGuardError(verifier.verify(await outsider.sign({ aud: RESOURCE })), InvalidTokenError, 'token_issuer', 401);
    assert.equal(networkUse(outsider), before, 'the untrusted issuer was never contacted');
    assert.ok(error.message.includes(outsider.issuer), error.message);
    assert.ok(error.message.includes(a.issuer) && error.message.includes(b.issuer), error.message);
  });

  it("refuses a token whose iss names one issuer but that is signed with another's key", async () => {
    const verifier = createTokenVerifier(options());
    const forged = await b.sign({ aud: RESOURCE, iss: a.issuer });
    await assertGuardError(verifier.verify(forged), InvalidTokenError, 'token_signature', 401);
  });

  it('compares issuers exactly: without its trailing slash, b is not trusted, and the message shows both spellings', async () => {
    const verifier = createTokenVerifier(options());
    const unslashed = b.issuer.slice(0, -1);
    const error = await assertGuardError(verifier.verify(await b.sign({ aud: RESOURCE, iss: unslashed })), InvalidTokenError, 'token_issuer', 401);
    assert.ok(error.message.includes(`${unslashed} (iss)`), error.message);
    assert.ok(error.message.includes(b.issuer), error.message);
  });

  it('refuses a token with no iss, or a malformed one, without a request to anyone', async () => {
    const verifier = createTokenVerifier(options());
    const before = networkUse(a) + networkUse(b);
    await assertGuardError(verifier.verify(await a.sign({ aud: RESOURCE, iss: undefined })), InvalidTokenError, 'token_issuer', 401);
    await assertGuardError(verifier.verify('not.a.jwt'), InvalidTokenError, 'token_invalid', 401);
    assert.equal(networkUse(a) + networkUse(b), before);
  });

  it('introspects opaque tokens at introspection.issuer only; JWTs from untrusted issuers are not introspected', async () => {
    const introspection = { clientId: 'rs-client', clientSecret: 'rs-secret', issuer: b.issuer };
    const verifier = createTokenVerifier(options({ introspection }));
    b.setIntrospection('opaque-b', { active: true, aud: RESOURCE, sub: 'carol', iss: b.issuer, exp: Math.floor(Date.now() / 1000) + 60 });
    const before = a.requests('/introspect');
    const auth = await verifier.verify('opaque-b');
    assert.equal(auth.extra.sub, 'carol');
    assert.equal(auth.extra.tokenType, 'introspection');
    assert.equal(a.requests('/introspect'), before, 'a never introspects');
    const introspected = b.requests('/introspect');
    await assertGuardError(verifier.verify(await outsider.sign({ aud: RESOURCE })), InvalidTokenError, 'token_issuer', 401);
    assert.equal(b.requests('/introspect'), introspected, 'an untrusted JWT is refused, not introspected');
  });

  it('refuses ambiguous settings at start-up, naming each', () => {
    const expectSetting = (build: () => unknown, setting: string, words: RegExp): void => {
      assert.throws(build, (e: unknown) => e instanceof ConfigurationError && e.setting === setting && words.test(e.message), setting);
    };
    expectSetting(() => createTokenVerifier(options({ issuer: a.issuer })), 'issuers', /not both/);
    expectSetting(() => createTokenVerifier(options({ issuers: [] })), 'issuers', /non-empty/);
    expectSetting(() => createTokenVerifier(options({ issuers: [a.issuer, a.issuer] })), 'issuers', /^issuers: entry 2 of 2: "[^"]+" is listed already$/);
    // A password in a bad URL is not repeated: the scheme alone is shown.
    expectSetting(() => createTokenVerifier(options({ issuers: ['ftp://user:pa55word@as.example'] })), 'issuers', /^issuers: must be an https URL, or http on a loopback host \(got ftp:\)$/);
    expectSetting(() => createTokenVerifier(options({ issuers: [a.issuer, 'http://as.example.com'] })), 'issuers', /^issuers: entry 2 of 2: http is only allowed on loopback hosts/);
    // Every bad entry, each by its position, under the list's own setting.
    assert.throws(
      () => createTokenVerifier(options({ issuers: ['not', a.issuer, 'ftp://x.example'] })),
      (e: unknown) =>
        e instanceof ConfigurationError &&
        e.setting === 'issuers' &&
        /^issuers: entry 1 of 3: "not" is not an absolute URL; .*; entry 3 of 3: must be an https URL, or http on a loopback host \(got ftp:\)$/.test(e.message),
    );
    expectSetting(() => createTokenVerifier(options({ jwksUri: a.jwksUri })), 'jwksUri', /several issuers/);
    expectSetting(
      () => createTokenVerifier(options({ introspection: { clientId: 'rs-client', clientSecret: 'rs-secret' } })),
      'introspection.issuer',
      /several issuers/,
    );
    expectSetting(
      () => createTokenVerifier(options({ introspection: { clientId: 'rs-client', clientSecret: 'rs-secret', issuer: outsider.issuer } })),
      'introspection.issuer',
      /one of the configured issuers/,
    );
  });

  it('lists every issuer in authorization_servers, unless overridden', () => {
    const guard = createGuard({ issuers: [a.issuer, b.issuer], resource: RESOURCE });
    assert.deepEqual(guard.metadata.authorization_servers, [a.issuer, b.issuer]);
    const overridden = createGuard({ issuers: [a.issuer, b.issuer], resource: RESOURCE, authorizationServers: [a.issuer] });
    assert.deepEqual(overridden.metadata.authorization_servers, [a.issuer]);
  });

  it('reads several issuers from MCP_AUTH_ISSUER, comma- or space-separated, and names the variable on error', () => {
    const options = loadOptionsFromEnv({ MCP_AUTH_ISSUER: `${a.issuer}, ${b.issuer}`, MCP_AUTH_RESOURCE: RESOURCE });
    assert.deepEqual(options.issuers, [a.issuer, b.issuer]);
    assert.equal(options.issuer, undefined);
    const one = loadOptionsFromEnv({ MCP_AUTH_ISSUER: a.issuer, MCP_AUTH_RESOURCE: RESOURCE });
    assert.equal(one.issuer, a.issuer);
    assert.throws(
      () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: `${a.issuer} ${b.issuer}`, MCP_AUTH_RESOURCE: RESOURCE, MCP_AUTH_INTROSPECTION_CLIENT_ID: 'x', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'y' }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_INTROSPECTION_ISSUER',
    );
    const chosen = loadOptionsFromEnv({
      MCP_AUTH_ISSUER: `${a.issuer} ${b.issuer}`,
      MCP_AUTH_RESOURCE: RESOURCE,
      MCP_AUTH_INTROSPECTION_CLIENT_ID: 'x',
      MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'y',
      MCP_AUTH_INTROSPECTION_ISSUER: b.issuer,
    });
    assert.equal(chosen.introspection?.issuer, b.issuer);
  });
});

describe('refusals that say why (one issuer)', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer();
  });
  after(() => issuer.close());

  it('an audience mismatch names the expected resource and the aud the token carried', async () => {
    const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE });
    const token = await issuer.sign({ aud: ['https://other.example.com/mcp', 'https://third.example.com'] });
    const error = await assertGuardError(verifier.verify(token), InvalidTokenError, 'token_audience', 401);
    assert.ok(error.message.includes(RESOURCE), error.message);
    assert.ok(error.message.includes('https://other.example.com/mcp, https://third.example.com'), error.message);
    assert.ok(!error.message.includes(token), 'never the token');
  });

  it('an issuer mismatch names both, so a trailing slash shows', async () => {
    const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE });
    const error = await assertGuardError(verifier.verify(await issuer.sign({ aud: RESOURCE, iss: `${issuer.issuer}/` })), InvalidTokenError, 'token_issuer', 401);
    assert.ok(error.message.includes(`${issuer.issuer}/ (iss)`), error.message);
    assert.ok(error.message.endsWith(issuer.issuer), error.message);
  });

  it('a token from another identity provider is refused for its issuer, not as an unknown key', async () => {
    const outsider = await startTestIssuer();
    try {
      const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE, jwksCooldownMs: 0 });
      const error = await assertGuardError(verifier.verify(await outsider.sign({ aud: RESOURCE }, { header: { kid: 'elsewhere' } })), InvalidTokenError, 'token_issuer', 401);
      assert.ok(error.message.includes(`${outsider.issuer} (iss)`) && error.message.endsWith(issuer.issuer), error.message);
      assert.equal(outsider.totalRequests(), 0, 'the other identity provider is never contacted');
    } finally {
      await outsider.close();
    }
  });

  it('introspection refusals say the same: expected and actual audience and issuer', async () => {
    const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE, introspection: { clientId: 'rs-client', clientSecret: 'rs-secret', cacheTtlSeconds: 0 } });
    issuer.setIntrospection('opaque-aud', { active: true, aud: 'https://other.example.com/mcp' });
    issuer.setIntrospection('opaque-iss', { active: true, aud: RESOURCE, iss: 'https://elsewhere.example.com' });
    const aud = await assertGuardError(verifier.verify('opaque-aud'), InvalidTokenError, 'token_audience', 401);
    assert.equal(aud.message, `access token was issued for https://other.example.com/mcp (aud), not for this resource: expected ${RESOURCE}`);
    const iss = await assertGuardError(verifier.verify('opaque-iss'), InvalidTokenError, 'token_issuer', 401);
    assert.equal(iss.message, `access token was issued by https://elsewhere.example.com (iss), not by the expected issuer ${issuer.issuer}`);
  });

  it("a token from another identity provider is refused for its issuer even while this issuer's keys are unreachable", async () => {
    const down = await startTestIssuer();
    const outsider = await startTestIssuer();
    down.setDiscoveryDown(true);
    try {
      const verifier = createTokenVerifier({ issuer: down.issuer, resource: RESOURCE });
      const foreign = await outsider.sign({ aud: RESOURCE });
      await assertGuardError(verifier.verify(foreign), InvalidTokenError, 'token_issuer', 401);
      // Its own tokens cannot be checked meanwhile: that is the authorization server's outage, a 503.
      await assertGuardError(verifier.verify(await down.sign({ aud: RESOURCE })), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
    } finally {
      await Promise.all([down.close(), outsider.close()]);
    }
  });

  it('a hostile aud is quoted safely: printable, bounded, without quotes', async () => {
    const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE });
    const error = await assertGuardError(verifier.verify(await issuer.sign({ aud: `"evil"\r\n${'x'.repeat(5000)}` })), InvalidTokenError, 'token_audience', 401);
    assert.ok(error.message.length < 400, `bounded (${error.message.length})`);
    assert.ok(!/["\r\n]/.test(error.message), error.message);
  });
});
