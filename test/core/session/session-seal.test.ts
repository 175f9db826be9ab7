import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { compactDecrypt, decodeProtectedHeader } from 'jose';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { createSessionSealer, DEFAULT_SESSION_MAX_AGE_MS, parseSessionSecret, type SessionSealer } from '../../../src/core/session/session-seal.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const UPSTREAM_SESSION = '5f0c2a8e-3b1d-4c55-9a1e-2f7d9b6c4e10';

function caller(sub: string, overrides: Partial<AuthInfo> = {}, iss = 'https://auth.example.com'): AuthInfo {
  return { token: `token-of-${sub}`, clientId: 'client-1', scopes: ['mcp'], extra: { sub, iss, claims: { sub, iss }, tokenType: 'jwt' }, ...overrides };
}
const ALICE = caller('alice');

const secret = (): string => randomBytes(32).toString('base64url');

/** A sealer on a clock the test moves, in milliseconds. */
function sealerAt(keys: string, options: { maxAgeMs?: number; resource?: string; maxCachedSessions?: number } = {}): { sealer: SessionSealer; clock: { now: number } } {
  const clock = { now: Date.UTC(2026, 11, 1, 12) };
  const sealer = createSessionSealer({ keys: parseSessionSecret(keys, 'MCP_AUTH_SESSION_SECRET'), resource: options.resource ?? RESOURCE, now: () => clock.now, ...options });
  return { sealer, clock };
}

/** The id with one character of the part at `part` (0 header … 4 tag) changed. */
function tamper(sealed: string, part: number): string {
  const parts = sealed.split('.');
  const text = parts[part]!;
  const at = Math.floor(text.length / 2);
  parts[part] = `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
  return parts.join('.');
}

describe('parseSessionSecret', () => {
  it('reads hex, base64url and standard base64 (as openssl rand -base64 prints it) keys of at least 32 bytes', () => {
    const bytes = randomBytes(32);
    for (const text of [bytes.toString('hex'), bytes.toString('base64url'), bytes.toString('base64'), randomBytes(48).toString('base64url')]) {
      const [key] = parseSessionSecret(text, 'MCP_AUTH_SESSION_SECRET');
      assert.equal(key!.key.length, 32);
      assert.match(key!.kid, /^[A-Za-z0-9_-]{8}$/);
    }
    // The same bytes in any spelling are the same key: every replica derives the same kid.
    const kids = [bytes.toString('hex'), bytes.toString('base64url'), bytes.toString('base64')].map((text) => parseSessionSecret(text, 'S')[0]!.kid);
    assert.equal(new Set(kids).size, 1);
  });

  it('reads a comma-separated list, first key first, and refuses one key listed twice', () => {
    const [a, b] = [secret(), secret()];
    const keys = parseSessionSecret(` ${a} , ${b} `, 'MCP_AUTH_SESSION_SECRET');
    assert.equal(keys.length, 2);
    assert.equal(keys[0]!.kid, parseSessionSecret(a, 'S')[0]!.kid);
    assert.throws(() => parseSessionSecret(`${a},${a}`, 'MCP_AUTH_SESSION_SECRET'), /key 2 of 2 repeats an earlier key/);
  });

  it('refuses a short, patterned, empty or misspelt key, saying how to make one and never repeating it', () => {
    const cases: Array<[string, RegExp]> = [
      [randomBytes(16).toString('base64url'), /has 16 bytes; it needs at least 32 random bytes/],
      ['0'.repeat(64), /does not look random/],
      [Buffer.from('password'.repeat(6)).toString('base64'), /does not look random/],
      ['', /is empty/],
      ['not a key: has spaces and !', /neither hex nor base64 \(standard or URL-safe\)/],
      [`${secret()},`, /key 2 of 2 is empty/],
    ];
    for (const [text, message] of cases) {
      assert.throws(
        () => parseSessionSecret(text, 'MCP_AUTH_SESSION_SECRET'),
        (error: unknown) => {
          assert.ok(error instanceof ConfigurationError);
          assert.equal(error.setting, 'MCP_AUTH_SESSION_SECRET');
          assert.match(error.message, message);
          assert.match(error.message, /openssl rand -base64 32/);
          if (text.length > 8) assert.ok(!error.message.includes(text), 'the secret is not repeated');
          return true;
        },
      );
    }
  });
});

describe('createSessionSealer', () => {
  it('seals a compact JWE (dir, A256GCM, the first key\'s kid) that opens to the upstream session for its caller', async () => {
    const { sealer } = sealerAt(secret());
    const sealed = (await sealer.seal(UPSTREAM_SESSION, ALICE))!;
    assert.equal(sealed.split('.').length, 5);
    assert.equal(sealed.split('.')[1], '', 'dir: no encrypted key');
    assert.match(sealed, /^[A-Za-z0-9_.-]+$/, 'visible ASCII only, as MCP requires of session ids');
    const header = decodeProtectedHeader(sealed);
    assert.deepEqual(Object.keys(header).sort(), ['alg', 'enc', 'kid']);
    assert.equal(header.alg, 'dir');
    assert.equal(header.enc, 'A256GCM');
    // Small, as it travels on every request: about 230 characters with a UUID upstream session id.
    assert.ok(sealed.length <= 260, `${sealed.length} characters`);
    assert.ok(!sealed.includes(UPSTREAM_SESSION) && !Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1').includes('alice'), 'nothing readable');

    const opened = await sealer.open(sealed, { ...ALICE, token: 'a refreshed token', scopes: [] });
    assert.ok('session' in opened, JSON.stringify(opened));
    assert.equal(opened.session.upstreamSessionId, UPSTREAM_SESSION);
    assert.equal(opened.session.instance, undefined);
    // Opened twice: the second time from the cache, with the same checks.
    assert.deepEqual(await sealer.open(sealed, ALICE), opened);
  });

  it('refuses another caller: another subject, client or issuer, or a token naming nobody', async () => {
    const { sealer } = sealerAt(secret());
    const sealed = (await sealer.seal(UPSTREAM_SESSION, ALICE))!;
    for (const other of [caller('bob'), caller('alice', { clientId: 'client-2' }), caller('alice', {}, 'https://other.example.com')]) {
      assert.deepEqual(await sealer.open(sealed, other), { refused: 'session_owner_mismatch' });
    }
    const nobody: AuthInfo = { token: 't', clientId: '', scopes: [], extra: { claims: {}, tokenType: 'introspection' } };
    assert.deepEqual(await sealer.open(sealed, nobody), { refused: 'session_no_identity' });
    // Sealed all the same (for the issuer), so the upstream's id is never handed out; it never opens.
    const ofNobody = await sealer.seal(UPSTREAM_SESSION, nobody);
    assert.ok(!ofNobody.includes(UPSTREAM_SESSION));
    assert.deepEqual(await sealer.open(ofNobody, nobody), { refused: 'session_no_identity' });
    assert.deepEqual(await sealer.open(ofNobody, ALICE), { refused: 'session_owner_mismatch' });
    // The owner still opens it.
    assert.ok('session' in (await sealer.open(sealed, ALICE)));
  });

  it('refuses an id altered anywhere, malformed, or far too long', async () => {
    const { sealer } = sealerAt(secret(), { maxCachedSessions: 0 });
    const sealed = (await sealer.seal(UPSTREAM_SESSION, ALICE))!;
    for (const part of [0, 2, 3, 4]) {
      const refused = await sealer.open(tamper(sealed, part), ALICE);
      assert.ok('refused' in refused && ['session_unknown', 'session_key_unknown'].includes(refused.refused), `part ${part}: ${JSON.stringify(refused)}`);
    }
    for (const bad of ['', 'sess-1', UPSTREAM_SESSION, 'a.b.c.d.e', `${sealed}.`, sealed.slice(0, -2), `x${'A'.repeat(5000)}`]) {
      assert.deepEqual(await sealer.open(bad, ALICE), { refused: 'session_unknown' }, bad.slice(0, 40));
    }
    assert.ok('session' in (await sealer.open(sealed, ALICE)));
  });

  it('refuses an id sealed with a key it does not hold, or for another resource', async () => {
    const { sealer: other } = sealerAt(secret());
    const { sealer } = sealerAt(secret());
    assert.deepEqual(await sealer.open((await other.seal(UPSTREAM_SESSION, ALICE))!, ALICE), { refused: 'session_key_unknown' });
    const key = secret();
    const here = sealerAt(key).sealer;
    const elsewhere = sealerAt(key, { resource: 'https://other.example.com/mcp' }).sealer;
    assert.deepEqual(await here.open((await elsewhere.seal(UPSTREAM_SESSION, ALICE))!, ALICE), { refused: 'session_owner_mismatch' });
  });

  it('rotates keys: the first key seals, and ids sealed with an older one still open', async () => {
    const [oldKey, newKey] = [secret(), secret()];
    const { sealer: before } = sealerAt(oldKey);
    const { sealer: after } = sealerAt(`${newKey},${oldKey}`);
    const { sealer: retired } = sealerAt(newKey);
    const old = (await before.seal(UPSTREAM_SESSION, ALICE))!;
    const fresh = (await after.seal(UPSTREAM_SESSION, ALICE))!;
    assert.equal(decodeProtectedHeader(old).kid, parseSessionSecret(oldKey, 'S')[0]!.kid);
    assert.equal(decodeProtectedHeader(fresh).kid, parseSessionSecret(newKey, 'S')[0]!.kid);
    assert.ok('session' in (await after.open(old, ALICE)), 'an old id opens after the rotation');
    assert.ok('session' in (await after.open(fresh, ALICE)));
    assert.deepEqual(await before.open(fresh, ALICE), { refused: 'session_key_unknown' }, 'a replica not yet given the new key cannot open new ids');
    assert.deepEqual(await retired.open(old, ALICE), { refused: 'session_key_unknown' }, 'once the old key is dropped, its ids no longer open');
  });

  it('refuses an id older than the maximum age, cached or not, and one issued implausibly far in the future', async () => {
    const key = secret();
    const { sealer, clock } = sealerAt(key, { maxAgeMs: 3_600_000 });
    const sealed = (await sealer.seal(UPSTREAM_SESSION, ALICE))!;
    const { sealer: fresh, clock: freshClock } = sealerAt(key, { maxAgeMs: 3_600_000 });
    clock.now += 3_599_000;
    assert.ok('session' in (await sealer.open(sealed, ALICE)), 'still young enough (and now cached)');
    clock.now += 2_000;
    freshClock.now = clock.now;
    assert.deepEqual(await sealer.open(sealed, ALICE), { refused: 'session_expired' }, 'from the cache');
    assert.deepEqual(await fresh.open(sealed, ALICE), { refused: 'session_expired' }, 'decrypted');

    const { sealer: ahead, clock: aheadClock } = sealerAt(key);
    aheadClock.now += 3_600_000;
    const future = (await ahead.seal(UPSTREAM_SESSION, ALICE))!;
    const { sealer: behind } = sealerAt(key);
    assert.deepEqual(await behind.open(future, ALICE), { refused: 'session_unknown' });
    // One rule for the age, decrypted or cached: at most the maximum age old, at most 60 s ahead (replica clocks).
    const { sealer: skewed, clock: skewedClock } = sealerAt(key, { maxAgeMs: 3_600_000 });
    skewedClock.now += 30_000;
    const early = (await skewed.seal(UPSTREAM_SESSION, ALICE))!;
    const { sealer: reader, clock: readerClock } = sealerAt(key, { maxAgeMs: 3_600_000 });
    assert.ok('session' in (await reader.open(early, ALICE)), '30 s ahead opens');
    assert.ok('session' in (await reader.open(early, ALICE)), 'and again from the cache');
    readerClock.now += 30_000 + 3_600_000 + 30_000;
    const { sealer: later, clock: laterClock } = sealerAt(key, { maxAgeMs: 3_600_000 });
    laterClock.now = readerClock.now;
    assert.deepEqual(await reader.open(early, ALICE), { refused: 'session_expired' }, '30 s past the age, cached');
    assert.deepEqual(await later.open(early, ALICE), { refused: 'session_expired' }, '30 s past the age, decrypted: no tolerance there either');
    assert.equal(DEFAULT_SESSION_MAX_AGE_MS, 86_400_000);
  });

  it('seals and checks the instance holding a stdio session', async () => {
    const { sealer } = sealerAt(secret());
    const sealed = (await sealer.seal('local-session', ALICE, 'instance-a'))!;
    const opened = await sealer.open(sealed, ALICE, 'instance-a');
    assert.ok('session' in opened);
    assert.equal(opened.session.instance, 'instance-a');
    assert.deepEqual(await sealer.open(sealed, ALICE, 'instance-b'), { refused: 'session_other_instance' });
    assert.deepEqual(await sealer.open(sealed, ALICE), { refused: 'session_other_instance' }, 'nor by an HTTP upstream');
    assert.deepEqual(await sealer.open((await sealer.seal('upstream', ALICE))!, ALICE, 'instance-a'), { refused: 'session_other_instance' });
  });

  it('is a standard JWE: any JOSE library with the derived key decrypts it', async () => {
    const text = secret();
    const { sealer, clock } = sealerAt(text);
    const sealed = (await sealer.seal(UPSTREAM_SESSION, ALICE))!;
    const { plaintext } = await compactDecrypt(sealed, parseSessionSecret(text, 'S')[0]!.key);
    const claims = JSON.parse(new TextDecoder().decode(plaintext)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(claims).sort(), ['iat', 'own', 'sid']);
    assert.equal(claims.sid, UPSTREAM_SESSION);
    assert.equal(claims.iat, Math.floor(clock.now / 1000));
    assert.match(String(claims.own), /^[A-Za-z0-9_-]{22}$/, 'the caller is a digest, not its claims');
  });

  it('refuses bad options at construction', () => {
    assert.throws(() => createSessionSealer({ keys: [], resource: RESOURCE }), ConfigurationError);
    assert.throws(() => createSessionSealer({ keys: [{ kid: 'k', key: new Uint8Array(16) }], resource: RESOURCE }), ConfigurationError);
    assert.throws(() => createSessionSealer({ keys: parseSessionSecret(secret(), 'S'), resource: RESOURCE, maxAgeMs: 10 }), ConfigurationError);
  });
});
