import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { countAuthorizationHeaders, extractBearerToken } from '../../../src/core/token/bearer-token.js';
import { InvalidRequestError, MissingTokenError } from '../../../src/core/kernel/errors.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln-_~+/==';

describe('extractBearerToken', () => {
  it('returns the token of a Bearer header', () => {
    assert.equal(extractBearerToken({ authorization: `Bearer ${TOKEN}` }), TOKEN);
  });

  it('accepts the scheme in any case', () => {
    assert.equal(extractBearerToken({ authorization: `bearer ${TOKEN}` }), TOKEN);
    assert.equal(extractBearerToken({ authorization: `BEARER ${TOKEN}` }), TOKEN);
  });

  it('accepts several spaces after the scheme (1*SP)', () => {
    assert.equal(extractBearerToken({ authorization: `Bearer   ${TOKEN}` }), TOKEN);
  });

  it('accepts a one-element array (headersDistinct)', () => {
    assert.equal(extractBearerToken({ authorization: [`Bearer ${TOKEN}`] }), TOKEN);
  });

  it('throws MissingTokenError without a header, or with an empty one', async () => {
    await assertGuardError(() => extractBearerToken({}), MissingTokenError, 'token_missing', 401);
    await assertGuardError(() => extractBearerToken({ authorization: '' }), MissingTokenError, 'token_missing', 401);
    await assertGuardError(() => extractBearerToken({ authorization: [] }), MissingTokenError, 'token_missing', 401);
  });

  it('refuses a tab between scheme and token', async () => {
    await assertGuardError(() => extractBearerToken({ authorization: `Bearer\t${TOKEN}` }), InvalidRequestError, 'token_malformed', 400);
  });

  it('refuses two tokens', async () => {
    await assertGuardError(() => extractBearerToken({ authorization: 'Bearer abc def' }), InvalidRequestError, 'token_malformed', 400);
  });

  it('answers another scheme with a bare 401, so that the client starts the OAuth flow', async () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'DPoP abc']) {
      const error = await assertGuardError(() => extractBearerToken({ authorization }), MissingTokenError, 'token_missing', 401);
      assert.equal(error.bearerError, undefined);
    }
  });

  it('answers an empty Bearer with a bare 401', async () => {
    for (const empty of ['Bearer ', 'Bearer']) {
      await assertGuardError(() => extractBearerToken({ authorization: empty }), MissingTokenError, 'token_missing', 401);
    }
  });

  it('refuses characters outside the b64token grammar and misplaced padding', async () => {
    for (const bad of ['Bearer abc$', 'Bearer a=b', 'Bearer =abc', `Bearer ${TOKEN} `]) {
      await assertGuardError(() => extractBearerToken({ authorization: bad }), InvalidRequestError, 'token_malformed', 400);
    }
  });

  it('refuses an access_token query parameter beside a header; with no header it is never read (401)', async () => {
    await assertGuardError(
      () => extractBearerToken({ authorization: `Bearer ${TOKEN}` }, '/mcp?x=1&access_token=abc'),
      InvalidRequestError,
      'token_in_query',
      400,
    );
    await assertGuardError(() => extractBearerToken({}, '/mcp?access%5Ftoken=abc'), MissingTokenError, 'token_missing', 401);
    assert.equal(extractBearerToken({ authorization: `Bearer ${TOKEN}` }, '/mcp?access=1&token=2'), TOKEN);
  });

  it('refuses two Authorization headers, as an array or joined by a comma', async () => {
    await assertGuardError(
      () => extractBearerToken({ authorization: [`Bearer ${TOKEN}`, 'Bearer other'] }),
      InvalidRequestError,
      'token_multiple',
      400,
    );
    await assertGuardError(
      () => extractBearerToken({ authorization: `Bearer ${TOKEN}, Bearer other` }),
      InvalidRequestError,
      'token_multiple',
      400,
    );
  });

  it('never puts the header value in the message', () => {
    try {
      extractBearerToken({ authorization: 'Bearer secret-token-value!' });
      assert.fail('expected a throw');
    } catch (error) {
      assert.ok(!(error as Error).message.includes('secret-token-value'));
    }
  });
});

describe('countAuthorizationHeaders', () => {
  it('counts Authorization lines in any case', () => {
    assert.equal(countAuthorizationHeaders(['Host', 'a', 'Authorization', 'Bearer x', 'authorization', 'Bearer y']), 2);
    assert.equal(countAuthorizationHeaders(['Host', 'a']), 0);
  });

  it('sees the duplicate that Node drops from req.headers', async () => {
    // Node keeps only the first Authorization header in req.headers; headersDistinct and rawHeaders keep both.
    const seen = await new Promise<{ headers: string | undefined; distinct: string[] | undefined; raw: string[] }>((resolve) => {
      const server = createServer((req, res) => {
        resolve({ headers: req.headers.authorization, distinct: req.headersDistinct.authorization, raw: req.rawHeaders });
        res.end();
        server.close();
      });
      server.listen(0, '127.0.0.1', () => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => {
          socket.end('GET /mcp HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer one\r\nauthorization: Bearer two\r\nConnection: close\r\n\r\n');
        });
        socket.resume();
      });
    });
    assert.equal(seen.headers, 'Bearer one');
    assert.equal(countAuthorizationHeaders(seen.raw), 2);
    await assertGuardError(
      () => extractBearerToken({ authorization: seen.distinct }),
      InvalidRequestError,
      'token_multiple',
      400,
    );
  });
});
