import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuthorizationServerUnavailableError, ConfigurationError } from '../../src/core/errors.js';
import { assertSecureUrl, createIssuerDiscovery, discoverIssuerMetadata } from '../../src/core/issuer-discovery.js';
import { assertGuardError } from '../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';

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
