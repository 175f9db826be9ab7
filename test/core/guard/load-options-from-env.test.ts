import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { SUPPORTED_JWS_ALGORITHMS } from '../../../src/core/jwt/jws-algorithms.js';
import { ENV_SETTING_NAMES, loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';

const dir = mkdtempSync(join(tmpdir(), 'options-env-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const base = { MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp' };

function isConfigError(setting: string, message: string | RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ConfigurationError, String(e));
    assert.equal(e.setting, setting);
    if (typeof message === 'string') assert.equal(e.message, `${setting}: ${message}`);
    else assert.match(e.message, message);
    return true;
  };
}

test('the variable names', () => {
  assert.deepEqual(ENV_SETTING_NAMES, {
    issuer: 'MCP_AUTH_ISSUER',
    issuers: 'MCP_AUTH_ISSUER',
    resource: 'MCP_AUTH_RESOURCE',
    audiences: 'MCP_AUTH_AUDIENCE',
    jwksUri: 'MCP_AUTH_JWKS_URI',
    algorithms: 'MCP_AUTH_ALGORITHMS',
    policy: 'MCP_AUTH_POLICY',
    clockToleranceSeconds: 'MCP_AUTH_CLOCK_TOLERANCE',
    allowedOrigins: 'MCP_AUTH_ALLOWED_ORIGINS',
    challengeScopes: 'MCP_AUTH_CHALLENGE_SCOPES',
    authorizationServers: 'MCP_AUTH_AUTHORIZATION_SERVERS',
    strictJwtAccessTokens: 'MCP_AUTH_STRICT_JWT',
    resourceName: 'MCP_AUTH_RESOURCE_NAME',
    resourceDocumentation: 'MCP_AUTH_RESOURCE_DOCUMENTATION',
    maxBodyBytes: 'MCP_AUTH_MAX_BODY_BYTES',
    bodyTimeoutMs: 'MCP_AUTH_BODY_TIMEOUT_MS',
    httpTimeoutMs: 'MCP_AUTH_HTTP_TIMEOUT_MS',
    introspection: 'MCP_AUTH_INTROSPECTION_CLIENT_ID',
    dpop: 'MCP_AUTH_DPOP',
    lists: 'MCP_AUTH_LISTS',
    rateLimit: 'MCP_AUTH_RATE_LIMIT',
    logLevel: 'MCP_AUTH_LOG_LEVEL',
    requestLog: 'MCP_AUTH_REQUEST_LOG',
    audit: 'MCP_AUTH_AUDIT',
  });
});

test('MCP_AUTH_LOG_LEVEL and MCP_AUTH_REQUEST_LOG set logLevel and requestLog; other values fail naming the variable', () => {
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_LOG_LEVEL: ' WARN ' }).logLevel, 'warn');
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_REQUEST_LOG: 'on' }).requestLog, true);
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_REQUEST_LOG: 'off' }).requestLog, false);
  const unset = loadOptionsFromEnv(base);
  assert.equal('logLevel' in unset || 'requestLog' in unset, false);
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_LOG_LEVEL: 'debug', MCP_AUTH_REQUEST_LOG: 'sometimes' }),
    (e: unknown) =>
      e instanceof ConfigurationError &&
      e.problems.some((p) => p.setting === 'MCP_AUTH_LOG_LEVEL' && /info, warn, off/.test(p.detail)) &&
      e.problems.some((p) => p.setting === 'MCP_AUTH_REQUEST_LOG'),
  );
});

test('MCP_AUTH_DPOP sets dpop, in any case; another value fails naming the variable', () => {
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_DPOP: 'require' }).dpop, 'require');
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_DPOP: ' Off ' }).dpop, 'off');
  assert.equal('dpop' in loadOptionsFromEnv(base), false);
  assert.throws(() => loadOptionsFromEnv({ ...base, MCP_AUTH_DPOP: 'on' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_DPOP' && /off, allow, require/.test(e.message));
});

test('issuer and resource alone are enough; nothing else is invented', () => {
  assert.deepEqual(loadOptionsFromEnv(base), { issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp' });
});

test('every variable is read, trimmed, and lists split on commas and white space', () => {
  const policy = writeFile('policy.json', '{"requiredScopes": ["mcp"], "tools": {"delete": ["mcp:admin"]}}');
  const options = loadOptionsFromEnv({
    MCP_AUTH_ISSUER: '  https://auth.example.com  ',
    MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp',
    MCP_AUTH_AUDIENCE: 'api://mcp, https://legacy.example.com\tother',
    MCP_AUTH_JWKS_URI: 'https://auth.example.com/jwks',
    MCP_AUTH_ALGORITHMS: 'RS256,ES256  EdDSA,,',
    MCP_AUTH_POLICY: ` ${policy} `,
    MCP_AUTH_CLOCK_TOLERANCE: '30',
    MCP_AUTH_ALLOWED_ORIGINS: 'https://app.example.com http://localhost:5173',
    // Each must be a trusted issuer (a server listed only here is refused; see resolve-guard-options.test.ts).
    MCP_AUTH_AUTHORIZATION_SERVERS: ' https://auth.example.com ,',
    MCP_AUTH_STRICT_JWT: 'true',
    MCP_AUTH_RESOURCE_NAME: 'Notes MCP',
    MCP_AUTH_RESOURCE_DOCUMENTATION: 'https://docs.example.com/mcp',
    MCP_AUTH_MAX_BODY_BYTES: '65536',
    MCP_AUTH_HTTP_TIMEOUT_MS: '2500',
    MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs',
    MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret',
    MCP_AUTH_INTROSPECTION_ENDPOINT: 'https://auth.example.com/introspect',
    UNRELATED: 'ignored',
  });
  assert.deepEqual(options, {
    issuer: 'https://auth.example.com',
    resource: 'https://mcp.example.com/mcp',
    audiences: ['api://mcp', 'https://legacy.example.com', 'other'],
    jwksUri: 'https://auth.example.com/jwks',
    algorithms: ['RS256', 'ES256', 'EdDSA'],
    policy: { requiredScopes: ['mcp'], tools: { delete: ['mcp:admin'] } },
    clockToleranceSeconds: 30,
    allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
    authorizationServers: ['https://auth.example.com'],
    strictJwtAccessTokens: true,
    resourceName: 'Notes MCP',
    resourceDocumentation: 'https://docs.example.com/mcp',
    maxBodyBytes: 65536,
    httpTimeoutMs: 2500,
    introspection: { clientId: 'rs', clientSecret: 's3cret', endpoint: 'https://auth.example.com/introspect' },
  });
});

test('blank variables count as unset', () => {
  assert.deepEqual(loadOptionsFromEnv({ ...base, MCP_AUTH_AUDIENCE: '   ', MCP_AUTH_STRICT_JWT: '', MCP_AUTH_POLICY: ' ' }), {
    issuer: 'https://auth.example.com',
    resource: 'https://mcp.example.com/mcp',
  });
});

test('a missing MCP_AUTH_ISSUER says what to set', () => {
  for (const issuer of [undefined, '', '   ']) {
    assert.throws(
      () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: issuer, MCP_AUTH_RESOURCE: base.MCP_AUTH_RESOURCE }),
      isConfigError('MCP_AUTH_ISSUER', /^MCP_AUTH_ISSUER: is required: set it to your authorization server's issuer URL, e\.g\. https:\/\/auth\.example\.com/),
    );
  }
});

test('an http issuer is refused on a non-loopback host', () => {
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_ISSUER: 'http://auth.example.com' }),
    isConfigError('MCP_AUTH_ISSUER', 'http is only allowed on loopback hosts; use https for auth.example.com'),
  );
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_ISSUER: 'http://127.0.0.1:4000' }).issuer, 'http://127.0.0.1:4000');
});

test('a missing or bad MCP_AUTH_RESOURCE is named', () => {
  assert.throws(
    () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: base.MCP_AUTH_ISSUER }),
    isConfigError('MCP_AUTH_RESOURCE', 'is required: set it to the public URL of your MCP endpoint, e.g. https://mcp.example.com/mcp'),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_RESOURCE: 'mcp.example.com/mcp' }),
    isConfigError('MCP_AUTH_RESOURCE', /^MCP_AUTH_RESOURCE: "mcp\.example\.com\/mcp" is not an absolute URL; set it to the public URL/),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_RESOURCE: 'http://mcp.example.com/mcp' }),
    isConfigError('MCP_AUTH_RESOURCE', /http is only allowed on loopback hosts .*use https for mcp\.example\.com$/),
  );
});

test('the defaults parameter supplies the resource when MCP_AUTH_RESOURCE is unset', () => {
  const options = loadOptionsFromEnv({ MCP_AUTH_ISSUER: base.MCP_AUTH_ISSUER }, { resource: 'http://127.0.0.1:3000/mcp' });
  assert.equal(options.resource, 'http://127.0.0.1:3000/mcp');
  assert.equal(loadOptionsFromEnv(base, { resource: 'http://127.0.0.1:3000/mcp' }).resource, 'https://mcp.example.com/mcp');
});

test('a bad default resource is reported as the default, not as the variable', () => {
  assert.throws(
    () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: base.MCP_AUTH_ISSUER }, { resource: 'ftp://mcp.example.com' }),
    isConfigError('resource (default)', 'must be an https URL (got ftp:)'),
  );
});

test('MCP_AUTH_ALGORITHMS refuses HS256 and none, listing what is allowed; ML-DSA is allowed as in the options', () => {
  const allowed = SUPPORTED_JWS_ALGORITHMS.join(', ');
  assert.equal(allowed, 'RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519, ML-DSA-44, ML-DSA-65, ML-DSA-87');
  assert.deepEqual(loadOptionsFromEnv({ ...base, MCP_AUTH_ALGORITHMS: 'ES256, ML-DSA-65' }).algorithms, ['ES256', 'ML-DSA-65']);
  for (const alg of ['HS256', 'none', 'rs256']) {
    assert.throws(
      () => loadOptionsFromEnv({ ...base, MCP_AUTH_ALGORITHMS: `RS256, ${alg}` }),
      isConfigError('MCP_AUTH_ALGORITHMS', `"${alg}" is not allowed; use asymmetric algorithms only: ${allowed}`),
    );
  }
});

test('MCP_AUTH_CLOCK_TOLERANCE must be a whole number from 0 to 300', () => {
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_CLOCK_TOLERANCE: '0' }).clockToleranceSeconds, 0);
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_CLOCK_TOLERANCE: '300' }).clockToleranceSeconds, 300);
  for (const value of ['five', '5s', '-1', '1.5', '301', '0x10']) {
    assert.throws(
      () => loadOptionsFromEnv({ ...base, MCP_AUTH_CLOCK_TOLERANCE: value }),
      isConfigError('MCP_AUTH_CLOCK_TOLERANCE', `must be a whole number from 0 to 300 (got "${value}")`),
    );
  }
});

test('MCP_AUTH_MAX_BODY_BYTES and MCP_AUTH_HTTP_TIMEOUT_MS have ranges', () => {
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_MAX_BODY_BYTES: '0' }),
    isConfigError('MCP_AUTH_MAX_BODY_BYTES', 'must be a whole number from 1 to 67108864 (got "0")'),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_HTTP_TIMEOUT_MS: '120001' }),
    isConfigError('MCP_AUTH_HTTP_TIMEOUT_MS', 'must be a whole number from 1 to 120000 (got "120001")'),
  );
});

test('MCP_AUTH_STRICT_JWT accepts on/off, true/false, 1/0, yes/no in any case, as every on/off setting does', () => {
  for (const [raw, value] of [['on', true], ['ON', true], ['true', true], ['TRUE', true], ['1', true], ['Yes', true], ['off', false], ['false', false], ['0', false], ['no', false]] as const) {
    assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_STRICT_JWT: raw }).strictJwtAccessTokens, value, raw);
  }
  assert.throws(() => loadOptionsFromEnv({ ...base, MCP_AUTH_STRICT_JWT: 'maybe' }), isConfigError('MCP_AUTH_STRICT_JWT', 'is "maybe"; use on or off'));
});

test('MCP_AUTH_POLICY naming a missing file says so', () => {
  const file = join(dir, 'absent.json');
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_POLICY: file }),
    isConfigError('MCP_AUTH_POLICY', `policy file ${file} does not exist. Create it, or set MCP_AUTH_POLICY to the path of an existing JSON policy file`),
  );
});

test('MCP_AUTH_POLICY with invalid JSON gives line and column and the fix', () => {
  const file = writeFile('broken.json', '{\n  "requiredScopes": ["mcp",]\n}');
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_POLICY: file }),
    isConfigError('MCP_AUTH_POLICY', /^MCP_AUTH_POLICY: policy file .*broken\.json is not valid JSON at line 2, column 28: .*\. Fix the syntax \(no comments or trailing commas\)$/s),
  );
});

test('MCP_AUTH_POLICY with a wrong shape is reported under the variable', () => {
  const file = writeFile('typo.json', '{"requiredScope": ["mcp"]}');
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_POLICY: file }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError, String(e));
      assert.ok(e.setting.startsWith('MCP_AUTH_POLICY'), e.setting);
      assert.match(e.message, /requiredScope/);
      assert.match(e.message, /typo\.json/);
      return true;
    },
  );
});

test('introspection needs both the client id and the secret', () => {
  const message =
    'introspection needs both MCP_AUTH_INTROSPECTION_CLIENT_ID and MCP_AUTH_INTROSPECTION_CLIENT_SECRET; set both, or none of the MCP_AUTH_INTROSPECTION_* variables to accept JWTs only';
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs' }),
    isConfigError('MCP_AUTH_INTROSPECTION_CLIENT_SECRET', message),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret' }),
    isConfigError('MCP_AUTH_INTROSPECTION_CLIENT_ID', message),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: '  ' }),
    isConfigError('MCP_AUTH_INTROSPECTION_CLIENT_SECRET', message),
  );
});

test('an introspection endpoint without credentials is not silently ignored', () => {
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_ENDPOINT: 'https://auth.example.com/introspect' }),
    isConfigError('MCP_AUTH_INTROSPECTION_CLIENT_ID', /^MCP_AUTH_INTROSPECTION_CLIENT_ID: introspection needs both/),
  );
});

test('introspection credentials without an endpoint use the discovered one', () => {
  const options = loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret' });
  assert.deepEqual(options.introspection, { clientId: 'rs', clientSecret: 's3cret' });
});

test('a bad MCP_AUTH_RESOURCE_DOCUMENTATION or empty server list is named', () => {
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_RESOURCE_DOCUMENTATION: 'docs/mcp' }),
    isConfigError('MCP_AUTH_RESOURCE_DOCUMENTATION', 'must be an absolute URL'),
  );
  // Only separators: treated as a list with no entries, which metadata cannot have.
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_AUTHORIZATION_SERVERS: ' , ,' }),
    isConfigError('MCP_AUTH_AUTHORIZATION_SERVERS', 'must name at least one authorization server (MCP requires a non-empty authorization_servers)'),
  );
});

test('environment values override the defaults parameter', () => {
  const options = loadOptionsFromEnv({ ...base, MCP_AUTH_CLOCK_TOLERANCE: '10' }, { clockToleranceSeconds: 60, resourceName: 'Default name' });
  assert.equal(options.clockToleranceSeconds, 10);
  assert.equal(options.resourceName, 'Default name');
});

test('settings checked by the token verifier and the origin check are reported under their variables', () => {
  const base = { MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_RESOURCE: 'http://127.0.0.1:3000/mcp' };
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ MCP_AUTH_JWKS_URI: 'notaurl' }, 'MCP_AUTH_JWKS_URI', /is not an absolute URL; use an https URL/],
    [{ MCP_AUTH_JWKS_URI: 'http://keys.example.com/jwks' }, 'MCP_AUTH_JWKS_URI', /loopback/],
    [{ MCP_AUTH_ALLOWED_ORIGINS: 'x' }, 'MCP_AUTH_ALLOWED_ORIGINS', /is not an origin/],
    [
      { MCP_AUTH_INTROSPECTION_CLIENT_ID: 'a', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'b', MCP_AUTH_INTROSPECTION_ENDPOINT: 'http://evil.example/i' },
      'MCP_AUTH_INTROSPECTION_ENDPOINT',
      /use https/,
    ],
  ];
  for (const [extra, setting, message] of cases) {
    assert.throws(
      () => loadOptionsFromEnv({ ...base, ...extra }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === setting && e.message.startsWith(`${setting}: `) && message.test(e.message),
      setting,
    );
  }
});

test('MCP_AUTH_CHALLENGE_SCOPES sets the scopes of the bare 401 challenge and is checked', () => {
  const base = { MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_RESOURCE: 'http://127.0.0.1:3000/mcp' };
  assert.deepEqual(loadOptionsFromEnv({ ...base, MCP_AUTH_CHALLENGE_SCOPES: 'notes:read, profile' }).challengeScopes, ['notes:read', 'profile']);
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_CHALLENGE_SCOPES: 'notes:read "x"' }),
    (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_CHALLENGE_SCOPES',
  );
});

test('MCP_AUTH_INTROSPECTION_CACHE_TTL sets introspection.cacheTtlSeconds, 0 and off (the same) included, and is checked', () => {
  const credentials = { ...base, MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret' };
  assert.equal(loadOptionsFromEnv({ ...credentials, MCP_AUTH_INTROSPECTION_CACHE_TTL: '15' }).introspection?.cacheTtlSeconds, 15);
  assert.equal(loadOptionsFromEnv({ ...credentials, MCP_AUTH_INTROSPECTION_CACHE_TTL: '0' }).introspection?.cacheTtlSeconds, 0);
  assert.equal(loadOptionsFromEnv({ ...credentials, MCP_AUTH_INTROSPECTION_CACHE_TTL: 'Off' }).introspection?.cacheTtlSeconds, 0);
  assert.equal(loadOptionsFromEnv(credentials).introspection?.cacheTtlSeconds, undefined, 'unset: the option default (60 s)');
  for (const bad of ['-1', '1.5', 'soon', '86401']) {
    assert.throws(
      () => loadOptionsFromEnv({ ...credentials, MCP_AUTH_INTROSPECTION_CACHE_TTL: bad }),
      isConfigError('MCP_AUTH_INTROSPECTION_CACHE_TTL', `must be a whole number from 0 to 86400 (got "${bad}"); or off to disable`),
    );
  }
  // Without credentials it would be ignored without a word.
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_INTROSPECTION_CACHE_TTL: '0' }),
    isConfigError('MCP_AUTH_INTROSPECTION_CLIENT_ID', /^MCP_AUTH_INTROSPECTION_CLIENT_ID: introspection needs both/),
  );
});

test('MCP_AUTH_BODY_TIMEOUT_MS sets bodyTimeoutMs and is checked', () => {
  assert.equal(loadOptionsFromEnv({ ...base, MCP_AUTH_BODY_TIMEOUT_MS: '2500' }).bodyTimeoutMs, 2500);
  assert.equal('bodyTimeoutMs' in loadOptionsFromEnv(base), false);
  for (const bad of ['0', '-5', '1e3', '300001']) {
    assert.throws(
      () => loadOptionsFromEnv({ ...base, MCP_AUTH_BODY_TIMEOUT_MS: bad }),
      isConfigError('MCP_AUTH_BODY_TIMEOUT_MS', `must be a whole number from 1 to 300000 (got "${bad}")`),
    );
  }
});

test('an MCP_AUTH_* variable that is no setting is refused, with the one likely meant', () => {
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_POLICIES: 'policy.json' }),
    isConfigError('MCP_AUTH_POLICIES', 'is not a setting; did you mean MCP_AUTH_POLICY?'),
  );
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_ZZZZZZZZZZZZZZZZ: '' }),
    isConfigError('MCP_AUTH_ZZZZZZZZZZZZZZZZ', 'is not a setting; correct its name, or unset it'),
  );
  // Other names are the application's business.
  assert.equal(loadOptionsFromEnv({ ...base, MCP_OTHER: 'x', HOME: '/home/u' }).issuer, base.MCP_AUTH_ISSUER);
});

test('an application that reads MCP_AUTH_* variables of its own names them, or lets them all through', () => {
  const env = { ...base, MCP_AUTH_AUDIT_LOG: '/var/log/audit' };
  assert.throws(() => loadOptionsFromEnv(env), isConfigError('MCP_AUTH_AUDIT_LOG', /is not a setting/));
  assert.equal(loadOptionsFromEnv(env, {}, { otherSettings: ['MCP_AUTH_AUDIT_LOG'] }).issuer, base.MCP_AUTH_ISSUER);
  assert.equal(loadOptionsFromEnv(env, {}, { unknownSettings: 'ignore' }).issuer, base.MCP_AUTH_ISSUER);
  // Its names are candidates for the suggestion too.
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_AUDIT_LOGS: 'x' }, {}, { otherSettings: ['MCP_AUTH_AUDIT_LOG'] }),
    isConfigError('MCP_AUTH_AUDIT_LOGS', 'is not a setting; did you mean MCP_AUTH_AUDIT_LOG?'),
  );
});

test('every bad variable is reported in one error: unknown, bad numbers, a bad URL, a policy file, a missing one', () => {
  const env = {
    MCP_AUTH_ISUER: 'https://auth.example.com',
    MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp',
    MCP_AUTH_CLOCK_TOLERANCE: 'five',
    MCP_AUTH_MAX_BODY_BYTES: '0',
    MCP_AUTH_STRICT_JWT: 'maybe',
    MCP_AUTH_RESOURCE_DOCUMENTATION: 'docs/mcp',
    MCP_AUTH_POLICY: join(dir, 'absent.json'),
  };
  assert.throws(
    () => loadOptionsFromEnv(env),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError, String(e));
      assert.deepEqual(
        e.problems.map((p) => p.setting),
        ['MCP_AUTH_ISUER', 'MCP_AUTH_POLICY', 'MCP_AUTH_CLOCK_TOLERANCE', 'MCP_AUTH_STRICT_JWT', 'MCP_AUTH_MAX_BODY_BYTES', 'MCP_AUTH_ISSUER', 'MCP_AUTH_RESOURCE_DOCUMENTATION'],
      );
      const lines = e.message.split('\n');
      assert.equal(lines[0], '7 settings need fixing:');
      assert.equal(lines.length, 8);
      assert.equal(lines[1], '  MCP_AUTH_ISUER: is not a setting; did you mean MCP_AUTH_ISSUER?');
      assert.match(e.message, /^ {2}MCP_AUTH_CLOCK_TOLERANCE: must be a whole number from 0 to 300 \(got "five"\)$/m);
      assert.match(e.message, /^ {2}MCP_AUTH_POLICY: policy file .*absent\.json does not exist/m);
      assert.match(e.message, /^ {2}MCP_AUTH_ISSUER: is required/m);
      assert.match(e.message, /^ {2}MCP_AUTH_RESOURCE_DOCUMENTATION: must be an absolute URL$/m);
      return true;
    },
  );
});

test('a variable refused while read is not reported again by the checks that follow', () => {
  // The bad tolerance is left unset, so the guard's own check of it (a default then) finds nothing more.
  assert.throws(
    () => loadOptionsFromEnv({ ...base, MCP_AUTH_CLOCK_TOLERANCE: '301', MCP_AUTH_DPOP: 'sometimes' }),
    (e: unknown) => e instanceof ConfigurationError && e.problems.map((p) => p.setting).join() === 'MCP_AUTH_CLOCK_TOLERANCE,MCP_AUTH_DPOP',
  );
});

test('the checks of the token verifier and the origin check are listed together', () => {
  const loopback = { MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_RESOURCE: 'http://127.0.0.1:3000/mcp' };
  assert.throws(
    () => loadOptionsFromEnv({ ...loopback, MCP_AUTH_JWKS_URI: 'notaurl', MCP_AUTH_ALLOWED_ORIGINS: 'x' }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError, String(e));
      assert.deepEqual(e.problems.map((p) => p.setting), ['MCP_AUTH_JWKS_URI', 'MCP_AUTH_ALLOWED_ORIGINS']);
      assert.match(e.message, /^2 settings need fixing:\n {2}MCP_AUTH_JWKS_URI: .*is not an absolute URL.*\n {2}MCP_AUTH_ALLOWED_ORIGINS: .*is not an origin/);
      return true;
    },
  );
});
