// How long a revoked opaque token stays usable: the introspection cache TTL, from the environment, against a
// real introspection endpoint on loopback that counts its calls.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTokenVerifier } from '../../../src/core/token/create-token-verifier.js';
import { InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'http://127.0.0.1:3000/mcp';

describe('revocation window of opaque tokens', () => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await startTestIssuer();
  });
  after(() => issuer.close());

  function verifierFromEnv(extra: Record<string, string>) {
    const options = loadOptionsFromEnv({
      MCP_AUTH_ISSUER: issuer.issuer,
      MCP_AUTH_RESOURCE: RESOURCE,
      MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs-client',
      MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'rs-secret',
      ...extra,
    });
    return createTokenVerifier(options);
  }
  const active = () => ({
    active: true, iss: issuer.issuer, aud: RESOURCE, sub: 'u1', client_id: 'app', scope: 'notes:read', exp: Math.floor(Date.now() / 1000) + 300,
  });

  it('with MCP_AUTH_INTROSPECTION_CACHE_TTL=0, a revoked token is refused on the very next request', async () => {
    const verifier = verifierFromEnv({ MCP_AUTH_INTROSPECTION_CACHE_TTL: '0' });
    issuer.setIntrospection('opaque-ttl0', active());
    const before = issuer.requests('/introspect');
    assert.equal((await verifier.verify('opaque-ttl0')).extra.sub, 'u1');
    assert.equal(verifier.cached?.('opaque-ttl0'), undefined, 'nothing cached');
    await verifier.verify('opaque-ttl0');
    assert.equal(issuer.requests('/introspect'), before + 2, 'every request is introspected');
    issuer.setIntrospection('opaque-ttl0', { active: false });
    await assertGuardError(verifier.verify('opaque-ttl0'), InvalidTokenError, 'token_inactive', 401);
    assert.equal(issuer.requests('/introspect'), before + 3);
  });

  it('by default, a revoked token stays usable while its introspection answer is cached', async () => {
    const verifier = verifierFromEnv({});
    issuer.setIntrospection('opaque-default', active());
    const before = issuer.requests('/introspect');
    await verifier.verify('opaque-default');
    issuer.setIntrospection('opaque-default', { active: false });
    const again = await verifier.verify('opaque-default');
    assert.equal(again.token, 'opaque-default', 'still accepted: the window the README documents');
    assert.equal(issuer.requests('/introspect'), before + 1);
  });
});
