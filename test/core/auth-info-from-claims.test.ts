import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildAuthInfo, readClientId, readScopes } from '../../src/core/auth-info-from-claims.js';
import { InvalidTokenError } from '../../src/core/errors.js';
import { assertGuardError } from '../helpers/assert-guard-error.js';

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
