import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AuthorizationServerUnavailableError, ConfigurationError } from '../../../src/core/kernel/errors.js';
import { assertSecureUrl, createIssuerDiscovery, discoverIssuerMetadata, IssuerDiscoveryError } from '../../../src/core/token/issuer-discovery.js';
import { explainFailure } from '../../../src/core/kernel/explain-failure.js';
import { createTokenVerifier } from '../../../src/core/token/create-token-verifier.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

describe('discoverIssuerMetadata', () => {
  let oauth2: TestIssuer;
  let oidc: TestIssuer;
  before(async () => {
    [oauth2, oidc] = await Promise.all([startTestIssuer({ discovery: 'oauth2' }), startTestIssuer({ discovery: 'oidc' })]);
  });
  after(async () => {
    await Promise.all([oauth2.close(), oidc.close()]);
  });

  it('reads RFC 8414 metadata first', async () => {
    const metadata = await discoverIssuerMetadata(oauth2.issuer, 1000);
    assert.equal(metadata.issuer, oauth2.issuer);
    assert.equal(metadata.jwks_uri, oauth2.jwksUri);
    assert.equal(oauth2.requests('/.well-known/oauth-authorization-server'), 1);
    assert.equal(oauth2.requests('/.well-known/openid-configuration'), 0);
  });

  it('falls back to OpenID Connect Discovery', async () => {
    const metadata = await discoverIssuerMetadata(oidc.issuer, 1000);
    assert.equal(metadata.jwks_uri, oidc.jwksUri);
    assert.equal(oidc.requests('/.well-known/oauth-authorization-server'), 1);
    assert.equal(oidc.requests('/.well-known/openid-configuration'), 1);
  });

  it('requires the discovered issuer to equal the configured one exactly', async () => {
    // openid-client alone would accept this: it compares normalized URLs.
    await assert.rejects(discoverIssuerMetadata(`${oauth2.issuer}/`, 1000), (e: unknown) => e instanceof ConfigurationError && e.setting === 'issuer');
  });
});

describe('discovery failures say why', () => {
  /** The operator's line for a failed discovery of `issuer`. */
  const failure = async (issuer: string, timeoutMs = 1000): Promise<string> => {
    try {
      await discoverIssuerMetadata(issuer, timeoutMs);
    } catch (error) {
      return explainFailure(error);
    }
    throw new Error('discovery succeeded');
  };

  it('an issuer that is not an authorization server: each URL tried and its 404', async () => {
    const issuer = await startTestIssuer({ discovery: 'oauth2' });
    try {
      const line = await failure(`${issuer.issuer}/tenant`);
      assert.ok(line.includes(`GET ${issuer.issuer}/.well-known/oauth-authorization-server/tenant: HTTP 404`), line);
      assert.ok(line.includes(`GET ${issuer.issuer}/tenant/.well-known/openid-configuration: HTTP 404`), line);
    } finally {
      await issuer.close();
    }
  });

  it('an issuer that answers 500, and one that is down', async () => {
    const issuer = await startTestIssuer({ discovery: 'oidc' });
    issuer.setDiscoveryDown(true);
    try {
      assert.match(await failure(issuer.issuer), /openid-configuration: HTTP 500/);
    } finally {
      await issuer.close();
    }
    // A port that was just free and has never been connected to (no pooled keep-alive socket).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const down = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const line = await failure(down);
    assert.ok(line.startsWith(`discovery of issuer ${down} failed: GET ${down}/.well-known/oauth-authorization-server: fetch failed (ECONNREFUSED)`), line);
    assert.ok(!line.includes('openid-configuration'), 'a refused connection is not tried twice');
  });

  it('metadata naming another issuer, spelt out; and a trailing-slash mismatch, both spellings', async () => {
    const other = await startTestIssuer({ metadata: { issuer: 'https://elsewhere.example.com' } });
    const slashed = await startTestIssuer({ trailingSlash: true });
    try {
      assert.match(await failure(other.issuer), /the metadata names issuer "https:\/\/elsewhere\.example\.com", which is not the configured issuer/);
      const unslashed = slashed.issuer.slice(0, -1);
      await assert.rejects(discoverIssuerMetadata(unslashed, 1000), (e: unknown) => e instanceof ConfigurationError && e.message.includes(`calls itself "${slashed.issuer}", not "${unslashed}"`));
    } finally {
      await Promise.all([other.close(), slashed.close()]);
    }
  });

  it('a hanging issuer: the timeout, in milliseconds', { timeout: 10_000 }, async () => {
    const issuer = await startTestIssuer();
    issuer.setDiscoveryHang(true);
    try {
      const line = await failure(issuer.issuer, 200);
      assert.match(line, /oauth-authorization-server: no answer within 200 ms/);
    } finally {
      await issuer.close();
    }
  });

  it('the 503 a client gets stays generic, while its cause carries the detail', async () => {
    const issuer = await startTestIssuer({ discovery: 'oauth2' });
    try {
      const verifier = createTokenVerifier({ issuer: `${issuer.issuer}/nope`, resource: 'https://mcp.example.com/mcp', httpTimeoutMs: 1000 });
      const error = await assertGuardError(verifier.ready(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      assert.equal(error.message, 'authorization server metadata is unavailable');
      assert.ok(error.cause instanceof IssuerDiscoveryError);
      assert.equal(error.cause.attempts.length, 2);
      assert.match(explainFailure(error), /^authorization server metadata is unavailable: discovery of issuer .* failed: GET /);
    } finally {
      await issuer.close();
    }
  });

  it('several issuers: ready() reports every one that failed', async () => {
    const up = await startTestIssuer();
    const down = await startTestIssuer();
    const alsoDown = await startTestIssuer();
    down.setDiscoveryDown(true);
    alsoDown.setDiscoveryDown(true);
    try {
      const verifier = createTokenVerifier({ issuers: [up.issuer, down.issuer, alsoDown.issuer], resource: 'https://mcp.example.com/mcp', httpTimeoutMs: 1000 });
      const error = await assertGuardError(verifier.ready(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      const line = explainFailure(error);
      assert.match(line, /2 of 3 issuers could not be discovered/);
      assert.ok(line.includes(down.issuer) && line.includes(alsoDown.issuer) && !line.includes(`issuer ${up.issuer} failed`), line);
    } finally {
      await Promise.all([up.close(), down.close(), alsoDown.close()]);
    }
  });
});

describe('createIssuerDiscovery', () => {
  it('discovers once, also for concurrent callers', async () => {
    const issuer = await startTestIssuer();
    try {
      const discover = createIssuerDiscovery({ issuer: issuer.issuer, timeoutMs: 1000 });
      const [a, b] = await Promise.all([discover(), discover()]);
      assert.equal(a, b);
      await discover();
      assert.equal(issuer.requests('/.well-known/oauth-authorization-server'), 1);
    } finally {
      await issuer.close();
    }
  });

  it('answers 503 on failure, waits out the backoff without calling, then retries and succeeds', async () => {
    const issuer = await startTestIssuer({ discovery: 'both' });
    let nowMs = 1_000_000;
    try {
      issuer.setDiscoveryDown(true);
      const discover = createIssuerDiscovery({ issuer: issuer.issuer, timeoutMs: 1000, retryMs: 5000, now: () => nowMs });
      const first = await assertGuardError(discover(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      assert.equal(first.headers['Retry-After'], '5');
      const calls = issuer.totalRequests();

      issuer.setDiscoveryDown(false);
      nowMs += 3000;
      const second = await assertGuardError(discover(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      assert.equal(second.headers['Retry-After'], '2');
      assert.equal(issuer.totalRequests(), calls, 'no request during the backoff');

      nowMs += 2000;
      const metadata = await discover();
      assert.equal(metadata.issuer, issuer.issuer);
    } finally {
      await issuer.close();
    }
  });

  // A discovery that ignored the timeout would hang here until the test's own timeout fails it.
  it('gives up on a hanging issuer after the timeout, without trying the second location', { timeout: 10_000 }, async () => {
    const issuer = await startTestIssuer({ discovery: 'both' });
    try {
      issuer.setDiscoveryHang(true);
      const discover = createIssuerDiscovery({ issuer: issuer.issuer, timeoutMs: 300 });
      await assertGuardError(discover(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
      assert.equal(issuer.requests('/.well-known/oauth-authorization-server'), 1, 'the first location was asked, and never answered');
      assert.equal(issuer.requests('/.well-known/openid-configuration'), 0);
    } finally {
      await issuer.close();
    }
  });

  it('answers 503 when the issuer is unreachable', async () => {
    // Port 1 on loopback: nothing listens there, and no test server can be given it.
    const discover = createIssuerDiscovery({ issuer: 'http://127.0.0.1:1', timeoutMs: 1000 });
    await assertGuardError(discover(), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
  });
});

describe('assertSecureUrl', () => {
  it('allows https, and http on loopback hosts only', () => {
    assert.equal(assertSecureUrl('issuer', 'https://as.example.com').host, 'as.example.com');
    for (const ok of ['http://127.0.0.1:8080', 'http://127.1.2.3', 'http://[::1]:9000', 'http://localhost:3000']) {
      assert.ok(assertSecureUrl('issuer', ok));
    }
    for (const bad of ['http://as.example.com', 'http://10.0.0.1', 'http://127.0.0.1.nip.io', 'ftp://as', 'not a url']) {
      assert.throws(() => assertSecureUrl('issuer', bad), (e: unknown) => e instanceof ConfigurationError && e.setting === 'issuer', bad);
    }
  });
});
