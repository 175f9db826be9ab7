/**
 * Differential test: every generated token goes through `verifyCompactJwt` (signature by `node:crypto`) and
 * through jose's `jwtVerify`, with the same key and options, and both must give the same verdict: the same
 * payload and header when they accept, the same error (class, code, claim and reason) when they refuse.
 * Tokens are signed by hand (`node:crypto`), so that headers and payloads can be anything, including what no
 * JOSE library would produce.
 */
import assert from 'node:assert/strict';
import { constants, createPrivateKey, generateKeyPairSync, sign, webcrypto, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { base64url, createLocalJWKSet, importJWK, jwtVerify, type CryptoKey, type JWK } from 'jose';
import { verifiesSynchronously } from '../../../src/core/jwt/jws-signature.js';
import { peekJwtClaims, verifyCompactJwt, verifyCompactJwtNow, type CompactJwtVerifyOptions } from '../../../src/core/jwt/verify-compact-jwt.js';
import { prng } from '../../helpers/prng.js';

const ISSUER = 'https://issuer.example.com';
const RESOURCE = 'https://mcp.example.com/mcp';
const NOW = 1_760_000_000;
/** A fixed clock for both: no verdict may depend on a second ticking between the two calls. */
const CURRENT_DATE = new Date(NOW * 1000);

interface SigningKey {
  alg: string;
  privateKey: KeyObject;
  jwk: JWK;
  /** The public key as jose's key set imports it (what the verifier is given in production). */
  publicKey: CryptoKey;
}

async function signingKey(alg: string, kid: string, privateKey: KeyObject): Promise<SigningKey> {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = privateKey.export({ format: 'jwk' }) as JWK;
  const jwk = { ...publicJwk, kid, alg, use: 'sig' };
  return { alg, privateKey, jwk, publicKey: (await importJWK(jwk, alg)) as CryptoKey };
}

const ec = (curve: string): KeyObject => generateKeyPairSync('ec', { namedCurve: curve }).privateKey;
const rsaKey = (bits = 2048): KeyObject => generateKeyPairSync('rsa', { modulusLength: bits }).privateKey;
const ed25519 = (): KeyObject => generateKeyPairSync('ed25519').privateKey;

/** Signs `header.payload` (raw segments, as given) the way `alg` prescribes; `saltLength` overrides RFC 7518's. */
function signSegments(alg: string, privateKey: KeyObject, signingInput: string, saltLength?: number): string {
  const data = Buffer.from(signingInput, 'latin1');
  const bits = Number(alg.slice(2)) || 256;
  let signature: Buffer;
  if (alg.startsWith('ES')) signature = sign(`sha${bits}`, data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  else if (alg.startsWith('PS')) signature = sign(`sha${bits}`, data, { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: saltLength ?? bits / 8 });
  else if (alg.startsWith('RS')) signature = sign(`sha${bits}`, data, privateKey);
  else signature = sign(null, data, privateKey);
  return signature.toString('base64url');
}

const segment = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A token with this header and payload (objects are JSON-encoded, strings used as they are), signed by `key`. */
function token(key: SigningKey, header: unknown, payload: unknown, options: { signAs?: string; saltLength?: number } = {}): string {
  const input = `${segment(header)}.${segment(payload)}`;
  return `${input}.${signSegments(options.signAs ?? key.alg, key.privateKey, input, options.saltLength)}`;
}

/** What either verifier concluded, comparable with `deepEqual`. */
type Verdict =
  | { accepted: true; payload: unknown; protectedHeader: unknown }
  | { accepted: false; error: string; code?: unknown; claim?: unknown; reason?: unknown };

async function verdictOf(run: () => Promise<{ payload: unknown; protectedHeader?: unknown }>): Promise<Verdict> {
  try {
    const { payload, protectedHeader } = await run();
    return { accepted: true, payload, protectedHeader };
  } catch (error) {
    const e = error as { constructor: { name: string }; code?: unknown; claim?: unknown; reason?: unknown };
    return { accepted: false, error: e.constructor.name, code: e.code, claim: e.claim, reason: e.reason };
  }
}

type Key = CryptoKey | ((header: never, token: never) => Promise<CryptoKey>);

interface Case {
  name: string;
  token: string;
  key: Key;
  options?: CompactJwtVerifyOptions;
  /** The verdict expected of both, to keep the generated cases honest: accepted, or jose's error code/class. */
  expect: 'accepted' | string;
}

const BASE_OPTIONS: CompactJwtVerifyOptions = {
  issuer: ISSUER,
  audience: [RESOURCE, 'https://other.example.com'],
  algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'],
  requiredClaims: ['exp'],
  clockTolerance: 5,
  currentDate: CURRENT_DATE,
};
const STRICT_OPTIONS: CompactJwtVerifyOptions = { ...BASE_OPTIONS, requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'] };

const claims = (overrides: Record<string, unknown> = {}): Record<string, unknown> => {
  const payload: Record<string, unknown> = { iss: ISSUER, aud: RESOURCE, sub: 'user-1', client_id: 'client-1', iat: NOW - 10, exp: NOW + 300, jti: 'j-1', scope: 'mcp', ...overrides };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return payload;
};


async function buildCases(): Promise<Case[]> {
  const keys = {
    ES256: await signingKey('ES256', 'es256', ec('P-256')),
    ES384: await signingKey('ES384', 'es384', ec('P-384')),
    ES512: await signingKey('ES512', 'es512', ec('P-521')),
    RS256: await signingKey('RS256', 'rs256', rsaKey()),
    RS384: await signingKey('RS384', 'rs384', rsaKey()),
    RS512: await signingKey('RS512', 'rs512', rsaKey()),
    PS256: await signingKey('PS256', 'ps256', rsaKey()),
    PS384: await signingKey('PS384', 'ps384', rsaKey()),
    PS512: await signingKey('PS512', 'ps512', rsaKey()),
    EdDSA: await signingKey('EdDSA', 'eddsa', ed25519()),
    Ed25519: await signingKey('Ed25519', 'ed25519', ed25519()),
  };
  const es = keys.ES256;
  const attacker = await signingKey('ES256', 'es256', ec('P-256'));
  const keySet = createLocalJWKSet({ keys: Object.values(keys).map((k) => k.jwk) }) as unknown as Key;
  const header = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({ alg: 'ES256', kid: 'es256', typ: 'at+jwt', ...overrides });
  const cases: Case[] = [];
  const add = (name: string, t: string, expect: Case['expect'], key: Key = es.publicKey, options?: CompactJwtVerifyOptions): void =>
    void cases.push({ name, token: t, key, expect, ...(options ? { options } : {}) });

  // Every algorithm, valid, with the key given directly and through the key set.
  for (const key of Object.values(keys)) {
    const t = token(key, { alg: key.alg, kid: key.jwk.kid, typ: 'at+jwt' }, claims());
    add(`valid ${key.alg}`, t, 'accepted', key.publicKey);
    add(`valid ${key.alg}, key set`, t, 'accepted', keySet);
    add(`${key.alg}, tampered signature`, `${t.slice(0, -2)}${t.endsWith('AA') ? 'BA' : 'AA'}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', key.publicKey);
    add(`${key.alg}, tampered payload`, t.replace(/\.[^.]+\./, `.${segment(claims({ scope: 'mcp admin' }))}.`), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', key.publicKey);
  }

  // Each claim wrong, missing or of the wrong type.
  const claimCases: Array<[string, Record<string, unknown>, string, CompactJwtVerifyOptions?]> = [
    ['iss wrong', { iss: 'https://evil.example.com' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iss with a trailing slash', { iss: `${ISSUER}/` }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iss missing', { iss: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iss a number', { iss: 7 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iss an array', { iss: [ISSUER] }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud wrong', { aud: 'https://elsewhere.example.com' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud a list with ours', { aud: ['https://elsewhere.example.com', RESOURCE] }, 'accepted'],
    ['aud a list without ours', { aud: ['https://elsewhere.example.com'] }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud the second accepted', { aud: 'https://other.example.com' }, 'accepted'],
    ['aud missing', { aud: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud a number', { aud: 1 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud empty list', { aud: [] }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['exp past', { exp: NOW - 60 }, 'ERR_JWT_EXPIRED'],
    ['exp past within tolerance', { exp: NOW - 3 }, 'accepted'],
    ['exp now minus tolerance', { exp: NOW - 5 }, 'ERR_JWT_EXPIRED'],
    ['exp missing', { exp: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['exp a string', { exp: String(NOW + 300) }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['exp a fraction', { exp: NOW + 0.5 }, 'accepted'],
    ['nbf future', { nbf: NOW + 60 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['nbf future within tolerance', { nbf: NOW + 5 }, 'accepted'],
    ['nbf a string', { nbf: 'soon' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iat a string', { iat: 'then' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iat in the future', { iat: NOW + 3600 }, 'accepted'],
    ['strict: all present', {}, 'accepted', STRICT_OPTIONS],
    ['strict: jti missing', { jti: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: sub missing', { sub: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: client_id missing', { client_id: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: iat missing', { iat: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: iss and exp missing', { iss: undefined, exp: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: sub and jti missing (which is named)', { sub: undefined, jti: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['strict: everything missing', { iss: undefined, aud: undefined, sub: undefined, jti: undefined, iat: undefined, exp: undefined, client_id: undefined }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', STRICT_OPTIONS],
    ['iss and aud wrong', { iss: 'https://evil.example.com', aud: 'https://elsewhere.example.com' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud wrong, exp past', { aud: 'https://elsewhere.example.com', exp: NOW - 600 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['iat a string, exp past', { iat: 'then', exp: NOW - 600 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['nbf future, exp a string', { nbf: NOW + 600, exp: 'later' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['nbf a string, iat a string', { nbf: 'soon', iat: 'then' }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['exp null', { exp: null }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud a list with a non-string', { aud: [1, RESOURCE] }, 'accepted'],
    ['aud a list of lists', { aud: [[RESOURCE]] }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['aud an object', { aud: { RESOURCE } }, 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['no tolerance: exp just past', { exp: NOW - 1 }, 'ERR_JWT_EXPIRED', { ...BASE_OPTIONS, clockTolerance: 0 }],
    ['no tolerance: exp now', { exp: NOW }, 'ERR_JWT_EXPIRED', { ...BASE_OPTIONS, clockTolerance: 0 }],
    ['no tolerance: exp next second', { exp: NOW + 1 }, 'accepted', { ...BASE_OPTIONS, clockTolerance: 0 }],
    ['no tolerance: nbf next second', { nbf: NOW + 1 }, 'ERR_JWT_CLAIM_VALIDATION_FAILED', { ...BASE_OPTIONS, clockTolerance: 0 }],
    ['no required claims: exp missing', { exp: undefined }, 'accepted', { ...BASE_OPTIONS, requiredClaims: [] }],
    ['one audience as a string option', {}, 'accepted', { ...BASE_OPTIONS, audience: RESOURCE }],
    ['cnf present', { cnf: { jkt: 'abc' } }, 'accepted'],
    ['large claims', { groups: Array.from({ length: 200 }, (_, i) => `group-${i}`) }, 'accepted'],
    ['unicode claims', { name: 'Zoë 日本 😀' }, 'accepted'],
  ];
  for (const [name, overrides, expect, options] of claimCases) add(name, token(es, header(), claims(overrides)), expect, es.publicKey, options);

  // Payloads that are not a JSON object, or not even text.
  add('payload a JSON array', token(es, header(), '[1,2]'), 'ERR_JWT_INVALID');
  add('payload null', token(es, header(), 'null'), 'ERR_JWT_INVALID');
  add('payload not JSON', token(es, header(), '{"iss":'), 'ERR_JWT_INVALID');
  add('payload a JSON string', token(es, header(), '"hello"'), 'ERR_JWT_INVALID');
  add('payload with a __proto__ member', token(es, header(), `{"__proto__":{"iss":"x"},${JSON.stringify(claims()).slice(1)}`), 'accepted');
  add('payload with a duplicate iss (last wins)', token(es, header(), `{"iss":"https://evil.example.com",${JSON.stringify(claims()).slice(1)}`), 'accepted');
  add('payload with a duplicate iss, wrong last', token(es, header(), `${JSON.stringify(claims()).slice(0, -1)},"iss":"https://evil.example.com"}`), 'ERR_JWT_CLAIM_VALIDATION_FAILED');
  // jose's TextDecoder drops a leading byte-order mark.
  add('payload with a byte-order mark', token(es, header(), `\ufeff${JSON.stringify(claims())}`), 'accepted');
  {
    const input = `${segment(header())}.${Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]).toString('base64url')}`;
    add('payload not UTF-8', `${input}.${signSegments('ES256', es.privateKey, input)}`, 'ERR_JWT_INVALID');
  }
  {
    const input = `${segment(header())}.e30!`;
    add('payload segment not base64url', `${input}.${signSegments('ES256', es.privateKey, input)}`, 'ERR_JWS_INVALID');
  }
  {
    const input = `${segment(header())}.${segment(claims())}é`;
    add('payload segment not ASCII', `${input}.${signSegments('ES256', es.privateKey, input)}`, 'ERR_JWS_INVALID');
    add('payload segment not ASCII, key set', `${input}.AAAA`, 'ERR_JWS_INVALID', keySet);
    // jose resolves the key before it looks at the payload's bytes.
    const unknownKid = `${segment(header({ kid: 'nope' }))}.${segment(claims())}é`;
    add('payload segment not ASCII, unknown kid', `${unknownKid}.AAAA`, 'ERR_JWKS_NO_MATCHING_KEY', keySet);
  }

  // Headers.
  const headerCases: Array<[string, unknown, string, string?]> = [
    ['alg none', header({ alg: 'none' }), 'ERR_JOSE_ALG_NOT_ALLOWED'],
    ['alg HS256', header({ alg: 'HS256' }), 'ERR_JOSE_ALG_NOT_ALLOWED'],
    ['alg missing', header({ alg: undefined }), 'ERR_JWS_INVALID'],
    ['alg empty', header({ alg: '' }), 'ERR_JWS_INVALID'],
    ['alg a number', header({ alg: 256 }), 'ERR_JWS_INVALID'],
    ['alg lower case', header({ alg: 'es256' }), 'ERR_JOSE_ALG_NOT_ALLOWED'],
    ['alg ES384 on a P-256 key', header({ alg: 'ES384', kid: 'es256' }), 'TypeError', 'ES384'],
    ['crit unknown', header({ crit: ['exp'], exp: 1 }), 'ERR_JOSE_NOT_SUPPORTED'],
    ['crit unknown and absent', header({ crit: ['urn:example:x'] }), 'ERR_JOSE_NOT_SUPPORTED'],
    ['crit __proto__', header({ crit: ['__proto__'] }), 'ERR_JOSE_NOT_SUPPORTED'],
    ['crit empty', header({ crit: [] }), 'ERR_JWS_INVALID'],
    ['crit a string', header({ crit: 'b64' }), 'ERR_JWS_INVALID'],
    ['crit with an empty name', header({ crit: [''] }), 'ERR_JWS_INVALID'],
    ['crit b64 without b64', header({ crit: ['b64'] }), 'ERR_JWS_INVALID'],
    ['crit b64, b64 not a boolean', header({ crit: ['b64'], b64: 'no' }), 'ERR_JWS_INVALID'],
    ['crit b64, b64 true', header({ crit: ['b64'], b64: true }), 'accepted'],
    ['crit b64 twice, b64 true', header({ crit: ['b64', 'b64'], b64: true }), 'accepted'],
    ['crit b64 then unknown', header({ crit: ['b64', 'zip'], b64: true }), 'ERR_JOSE_NOT_SUPPORTED'],
    ['b64 false without crit', header({ b64: false }), 'accepted'],
    ['header a JSON array', '[{"alg":"ES256"}]', 'ERR_JWS_INVALID'],
    ['header not JSON', '{"alg":"ES256"', 'ERR_JWS_INVALID'],
    ['header null', 'null', 'ERR_JWS_INVALID'],
    ['header with jku and jwk (ignored)', header({ jku: 'https://evil.example.com/jwks', jwk: attacker.jwk }), 'accepted'],
  ];
  for (const [name, h, expect, signAs] of headerCases) {
    add(name, token(es, h, claims(), signAs ? { signAs: 'ES256' } : {}), expect);
    add(`${name}, key set`, token(es, h, claims()), expect === 'TypeError' ? 'ERR_JWKS_NO_MATCHING_KEY' : expect, keySet);
  }
  {
    // RFC 7797: the payload is signed as it is; a JWT must not use it, whether the signature is valid or not.
    const h = segment(header({ crit: ['b64'], b64: false }));
    // No dots in it (unlike URLs), or the compact form would not have three parts.
    const raw = JSON.stringify({ sub: 'user-1', exp: NOW + 300 });
    const input = `${h}.${raw}`;
    add('b64 false, valid signature', `${input}.${signSegments('ES256', es.privateKey, input)}`, 'ERR_JWT_INVALID');
    add('b64 false, bad signature', `${input}.${signSegments('ES256', attacker.privateKey, input)}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    const unicode = `${h}.{"name":"é"}`;
    add('b64 false, payload not ASCII', `${unicode}.AAAA`, 'ERR_JWS_INVALID', keySet);
  }
  add('header segment not base64url', `e!!.${segment(claims())}.AAAA`, 'ERR_JWS_INVALID');

  // Keys and signatures.
  add('signed by another key with the same kid', token(attacker, header(), claims()), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', keySet);
  add('unknown kid', token(es, header({ kid: 'nope' }), claims()), 'ERR_JWKS_NO_MATCHING_KEY', keySet);
  add('ES256 token, RSA key', token(es, header(), claims()), 'TypeError', keys.RS256.publicKey);
  add('ES256 token, P-384 key', token(es, header(), claims()), 'TypeError', keys.ES384.publicKey);
  add('RS256 token, RSA-PSS key', token(keys.RS256, header({ alg: 'RS256' }), claims()), 'TypeError', keys.PS256.publicKey);
  add('PS256 token, PKCS#1 key', token(keys.PS256, header({ alg: 'PS256' }), claims()), 'TypeError', keys.RS256.publicKey);
  add('RS384 token, RS256 key (hash)', token(keys.RS256, header({ alg: 'RS384' }), claims(), { signAs: 'RS384' }), 'TypeError', keys.RS256.publicKey);
  add('EdDSA token, ES256 key', token(keys.EdDSA, header({ alg: 'EdDSA' }), claims()), 'TypeError', es.publicKey);
  add('PS256, salt length 20', token(keys.PS256, header({ alg: 'PS256' }), claims(), { saltLength: 20 }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', keys.PS256.publicKey);
  {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const publicKey = (await webcrypto.subtle.importKey('spki', weak.publicKey.export({ format: 'der', type: 'spki' }), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, true, ['verify'])) as CryptoKey;
    const weakKey: SigningKey = { alg: 'RS256', privateKey: weak.privateKey, jwk: {}, publicKey };
    add('RS256 with a 1024-bit key', token(weakKey, header({ alg: 'RS256' }), claims()), 'TypeError', publicKey);
  }
  {
    const pkcs8 = es.privateKey.export({ format: 'der', type: 'pkcs8' });
    const privateCryptoKey = (await webcrypto.subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])) as CryptoKey;
    add('a private key given', token(es, header(), claims()), 'TypeError', privateCryptoKey);
  }
  {
    const signKey = (await webcrypto.subtle.importKey('jwk', { ...es.jwk, alg: undefined, use: undefined, kid: undefined } as webcrypto.JsonWebKey, { name: 'ECDSA', namedCurve: 'P-256' }, true, [])) as CryptoKey;
    add('a key without the verify usage', token(es, header(), claims()), 'TypeError', signKey);
  }
  const valid = token(es, header(), claims());
  const [h, p, s] = valid.split('.') as [string, string, string];
  add('signature empty', `${h}.${p}.`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  add('signature truncated', `${h}.${p}.${s.slice(0, 40)}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  add('signature too long', `${h}.${p}.${s}AAAA`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  add('signature not base64url', `${h}.${p}.${s.slice(0, -1)}*`, 'ERR_JWS_INVALID');
  // jose decodes with the platform's forgiving base64 (atob on Node 20): padding is accepted there, so here too.
  add('signature with padding', `${h}.${p}.${s}==`, 'accepted');
  add('signature DER-encoded', `${h}.${p}.${sign('sha256', Buffer.from(`${h}.${p}`), es.privateKey).toString('base64url')}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  {
    // The last character of an 86-character signature carries 4 bits that decode to nothing: flipping one
    // of them gives the same signature bytes.
    const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const flipped = b64[b64.indexOf(s.slice(-1)) ^ 1] as string;
    add('signature with non-zero unused bits', `${h}.${p}.${s.slice(0, -1)}${flipped}`, 'accepted');
    // A payload segment with padding, or a space, signed as it is: jose's decoder reads both.
    for (const [name, payloadSegment] of [
      ['padding', `${p}${'='.repeat((4 - (p.length % 4)) % 4)}`],
      ['a space', `${p.slice(0, 8)} ${p.slice(8)}`],
      ['a length of 4n+1', `${p}${p.length % 4 === 0 ? 'A' : p.length % 4 === 2 ? 'AAA' : 'AA'}`],
    ] as const) {
      const input = `${h}.${payloadSegment}`;
      add(`payload segment with ${name}, signed`, `${input}.${signSegments('ES256', es.privateKey, input)}`, name === 'a length of 4n+1' ? 'ERR_JWS_INVALID' : 'accepted');
    }
  }
  add('two segments', `${h}.${p}`, 'ERR_JWS_INVALID');
  add('four segments', `${valid}.x`, 'ERR_JWS_INVALID');
  add('empty string', '', 'ERR_JWS_INVALID');
  add('whitespace in the payload segment', `${h}.${p.slice(0, 10)} ${p.slice(10)}.${s}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  add('JWE-shaped', `${h}.${p}.${s}.x.y`, 'ERR_JWS_INVALID');

  // Seeded random mutations of a valid token: one character replaced, inserted or deleted anywhere.
  const random = prng(8);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
  for (let i = 0; i < 300; i++) {
    const at = Math.floor(random() * valid.length);
    const char = alphabet[Math.floor(random() * alphabet.length)] as string;
    const kind = Math.floor(random() * 3);
    const mutated = kind === 0 ? valid.slice(0, at) + char + valid.slice(at + 1) : kind === 1 ? valid.slice(0, at) + char + valid.slice(at) : valid.slice(0, at) + valid.slice(at + 1);
    cases.push({ name: `mutation ${i} (${['replace', 'insert', 'delete'][kind]} at ${at})`, token: mutated, key: random() < 0.5 ? es.publicKey : keySet, expect: '*' });
  }
  return cases;
}

/** The `alg` a token's header names, when it can be read at all. */
function headerAlg(token: string): unknown {
  try {
    return (JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { alg?: unknown }).alg;
  } catch {
    return undefined;
  }
}

describe('verifyCompactJwt against jose jwtVerify', () => {
  it('gives the same verdict for every generated token, and the expected one for every hand-made case', async () => {
    const cases = await buildCases();
    let accepted = 0;
    for (const c of cases) {
      const options = c.options ?? BASE_OPTIONS;
      const ours = await verdictOf(() => verifyCompactJwt(c.token, c.key as CryptoKey, options));
      const jose = await verdictOf(() => jwtVerify(c.token, c.key as CryptoKey, options));
      assert.deepEqual(ours, jose, `${c.name}: node:crypto path and jose disagree`);
      // With the claims peeked first (as the token verifier does to pick the issuer), the verdict is the same
      // whenever the peek reads the payload at all; a payload it cannot read is never accepted by jose.
      let peeked: ReturnType<typeof peekJwtClaims> | undefined;
      try {
        peeked = peekJwtClaims(c.token);
      } catch {
        assert.equal(jose.accepted, false, `${c.name}: the peek refused a payload jose accepts`);
      }
      if (peeked !== undefined) {
        const withPeek = await verdictOf(() => verifyCompactJwt(c.token, c.key as CryptoKey, options, peeked));
        assert.deepEqual(withPeek, jose, `${c.name}: the peeked path and jose disagree`);
      }
      // Synchronously, with the key at hand: the same verdict, thrown instead of rejected, or no verdict at all
      // (undefined) only for an algorithm it leaves to jose.
      if (typeof c.key !== 'function') {
        const key = c.key;
        let deferred = false;
        const now = await verdictOf(async () => {
          const verified = verifyCompactJwtNow(c.token, () => key, options, peeked);
          if (verified === undefined) deferred = true;
          return verified ?? { payload: undefined };
        });
        if (!deferred) assert.deepEqual(now, jose, `${c.name}: the synchronous path and jose disagree`);
        else assert.equal(verifiesSynchronously(String(headerAlg(c.token))), false, `${c.name}: deferred, yet its algorithm is one verified synchronously`);
      }
      if (c.expect !== '*') {
        const got = ours.accepted ? 'accepted' : ours.error === 'TypeError' ? 'TypeError' : String(ours.code);
        assert.equal(got, c.expect, `${c.name}: ${JSON.stringify(ours)}`);
      }
      if (ours.accepted) accepted++;
    }
    // The mutations must exercise refusals, and the hand-made cases acceptances.
    assert.ok(accepted > 20 && accepted < cases.length / 2, `${accepted} of ${cases.length} accepted`);
  });

  it('keeps the claims jose parsed, and the header', async () => {
    const key = await signingKey('ES256', 'k', ec('P-256'));
    const t = token(key, { alg: 'ES256', kid: 'k', typ: 'at+jwt' }, claims({ groups: ['a', 'b'] }));
    const verified = await verifyCompactJwt(t, key.publicKey, BASE_OPTIONS);
    assert.deepEqual(verified.payload, claims({ groups: ['a', 'b'] }));
    assert.deepEqual(verified.protectedHeader, { alg: 'ES256', kid: 'k', typ: 'at+jwt' });
  });

  it('shares one frozen header between the tokens that carry the same protected header', async () => {
    const key = await signingKey('ES256', 'k', ec('P-256'));
    const header = { alg: 'ES256', kid: 'k', typ: 'at+jwt' };
    const one = await verifyCompactJwt(token(key, header, claims({ jti: 'one' })), key.publicKey, BASE_OPTIONS);
    const two = await verifyCompactJwt(token(key, header, claims({ jti: 'two' })), key.publicKey, BASE_OPTIONS);
    assert.equal(one.protectedHeader, two.protectedHeader);
    assert.ok(Object.isFrozen(one.protectedHeader), 'no caller can change it for the next token');
    const other = await verifyCompactJwt(token(key, { ...header, typ: 'jwt' }, claims()), key.publicKey, BASE_OPTIONS);
    assert.equal(other.protectedHeader.typ, 'jwt');
  });

  it('leaves algorithms it does not verify itself to jose, which decides as always', async () => {
    const key = await signingKey('ES256', 'k', ec('P-256'));
    const t = token(key, { alg: 'ML-DSA-44', kid: 'k' }, claims(), { signAs: 'ES256' });
    const options = { ...BASE_OPTIONS, algorithms: ['ML-DSA-44'] };
    assert.deepEqual(await verdictOf(() => verifyCompactJwt(t, key.publicKey, options)), await verdictOf(() => jwtVerify(t, key.publicKey, options)));
  });

  it('checks the signature with the private-key twin of a published key only through its public key', async () => {
    // A sanity check of the harness: a token signed by the key is accepted, by a fresh key refused.
    const key = await signingKey('ES256', 'k', ec('P-256'));
    const other = createPrivateKey(ec('P-256').export({ format: 'pem', type: 'pkcs8' }));
    const good = token(key, { alg: 'ES256' }, claims());
    const bad = token({ ...key, privateKey: other }, { alg: 'ES256' }, claims());
    assert.equal((await verdictOf(() => verifyCompactJwt(good, key.publicKey, BASE_OPTIONS))).accepted, true);
    assert.equal((await verdictOf(() => verifyCompactJwt(bad, key.publicKey, BASE_OPTIONS))).accepted, false);
    assert.equal(base64url.decode(good.split('.')[2] as string).length, 64);
  });
});
