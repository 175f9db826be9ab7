import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildAuthInfo, readClientId, readScopes } from '../../../src/core/token/auth-info-from-claims.js';
import { InvalidTokenError } from '../../../src/core/kernel/errors.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';

const resource = new URL('https://mcp.example.com/mcp');

describe('buildAuthInfo', () => {
  it('maps claims to the SDK AuthInfo shape', () => {
    const claims = { iss: 'https://as', sub: 'user-1', client_id: 'app', scope: 'read  write', exp: 2_000_000_000, aud: 'x' };
    const auth = buildAuthInfo('tok', claims, { resource, tokenType: 'jwt' });
    assert.equal(auth.token, 'tok');
    assert.equal(auth.clientId, 'app');
    assert.deepEqual(auth.scopes, ['read', 'write']);
    assert.equal(auth.expiresAt, 2_000_000_000);
    assert.equal(auth.resource, resource);
    assert.equal(auth.extra.sub, 'user-1');
    assert.equal(auth.extra.iss, 'https://as');
    assert.equal(auth.extra.tokenType, 'jwt');
    assert.equal(auth.extra.claims, claims);
  });

  it('is frozen, so a cached identity cannot be altered by one request for the next', () => {
    const auth = buildAuthInfo('tok', { scope: 'a' }, { resource, tokenType: 'jwt' });
    assert.ok(Object.isFrozen(auth) && Object.isFrozen(auth.scopes) && Object.isFrozen(auth.extra) && Object.isFrozen(auth.extra.claims));
  });

  it('refuses a sub of the wrong type', async () => {
    await assertGuardError(() => buildAuthInfo('t', { sub: 42 }, { resource, tokenType: 'jwt' }), InvalidTokenError, 'token_claims', 401);
  });

  it('refuses a subject, issuer or client id holding a lone surrogate, which has no UTF-8 form', async () => {
    for (const claims of [{ sub: 'alice\ud800' }, { sub: '\udc00alice' }, { iss: 'https://as\ud800' }, { client_id: 'app\udfff' }, { azp: '\ud800' }]) {
      await assertGuardError(() => buildAuthInfo('t', claims, { resource, tokenType: 'jwt' }), InvalidTokenError, 'token_claims', 401);
    }
    // A well-formed pair (an emoji) and other non-ASCII text are fine: they are encoded where they are sent on.
    const auth = buildAuthInfo('t', { sub: 'alice\u{1F600}', client_id: 'app\u0416', iss: 'https://as' }, { resource, tokenType: 'jwt' });
    assert.equal(auth.extra.sub, 'alice\u{1F600}');
    assert.equal(auth.clientId, 'app\u0416');
  });
});

describe('readScopes', () => {
  it('reads scope as a space-separated string', () => {
    assert.deepEqual(readScopes({ scope: 'a b' }), ['a', 'b']);
  });
  it('reads scp as an array or a string', () => {
    assert.deepEqual(readScopes({ scp: ['a', 'b'] }), ['a', 'b']);
    assert.deepEqual(readScopes({ scp: 'a b' }), ['a', 'b']);
  });
  it('prefers scope over scp, and gives [] without either', () => {
    assert.deepEqual(readScopes({ scope: 'a', scp: ['b'] }), ['a']);
    assert.deepEqual(readScopes({}), []);
  });
  it('keeps only scope tokens: an entry with a space, non-ASCII, a quote or a backslash grants nothing', () => {
    // The security review's tokens: the upstream must not read "basic admin" where the policy saw no admin.
    assert.deepEqual(readScopes({ scp: ['basic admin'] }), []);
    assert.deepEqual(readScopes({ scope: 'basic admin\u0416' }), ['basic']);
    assert.deepEqual(readScopes({ scp: ['read', 'a"b', 'a\\b', 'tab\tx', 'caf\u00e9', ''] }), ['read']);
    assert.deepEqual(readScopes({ scp: 'read\u00a0write other' }), ['other']);
    assert.deepEqual(readScopes({ scope: '  !#[]~  x:y ' }), ['!#[]~', 'x:y']);
  });
  it('refuses other shapes', async () => {
    await assertGuardError(() => readScopes({ scope: ['a'] }), InvalidTokenError, 'token_claims', 401);
    await assertGuardError(() => readScopes({ scp: [1] }), InvalidTokenError, 'token_claims', 401);
  });
});

describe('readClientId', () => {
  it('reads client_id, then azp, else ""', () => {
    assert.equal(readClientId({ client_id: 'a', azp: 'b' }), 'a');
    assert.equal(readClientId({ azp: 'b' }), 'b');
    assert.equal(readClientId({}), '');
    assert.equal(readClientId({ cid: 'okta-client' }), 'okta-client');
    assert.equal(readClientId({ appid: 'entra-app' }), 'entra-app');
    assert.equal(readClientId({ azp: 'b', cid: 'c' }), 'b');
  });
});
