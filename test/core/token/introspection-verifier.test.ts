import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuthorizationServerUnavailableError, InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { createIntrospectionVerifier, type IntrospectionVerifierOptions } from '../../../src/core/token/introspection-verifier.js';
import { discoverIssuerMetadata } from '../../../src/core/token/issuer-discovery.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('createIntrospectionVerifier', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer();
  });
  after(() => issuer.close());

  function verifier(overrides: Partial<IntrospectionVerifierOptions> = {}) {
    return createIntrospectionVerifier({
      issuer: issuer.issuer,
      audiences: [RESOURCE],
      clientId: 'rs-client',
      clientSecret: 'rs-secret',
      metadata: () => discoverIssuerMetadata(issuer.issuer, 1000),
      timeoutMs: 1000,
      clockToleranceSeconds: 5,
      ...overrides,
    });
  }
  const now = (): number => Math.floor(Date.now() / 1000);
  const active = (extra: Record<string, unknown> = {}) => ({
    active: true, iss: issuer.issuer, aud: RESOURCE, sub: 'u1', client_id: 'app', scope: 'notes:read', exp: now() + 60, token_type: 'Bearer', ...extra,
  });

  it('accepts an active token for this resource, authenticating with client_secret_basic', async () => {
    issuer.setIntrospection('opaque-ok', active());
    const before = issuer.requests('/introspect');
    const response = await verifier()('opaque-ok');
    assert.equal(response.sub, 'u1');
    assert.equal(issuer.requests('/introspect'), before + 1);
  });

  it('rejects an inactive token', async () => {
    issuer.setIntrospection('opaque-revoked', { active: false });
    await assertGuardError(verifier()('opaque-revoked'), InvalidTokenError, 'token_inactive', 401);
  });

  it('rejects a token for another resource', async () => {
    issuer.setIntrospection('opaque-other', active({ aud: ['https://other.example.com'] }));
    await assertGuardError(verifier()('opaque-other'), InvalidTokenError, 'token_audience', 401);
  });

  it('rejects an answer without aud (the audience cannot be checked)', async () => {
    issuer.setIntrospection('opaque-noaud', active({ aud: undefined }));
    await assertGuardError(verifier()('opaque-noaud'), InvalidTokenError, 'token_audience', 401);
  });

  it('rejects another issuer, an expired token and a refresh token', async () => {
    issuer.setIntrospection('opaque-iss', active({ iss: 'https://other.example.com' }));
    await assertGuardError(verifier()('opaque-iss'), InvalidTokenError, 'token_issuer', 401);
    issuer.setIntrospection('opaque-exp', active({ exp: now() - 60 }));
    await assertGuardError(verifier()('opaque-exp'), InvalidTokenError, 'token_expired', 401);
    issuer.setIntrospection('opaque-rt', active({ token_type: 'refresh_token' }));
    await assertGuardError(verifier()('opaque-rt'), InvalidTokenError, 'token_type', 401);
  });

  it('answers 503 when the client credentials are refused (a configuration fault, not the caller)', async () => {
    issuer.setIntrospection('opaque-ok', active());
    await assertGuardError(verifier({ clientSecret: 'wrong' })('opaque-ok'), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
  });

  it('answers 503 when the endpoint is unreachable', async () => {
    // Port 1 on loopback: nothing listens there, and no test server can be given it.
    const verify = verifier({ endpoint: new URL('http://127.0.0.1:1/introspect') });
    await assertGuardError(verify('opaque-ok'), AuthorizationServerUnavailableError, 'authorization_server_unavailable', 503);
  });
});
