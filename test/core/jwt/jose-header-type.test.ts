import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joseHeaderType } from '../../../src/core/jwt/jose-header-type.js';

test('typ compares case-insensitively, with or without application/ (RFC 7515 §4.1.9)', () => {
  assert.equal(joseHeaderType('at+jwt'), 'at+jwt');
  assert.equal(joseHeaderType('Application/AT+JWT'), 'at+jwt');
  assert.equal(joseHeaderType('application/dpop+jwt'), 'dpop+jwt');
  // Only a leading prefix is dropped: anything else stays, and then fails the comparison.
  assert.equal(joseHeaderType('x-application/at+jwt'), 'x-application/at+jwt');
  assert.equal(joseHeaderType('application/'), '');
});
