// The record sealer: compact JWE (dir + A256GCM) under keys derived from the token store secret, bound to the store
// key, with an optional expiry; rotation as for sealed sessions; and whatever does not open (another secret, altered,
// expired, another store key, too long, not a JWE at all) is undefined, never an exception.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { compactDecrypt, decodeProtectedHeader } from 'jose';
import { describe, test } from 'node:test';
import { parseSessionSecret } from '../../../../src/core/session/session-seal.js';
import { createRecordSealer, MAX_SEALED_RECORD_LENGTH, sealedRecordExpiry } from '../../../../src/gateway/connected/store/record-sealer.js';

const secret = (): string => randomBytes(32).toString('base64url');
const keysOf = (value: string) => parseSessionSecret(value, 'MCP_AUTH_TOKEN_STORE_SECRET');
const RECORD = { accessToken: 'upstream-access-token-Hq7', refreshToken: 'upstream-refresh-token-Lm3', subject: 'alice@example.com', scope: 'notes:read' };

/** Every part of a compact JWE, decoded from base64url. */
const decodedParts = (jwe: string): string[] => jwe.split('.').map((part) => Buffer.from(part, 'base64url').toString('latin1'));

describe('record sealer', () => {
  test('seals a compact JWE (dir, A256GCM, a short kid) that opens to the value under the same store key', async () => {
    const sealer = createRecordSealer(keysOf(secret()));
    const sealed = await sealer.seal('conn:abc:notes', RECORD);
    assert.equal(sealed.split('.').length, 5);
    assert.equal(sealed.split('.')[1], '', 'dir: no encrypted key');
    const header = decodeProtectedHeader(sealed);
    assert.equal(header.alg, 'dir');
    assert.equal(header.enc, 'A256GCM');
    assert.match(String(header.kid), /^[A-Za-z0-9_-]{8}$/);
    assert.equal(header.exp, undefined);
    assert.deepEqual(await sealer.open('conn:abc:notes', sealed), RECORD);
    assert.notEqual(await sealer.seal('conn:abc:notes', RECORD), sealed, 'a fresh IV every time');
  });

  test('nothing of the value, nor the store key, can be read in the sealed text', async () => {
    const sealer = createRecordSealer(keysOf(secret()));
    const key = 'flow:one-time-state-value-Xy9';
    const sealed = await sealer.seal(key, RECORD, 60_000);
    const visible = [sealed, ...decodedParts(sealed)].join('\n');
    for (const text of [...Object.values(RECORD), key, 'one-time-state-value-Xy9']) {
      assert.ok(!visible.includes(text), `${text} is visible`);
    }
  });

  test('rotation: the first key seals, every key opens', async () => {
    const older = secret();
    const newer = secret();
    const before = createRecordSealer(keysOf(older));
    const during = createRecordSealer(keysOf(`${newer},${older}`));
    const afterwards = createRecordSealer(keysOf(newer));
    const sealedBefore = await before.seal('conn:k', RECORD);
    const sealedDuring = await during.seal('conn:k', RECORD);
    assert.deepEqual(await during.open('conn:k', sealedBefore), RECORD, 'the old key still opens');
    assert.notEqual(decodeProtectedHeader(sealedDuring).kid, decodeProtectedHeader(sealedBefore).kid, 'the new key seals');
    assert.deepEqual(await afterwards.open('conn:k', sealedDuring), RECORD);
    assert.equal(await before.open('conn:k', sealedDuring), undefined, 'a replica without the new key cannot open it');
    assert.equal(await afterwards.open('conn:k', sealedBefore), undefined, 'a retired key no longer opens');
  });

  test('the token store key differs from the session key derived from the same secret', async () => {
    const value = secret();
    const [sessionKey] = keysOf(value);
    const sealed = await createRecordSealer(keysOf(value)).seal('conn:k', RECORD);
    assert.notEqual(decodeProtectedHeader(sealed).kid, sessionKey!.kid);
    await assert.rejects(compactDecrypt(sealed, sessionKey!.key));
  });

  test('altered, other-secret, other-store-key, expired, oversized or malformed text opens to undefined', async () => {
    let now = Date.now();
    const sealer = createRecordSealer(keysOf(secret()), { now: () => now });
    const sealed = await sealer.seal('ticket:t', RECORD, 10_000);
    const parts = sealed.split('.');
    const flip = (part: string): string => (part[5] === 'A' ? `${part.slice(0, 5)}B${part.slice(6)}` : `${part.slice(0, 5)}A${part.slice(6)}`);
    const altered = [
      [parts[0], parts[1], parts[2], flip(parts[3]!), parts[4]].join('.'),
      [parts[0], parts[1], parts[2], parts[3], flip(parts[4]!)].join('.'),
      [flip(parts[0]!), ...parts.slice(1)].join('.'),
      // A later expiry written into the header: the header is authenticated (AAD), so nothing opens.
      [Buffer.from(JSON.stringify({ ...decodeProtectedHeader(sealed), exp: now / 1000 + 1e6 })).toString('base64url'), ...parts.slice(1)].join('.'),
    ];
    for (const text of altered) assert.equal(await sealer.open('ticket:t', text), undefined, text);
    assert.equal(await createRecordSealer(keysOf(secret())).open('ticket:t', sealed), undefined, 'another secret');
    assert.equal(await sealer.open('ticket:other', sealed), undefined, 'copied under another store key');
    for (const junk of ['', 'a.b.c.d.e', 'not a jwe', `${sealed}x`, 'x'.repeat(MAX_SEALED_RECORD_LENGTH + 1), 42 as unknown as string, undefined as unknown as string]) {
      assert.equal(await sealer.open('ticket:t', junk), undefined);
    }
    assert.equal(sealedRecordExpiry(sealed), Math.ceil((now + 10_000) / 1000) * 1000);
    now += 9_000;
    assert.deepEqual(await sealer.open('ticket:t', sealed), RECORD, 'open before its expiry');
    now += 2_000;
    assert.equal(await sealer.open('ticket:t', sealed), undefined, 'expired');
  });

  test('a TTL that is not a positive number is refused; no key at all is refused', async () => {
    const sealer = createRecordSealer(keysOf(secret()));
    for (const ttl of [0, -1, Number.NaN, Infinity]) await assert.rejects(sealer.seal('k', {}, ttl), RangeError);
    assert.throws(() => createRecordSealer([]), RangeError);
    assert.equal(sealedRecordExpiry(await sealer.seal('k', {})), undefined);
    assert.equal(sealedRecordExpiry('not a jwe'), undefined);
  });
});
