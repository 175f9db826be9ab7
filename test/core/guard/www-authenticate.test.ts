import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatBearerChallenge, quoteHeaderValue } from '../../../src/core/guard/www-authenticate.js';

const metadata = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';

test('a bare challenge has only resource_metadata (RFC 6750 §3.1: no error without credentials)', () => {
  assert.equal(formatBearerChallenge({ resourceMetadata: metadata }), `Bearer resource_metadata="${metadata}"`);
  assert.equal(formatBearerChallenge({ resourceMetadata: metadata, scopes: [] }), `Bearer resource_metadata="${metadata}"`);
});

test('a bare challenge with scopes names them space-separated', () => {
  assert.equal(
    formatBearerChallenge({ resourceMetadata: metadata, scopes: ['mcp:read', 'mcp:write'] }),
    `Bearer scope="mcp:read mcp:write", resource_metadata="${metadata}"`,
  );
});

test('a description without an error is not sent', () => {
  assert.equal(formatBearerChallenge({ resourceMetadata: metadata, errorDescription: 'ignored' }), `Bearer resource_metadata="${metadata}"`);
});

test('invalid_token with a description', () => {
  assert.equal(
    formatBearerChallenge({ resourceMetadata: metadata, scopes: ['mcp'], error: 'invalid_token', errorDescription: 'The token expired' }),
    `Bearer error="invalid_token", error_description="The token expired", scope="mcp", resource_metadata="${metadata}"`,
  );
});

test('insufficient_scope names every scope in one challenge', () => {
  assert.equal(
    formatBearerChallenge({
      resourceMetadata: metadata,
      scopes: ['notes:read', 'notes:write'],
      error: 'insufficient_scope',
      errorDescription: 'tools/call "delete_note" needs notes:write',
    }),
    `Bearer error="insufficient_scope", error_description="tools/call \\"delete_note\\" needs notes:write", ` +
      `scope="notes:read notes:write", resource_metadata="${metadata}"`,
  );
});

test('invalid_request without a description', () => {
  assert.equal(
    formatBearerChallenge({ resourceMetadata: metadata, error: 'invalid_request' }),
    `Bearer error="invalid_request", resource_metadata="${metadata}"`,
  );
});

test('quoteHeaderValue escapes double quote and backslash', () => {
  assert.equal(quoteHeaderValue('plain'), '"plain"');
  assert.equal(quoteHeaderValue(''), '""');
  assert.equal(quoteHeaderValue('say "hi"'), '"say \\"hi\\""');
  assert.equal(quoteHeaderValue('a\\b'), '"a\\\\b"');
  assert.equal(quoteHeaderValue('\\"'), '"\\\\\\""');
});

test('quoteHeaderValue replaces CR, LF, NUL and DEL so no header can be injected', () => {
  const quoted = quoteHeaderValue('x"\r\nSet-Cookie: a=b\u0000\u007f');
  assert.equal(quoted, '"x\\"  Set-Cookie: a=b  "');
  assert.doesNotMatch(quoted, /[\r\n\u0000\u007f]/);
});

test('quoteHeaderValue keeps horizontal tab (allowed in a quoted-string)', () => {
  assert.equal(quoteHeaderValue('a\tb'), '"a\tb"');
});

test('a description with CR/LF cannot split the header', () => {
  const challenge = formatBearerChallenge({
    resourceMetadata: metadata,
    error: 'invalid_token',
    errorDescription: 'bad\r\nWWW-Authenticate: Basic realm="x"',
  });
  assert.equal(
    challenge,
    `Bearer error="invalid_token", error_description="bad??WWW-Authenticate: Basic realm=\\"x\\"", resource_metadata="${metadata}"`,
  );
});

test('non-ASCII in the description is replaced (RFC 6750 §3 allows printable ASCII only)', () => {
  assert.equal(
    formatBearerChallenge({ resourceMetadata: metadata, error: 'invalid_token', errorDescription: 'Jeton expiré — 世界\t!' }),
    `Bearer error="invalid_token", error_description="Jeton expir? ? ???!", resource_metadata="${metadata}"`,
  );
});

test('the challenge is a valid Node header value', async () => {
  const { validateHeaderValue } = await import('node:http');
  const challenge = formatBearerChallenge({
    resourceMetadata: metadata,
    scopes: ['a'],
    error: 'insufficient_scope',
    errorDescription: 'emoji 😀 and\nnewline and "quotes"',
  });
  assert.doesNotThrow(() => validateHeaderValue('WWW-Authenticate', challenge));
});
