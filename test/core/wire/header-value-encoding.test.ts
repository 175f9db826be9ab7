import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeMirroredHeaderValue, encodeHeaderValue } from '../../../src/core/wire/header-value-encoding.js';

// MCP 2026-07-28 Streamable HTTP, "Value Encoding", encoding examples table: what a client sends, the gateway sends too.
const VALUE_ENCODING_TABLE: ReadonlyArray<readonly [original: string, encoded: string]> = [
  ['us-west1', 'us-west1'],
  ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
  [' padded ', '=?base64?IHBhZGRlZCA=?='],
  ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
  ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
];

test('encodeHeaderValue writes every row of the spec\'s Value Encoding table', () => {
  for (const [original, encoded] of VALUE_ENCODING_TABLE) assert.equal(encodeHeaderValue(original), encoded, original);
});

test('plain visible ASCII, inner spaces and the empty string pass unchanged', () => {
  for (const plain of ['alice@example.com', 'https://issuer.example/', 'mcp:read mcp:tools', '', 'a', '!~', '=?base64?x', 'x?=']) {
    assert.equal(encodeHeaderValue(plain), plain, plain);
  }
});

test('the identities of the security review stay distinct, and each decodes back exactly', () => {
  const subjects = [
    'alice@example.com',
    'alice\u0416@example.com',
    'ali\u200bce@example.com',
    'alice@example.com\u2028',
    'alice\u0000@example.com',
    'alice@example.com\t',
    'alice@example.com ',
    ' alice@example.com',
    'alice@\u00e9xample.com',
    `=?base64?${Buffer.from('alice@example.com').toString('base64')}?=`,
  ];
  const encoded = subjects.map(encodeHeaderValue);
  assert.equal(new Set(encoded).size, subjects.length, encoded.join('\n'));
  for (const [i, value] of encoded.entries()) {
    assert.match(value, /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/, 'always a valid header value, nothing for HTTP to trim');
    assert.equal(decodeMirroredHeaderValue(value), subjects[i]);
  }
  assert.equal(encoded[0], 'alice@example.com');
  assert.equal(encoded[1], '=?base64?YWxpY2XQlkBleGFtcGxlLmNvbQ==?=');
});

test('the sentinel markers are lowercase and exact: other spellings are plain', () => {
  assert.equal(encodeHeaderValue('=?BASE64?SGk=?='), '=?BASE64?SGk=?=');
  assert.equal(encodeHeaderValue('=?base64??='), '=?base64?PT9iYXNlNjQ/Pz0=?=');
  assert.equal(decodeMirroredHeaderValue(encodeHeaderValue('=?base64??=')), '=?base64??=');
});
