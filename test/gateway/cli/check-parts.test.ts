// The parts of `mcp-oauth-guard check` that decide what a line says: how two issuer spellings differ, which keys of a
// set can verify the allowed algorithms, and what a metadata location that answers badly (an HTML page, a 500) is
// reported as, against real loopback servers. The command itself is tested end to end in check-command.test.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { AuthorizationServerUnavailableError } from '../../../src/core/kernel/errors.js';
import { IssuerDiscoveryError, IssuerMismatchError, discoverIssuerMetadata } from '../../../src/core/token/issuer-discovery.js';
import { DEFAULT_JWT_ALGORITHMS } from '../../../src/core/jwt/jws-algorithms.js';
import { checkIntrospection } from '../../../src/gateway/cli/check/check-introspection.js';
import { checkIssuerMetadata } from '../../../src/gateway/cli/check/check-issuer.js';
import { checkPolicy } from '../../../src/gateway/cli/check/check-policy.js';
import { checkResource } from '../../../src/gateway/cli/check/check-resource.js';
import { checkExitCode } from '../../../src/gateway/cli/check/check-result.js';
import { checkReportJson, formatCheckReport } from '../../../src/gateway/cli/check/format-check-report.js';
import { describeIssuerDifference } from '../../../src/gateway/cli/check/issuer-difference.js';
import { assessKey } from '../../../src/gateway/cli/check/jwk-usability.js';

describe('describeIssuerDifference', () => {
  it('names a trailing slash on either side, the scheme, the case, or where they part', () => {
    assert.equal(describeIssuerDifference('https://as.example.com', 'https://as.example.com/').summary, 'the metadata\'s issuer ends with a "/" that the configured one lacks');
    assert.equal(describeIssuerDifference('https://as.example.com/realm/', 'https://as.example.com/realm').summary, 'the configured issuer ends with a "/" that the metadata\'s lacks');
    assert.equal(describeIssuerDifference('http://as.example.com', 'https://as.example.com').summary, "the metadata's issuer is https, the configured one http");
    assert.equal(describeIssuerDifference('https://as.example.com/Realm', 'https://as.example.com/realm').summary, 'they differ only in the case of letters, first at character 24');
    assert.equal(describeIssuerDifference('https://a.example.com/v1', 'https://a.example.com/v2').summary, 'they differ from character 24 on');
  });

  it('puts the caret under the first character that differs, also after escaped characters', () => {
    const { details } = describeIssuerDifference('https://as/"x"/a', 'https://as/"x"/b');
    assert.equal(details[0], 'configured: "https://as/\\"x\\"/a"');
    assert.equal(details[1], 'metadata:   "https://as/\\"x\\"/b"');
    assert.equal(details[2]!.indexOf('^'), details[0]!.lastIndexOf('a'));
    assert.match(details[2]!, /\^ character 16$/);
  });

  it('quotes what the network sent, so control characters cannot reach the terminal raw', () => {
    const { details } = describeIssuerDifference('https://as', 'https://as\u001b[2J');
    assert.ok(!details.join('').includes('\u001b'));
    assert.ok(details[1]!.includes('\\u001b[2J'));
  });
});

describe('assessKey', () => {
  it('an EC P-256 key verifies ES256 only; with ES256 not allowed, it says which algorithm it would verify', async () => {
    const { publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1' };
    assert.deepEqual(assessKey(jwk, DEFAULT_JWT_ALGORITHMS), { description: 'kid k1 kty EC crv P-256', algorithms: ['ES256'] });
    assert.equal(assessKey(jwk, ['RS256']).reason, 'it verifies ES256, none of them allowed (MCP_AUTH_ALGORITHMS)');
    assert.equal(assessKey({ ...jwk, alg: 'ES256' }, ['RS256']).reason, 'its alg ES256 is not allowed (MCP_AUTH_ALGORITHMS)');
  });

  it('an RSA key verifies every allowed RS and PS algorithm, unless it names one, is for encryption, or is too short', async () => {
    const { publicKey } = await generateKeyPair('RS256');
    const jwk = await exportJWK(publicKey);
    assert.deepEqual(assessKey(jwk, ['RS256', 'PS512', 'ES256']).algorithms, ['RS256', 'PS512']);
    assert.deepEqual(assessKey({ ...jwk, alg: 'PS256' }, DEFAULT_JWT_ALGORITHMS).algorithms, ['PS256']);
    assert.equal(assessKey({ ...jwk, use: 'enc' }, DEFAULT_JWT_ALGORITHMS).reason, 'its use is enc, not "sig"');
    assert.equal(assessKey({ ...jwk, key_ops: ['encrypt'] }, DEFAULT_JWT_ALGORITHMS).reason, 'its key_ops do not include "verify"');
    const short = { ...jwk, n: Buffer.alloc(128, 0xff).toString('base64url') };
    assert.equal(assessKey(short, DEFAULT_JWT_ALGORITHMS).reason, 'an RSA key of 1024 bits; at least 2048 are required');
  });

  it('a symmetric key, an Ed25519 key, a key whose alg does not fit it, an ML-DSA key without alg', async () => {
    assert.match(assessKey({ kty: 'oct', k: 'c2VjcmV0' }, DEFAULT_JWT_ALGORITHMS).reason!, /^a symmetric key/);
    const { publicKey } = await generateKeyPair('EdDSA');
    assert.deepEqual(assessKey(await exportJWK(publicKey), DEFAULT_JWT_ALGORITHMS).algorithms, ['EdDSA', 'Ed25519']);
    assert.equal(assessKey({ kty: 'EC', crv: 'P-384', alg: 'ES256' }, DEFAULT_JWT_ALGORITHMS).reason, 'its alg ES256 does not fit its kty EC and crv P-384');
    assert.equal(assessKey({ kty: 'AKP', pub: 'x' }, ['ML-DSA-44']).reason, 'an ML-DSA (AKP) key must name its alg');
  });

  it('shows odd member values quoted and clipped', () => {
    const { description } = assessKey({ kty: 'EC', crv: 'P-256', kid: `a b\u0007${'x'.repeat(200)}` }, DEFAULT_JWT_ALGORITHMS);
    assert.ok(!description.includes('\u0007'));
    assert.ok(description.length < 140, description);
  });
});

describe('checkIssuerMetadata against issuers that answer badly', () => {
  let server: Server;
  let base: string;
  let answer: (path: string) => { status: number; type: string; body: string };
  before(async () => {
    server = createServer((req, res) => {
      const { status, type, body } = answer(req.url ?? '/');
      res.writeHead(status, { 'content-type': type }).end(body);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('an HTML page where the metadata should be: not JSON, at both locations', async () => {
    answer = () => ({ status: 200, type: 'text/html', body: '<html><body>Sign in</body></html>' });
    const error = await discoverIssuerMetadata(base, 2000).catch((e: unknown) => e);
    assert.ok(error instanceof IssuerDiscoveryError);
    assert.deepEqual(error.failures.map((f) => [f.kind, f.status]), [['not_json', 200], ['not_json', 200]]);
    assert.match(error.attempts[0]!, /HTTP 200 with content-type "text\/html", not JSON metadata$/);
    const { result } = await checkIssuerMetadata(base, 2000);
    assert.equal(result.status, 'fail');
    assert.equal(result.message, 'the metadata location answers something that is not JSON (a web page, a login form?)');
    assert.match(result.fix!, /not a web page/);
  });

  it('a 500, and metadata naming another issuer past normalization (http for https): the difference is data too', async () => {
    answer = () => ({ status: 500, type: 'text/plain', body: 'down' });
    const down = await checkIssuerMetadata(base, 2000);
    assert.equal(down.result.message, 'the metadata could not be read (HTTP 500)');
    answer = () => ({ status: 200, type: 'application/json', body: JSON.stringify({ issuer: base.replace('http:', 'https:'), jwks_uri: `${base}/jwks` }) });
    const error = await discoverIssuerMetadata(base, 2000).catch((e: unknown) => e);
    assert.ok(error instanceof IssuerDiscoveryError);
    assert.equal(error.failures[0]!.kind, 'issuer_mismatch');
    assert.equal(error.failures[0]!.discoveredIssuer, base.replace('http:', 'https:'));
    const { result } = await checkIssuerMetadata(base, 2000);
    assert.equal(result.message, "the metadata names another issuer: the metadata's issuer is https, the configured one http");
  });

  it('a trailing-slash mismatch that URL normalization hides is an IssuerMismatchError with both spellings, and fails the check', async () => {
    answer = () => ({ status: 200, type: 'application/json', body: JSON.stringify({ issuer: `${base}/`, jwks_uri: `${base}/jwks` }) });
    const error = await discoverIssuerMetadata(base, 2000).catch((e: unknown) => e);
    assert.ok(error instanceof IssuerMismatchError);
    assert.deepEqual([error.setting, error.configured, error.discovered], ['issuer', base, `${base}/`]);
    const { result } = await checkIssuerMetadata(base, 2000);
    assert.equal(result.status, 'fail');
    assert.deepEqual(checkExitCode([result], false), 1);
  });
});

describe('checkIntrospection on what openid-client throws', () => {
  it('an invalid_client without a status says so without inventing one', async () => {
    const refused = Object.assign(new Error('client authentication failed'), { error: 'invalid_client' });
    const result = await checkIntrospection({ verify: () => Promise.reject(new AuthorizationServerUnavailableError('introspection failed', 5, refused)) }, 'http://127.0.0.1:1/introspect');
    assert.equal(result.status, 'fail');
    assert.equal(result.message, "the endpoint refused the client's credentials (invalid_client)");
  });

  it('an error code is shown only when RFC 6749 §5.2 allows it (no quote or backslash), as the gateway repeats one', async () => {
    const answered = (error: string) => Object.assign(new Error('bad request'), { status: 400, error });
    const verify = (error: string) => ({ verify: () => Promise.reject(new AuthorizationServerUnavailableError('introspection failed', 5, answered(error))) });
    assert.equal((await checkIntrospection(verify('invalid"request'), undefined)).message, 'the endpoint answered HTTP 400');
    assert.equal((await checkIntrospection(verify('invalid\\request'), undefined)).message, 'the endpoint answered HTTP 400');
    assert.equal((await checkIntrospection(verify('invalid_request'), undefined)).message, 'the endpoint answered HTTP 400 invalid_request');
  });
});

describe('the resource line, the policy lines and the report', () => {
  it('a resource written other than canonically warns, naming the spelling tokens must carry', () => {
    const result = checkResource({ configured: 'https://MCP.example.com:443/mcp/', canonical: 'https://mcp.example.com/mcp', isDefault: false, audiences: ['api://mcp'] });
    assert.equal(result.status, 'warn');
    assert.equal(result.fix, 'set MCP_AUTH_RESOURCE to "https://mcp.example.com/mcp", and have the authorization server issue tokens for exactly that resource');
    assert.deepEqual(result.details, ['tokens must carry aud "https://mcp.example.com/mcp" or one of "api://mcp"', 'clients find the metadata at https://mcp.example.com/.well-known/oauth-protected-resource/mcp']);
    assert.equal(checkResource({ configured: 'https://mcp.example.com', canonical: 'https://mcp.example.com', isDefault: false, audiences: [] }).status, 'ok');
  });

  it('rules for tools an upstream does not list, and every tool covered', () => {
    const policy = { tools: { add: ['calc:use'], subtract: ['calc:use'], '*': [] } };
    const coverage = { tools: { protected: ['add'], open: [], explicitlyOpen: ['echo'] }, unmatchedRules: [{ kind: 'tool' as const, name: 'subtract' }] };
    const results = checkPolicy({ policy, file: 'policy.json', coverage, hasUpstream: true });
    assert.deepEqual(
      results.map((r) => [r.status, r.message, r.fix]),
      [
        ['ok', 'read: 3 tool, 0 prompt and 0 resource rules', undefined],
        ['warn', 'the tool rule "subtract" matches nothing the upstream lists', 'correct or remove the rule "subtract" in the policy file (policy.json)'],
      ],
    );
    const covered = checkPolicy({ policy, file: 'policy.json', coverage: { ...coverage, unmatchedRules: [] }, hasUpstream: true });
    assert.equal(covered.at(-1)?.message, 'every item the upstream lists has a rule, and every rule matches: tools 1 protected, 1 open on purpose');
  });

  it('open items: one sentence whose plurals agree with the counts, with the base scopes when the policy has some', () => {
    const line = (open: string[], protectedNames: string[], requiredScopes?: string[]) =>
      checkPolicy({ policy: { tools: {}, ...(requiredScopes ? { requiredScopes } : {}) }, file: 'policy.json', coverage: { tools: { protected: protectedNames, open, explicitlyOpen: [] }, unmatchedRules: [] }, hasUpstream: true })[1]!.message;
    assert.equal(line(['a'], ['b']), '1 of 2 tools has no rule (neither its own nor "*"), so any valid token may use it');
    assert.equal(line(['a'], []), '1 of 1 tool has no rule (neither its own nor "*"), so any valid token may use it');
    assert.equal(line(['a', 'c'], ['b'], ['base']), '2 of 3 tools have no rule (neither their own nor "*"), so a token with only the base scopes (requiredScopes) may use them');
  });

  it('the text report: a status column, details and fix indented, a last line with the counts and the exit code; JSON has the same', () => {
    const results = [
      { check: 'issuer', subject: 'https://as', status: 'ok', message: 'metadata found' },
      { check: 'keys', subject: 'https://as/jwks', status: 'fail', message: 'no usable key', details: ['kid a kty RSA: not usable'], fix: 'set MCP_AUTH_ALGORITHMS' },
      { check: 'policy', status: 'warn', message: 'open tools' },
      { check: 'upstream', status: 'skip', message: 'none configured' },
    ] as const;
    assert.equal(
      formatCheckReport(results, checkExitCode(results, false)),
      [
        'ok    issuer https://as: metadata found',
        'FAIL  keys https://as/jwks: no usable key',
        '      kid a kty RSA: not usable',
        '      fix: set MCP_AUTH_ALGORITHMS',
        'warn  policy: open tools',
        'skip  upstream: none configured',
        '',
        '1 failure, 1 warning: requests would fail (exit code 1)',
        '',
      ].join('\n'),
    );
    assert.equal(formatCheckReport([results[2]], 1).trim().split('\n').at(-1), '1 warning: requests would work, though not everything as meant (exit code 1, --strict)');
    assert.deepEqual(JSON.parse(checkReportJson(results, 1)), { ok: false, exitCode: 1, failures: 1, warnings: 1, results });
  });
});
