// Reading the access token: what an MCP client needs to hear for each way of sending (or not sending) one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readAccessToken } from '../../../src/core/token/authorization-header.js';
import { InvalidRequestError, MissingTokenError } from '../../../src/core/kernel/errors.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln-_~+/==';
const dpop = { dpop: true };

describe('readAccessToken: the schemes', () => {
  it('reads Bearer, and DPoP when enabled, in any case', () => {
    assert.deepEqual(readAccessToken({ authorization: `Bearer ${TOKEN}` }), { scheme: 'Bearer', token: TOKEN });
    assert.deepEqual(readAccessToken({ authorization: `bearer ${TOKEN}` }, undefined, dpop), { scheme: 'Bearer', token: TOKEN });
    assert.deepEqual(readAccessToken({ authorization: `DPoP ${TOKEN}` }, undefined, dpop), { scheme: 'DPoP', token: TOKEN });
    assert.deepEqual(readAccessToken({ authorization: [`dpop  ${TOKEN}`] }, '/mcp', dpop), { scheme: 'DPoP', token: TOKEN });
  });

  it('another scheme is a 401 with a bare challenge, so that the client starts the OAuth flow', async () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Negotiate abc', 'Token abc', 'Bearerabc', '$%&']) {
      const error = await assertGuardError(() => readAccessToken({ authorization }, '/mcp', dpop), MissingTokenError, 'token_missing', 401);
      assert.equal(error.bearerError, undefined, authorization);
    }
  });

  it('DPoP is another scheme when DPoP is off', async () => {
    await assertGuardError(() => readAccessToken({ authorization: `DPoP ${TOKEN}` }), MissingTokenError, 'token_missing', 401);
    await assertGuardError(() => readAccessToken({ authorization: 'DPoP abc def' }), MissingTokenError, 'token_missing', 401);
  });

  it('a scheme with no token is a 401 with a bare challenge', async () => {
    for (const authorization of ['Bearer', 'Bearer ', 'Bearer   ', 'bearer\t', 'DPoP', 'DPoP  ']) {
      await assertGuardError(() => readAccessToken({ authorization }, '/mcp', dpop), MissingTokenError, 'token_missing', 401);
    }
  });

  it('no header, or an empty one, is a 401', async () => {
    await assertGuardError(() => readAccessToken({}), MissingTokenError, 'token_missing', 401);
    await assertGuardError(() => readAccessToken({ authorization: '' }), MissingTokenError, 'token_missing', 401);
    await assertGuardError(() => readAccessToken({ authorization: [] }), MissingTokenError, 'token_missing', 401);
  });

  it('a known scheme with a malformed token is still a 400', async () => {
    for (const authorization of ['Bearer abc def', `Bearer\t${TOKEN}`, 'Bearer a=b', `Bearer ${TOKEN} `, 'DPoP abc$']) {
      const error = await assertGuardError(() => readAccessToken({ authorization }, '/mcp', dpop), InvalidRequestError, 'token_malformed', 400);
      assert.equal(error.bearerError, 'invalid_request');
    }
  });

  it('uses the configured message for the bare 401', async () => {
    const error = await assertGuardError(() => readAccessToken({}, '/mcp', { dpop: true, missingTokenMessage: 'send DPoP' }), MissingTokenError, 'token_missing', 401);
    assert.equal(error.message, 'send DPoP');
  });
});

describe('readAccessToken: query tokens', () => {
  it('an access_token query parameter with no Authorization header is a 401: the query token is never read', async () => {
    const error = await assertGuardError(() => readAccessToken({}, `/mcp?access_token=${TOKEN}`), MissingTokenError, 'token_missing', 401);
    // The message says why the token was ignored, and never repeats it.
    assert.equal(error.message, 'An access_token in the query string is never read (RFC 6750 section 2.3, MCP authorization). Authorization required: send an OAuth 2.1 access token as "Authorization: Bearer <token>"');
    await assertGuardError(() => readAccessToken({ authorization: '' }, '/mcp?access%5Ftoken=abc'), MissingTokenError, 'token_missing', 401);
    const dpopOnly = await assertGuardError(() => readAccessToken({}, '/mcp?access_token=abc', { dpop: true, missingTokenMessage: 'send DPoP' }), MissingTokenError, 'token_missing', 401);
    assert.match(dpopOnly.message, /^An access_token in the query string is never read .*\. send DPoP$/);
    // No query token: the plain message.
    assert.equal((await assertGuardError(() => readAccessToken({}, '/mcp?access=1'), MissingTokenError, 'token_missing', 401)).message, new MissingTokenError().message);
  });

  it('a header and a query token is a 400, whatever the header holds', async () => {
    for (const authorization of [`Bearer ${TOKEN}`, 'Basic abc', [`Bearer ${TOKEN}`, 'Bearer x']]) {
      await assertGuardError(() => readAccessToken({ authorization }, '/mcp?x=1&access_token=abc', dpop), InvalidRequestError, 'token_in_query', 400);
    }
    assert.equal(readAccessToken({ authorization: `Bearer ${TOKEN}` }, '/mcp?access=1&token=2').token, TOKEN);
  });
});

describe('readAccessToken: two credentials', () => {
  it('two Authorization headers, as an array or joined by a comma, are a 400', async () => {
    await assertGuardError(() => readAccessToken({ authorization: [`Bearer ${TOKEN}`, 'Bearer x'] }), InvalidRequestError, 'token_multiple', 400);
    await assertGuardError(() => readAccessToken({ authorization: `Bearer ${TOKEN}, DPoP x` }, '/mcp', dpop), InvalidRequestError, 'token_multiple', 400);
    await assertGuardError(() => readAccessToken({ authorization: 'Basic a, Bearer b' }), InvalidRequestError, 'token_multiple', 400);
  });
});
