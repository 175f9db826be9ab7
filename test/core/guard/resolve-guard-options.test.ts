import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import type { GuardOptions } from '../../../src/core/guard/guard-options.js';
import { checkIssuer, resolveGuardOptions } from '../../../src/core/guard/resolve-guard-options.js';

const base: GuardOptions = { issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp' };

function isConfigError(setting: string, message: string | RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ConfigurationError, String(e));
    assert.equal(e.setting, setting);
    if (typeof message === 'string') assert.equal(e.message, `${setting}: ${message}`);
    else assert.match(e.message, message);
    return true;
  };
}

test('defaults are applied and derived values computed', () => {
  assert.deepEqual(resolveGuardOptions(base), {
    issuer: 'https://auth.example.com',
    issuers: ['https://auth.example.com'],
    resource: 'https://mcp.example.com/mcp',
    resourcePath: '/mcp',
    authorizationServers: ['https://auth.example.com'],
    allowedOrigins: [],
    maxBodyBytes: 1_048_576,
    bodyTimeoutMs: 10_000,
    maxJsonDepth: 64,
    metadataMaxAgeSeconds: 3600,
    lists: 'filtered',
    auditSettings: undefined,
  });
});

test('the resource is canonicalized; a path-less resource is served at /', () => {
  const resolved = resolveGuardOptions({ ...base, resource: 'HTTPS://MCP.Example.com:443/Tools/' });
  assert.equal(resolved.resource, 'https://mcp.example.com/Tools');
  assert.equal(resolved.resourcePath, '/Tools');
  const root = resolveGuardOptions({ ...base, resource: 'https://mcp.example.com/' });
  assert.equal(root.resource, 'https://mcp.example.com');
  assert.equal(root.resourcePath, '/');
});

test('given values are kept and other options pass through', () => {
  const onDecision = (): void => {};
  const resolved = resolveGuardOptions({
    resource: base.resource,
    issuers: ['https://as1.example.com', 'https://as2.example.com', 'https://as3.example.com'],
    authorizationServers: ['https://as1.example.com', 'https://as2.example.com'],
    allowedOrigins: ['https://app.example.com'],
    audiences: ['api://mcp'],
    maxBodyBytes: 10,
    bodyTimeoutMs: 300,
    maxJsonDepth: 1000,
    metadataMaxAgeSeconds: 31_536_000,
    resourceDocumentation: 'https://docs.example.com/mcp',
    onDecision,
    algorithms: ['ES256'],
  });
  assert.deepEqual(resolved.authorizationServers, ['https://as1.example.com', 'https://as2.example.com']);
  assert.deepEqual(resolved.allowedOrigins, ['https://app.example.com']);
  assert.deepEqual(resolved.audiences, ['api://mcp']);
  assert.equal(resolved.maxBodyBytes, 10);
  assert.equal(resolved.bodyTimeoutMs, 300);
  assert.equal(resolved.maxJsonDepth, 1000);
  assert.equal(resolved.metadataMaxAgeSeconds, 31_536_000);
  assert.equal(resolved.onDecision, onDecision);
  assert.deepEqual(resolved.algorithms, ['ES256']);
});

test('no options object at all', () => {
  assert.throws(
    () => resolveGuardOptions(undefined as unknown as GuardOptions),
    isConfigError('options', 'mcpOAuthGuard needs an options object with at least issuer, resource and handler'),
  );
});

test('a missing issuer says what to set', () => {
  for (const issuer of [undefined, '', 42]) {
    assert.throws(
      () => resolveGuardOptions({ ...base, issuer: issuer as string }),
      isConfigError('options.issuer', /^options\.issuer: is required: set it to your authorization server's issuer URL, e\.g\. https:\/\/auth\.example\.com/),
    );
  }
});

test('checkIssuer: https anywhere, http on loopback only', () => {
  assert.equal(checkIssuer('https://auth.example.com/realms/x', 'S'), 'https://auth.example.com/realms/x');
  assert.equal(checkIssuer('http://127.0.0.1:4000', 'S'), 'http://127.0.0.1:4000');
  assert.equal(checkIssuer('http://localhost:4000/', 'S'), 'http://localhost:4000/');
  assert.throws(() => checkIssuer('http://auth.example.com', 'S'), isConfigError('S', 'http is only allowed on loopback hosts; use https for auth.example.com'));
});

test('checkIssuer refuses other schemes, relative URLs, queries and fragments', () => {
  assert.throws(() => checkIssuer('ftp://auth.example.com', 'S'), isConfigError('S', 'must be an https URL, or http on a loopback host (got ftp:)'));
  assert.throws(
    () => checkIssuer('auth.example.com', 'S'),
    isConfigError('S', '"auth.example.com" is not an absolute URL; use the issuer identifier from your authorization server\'s metadata'),
  );
  for (const issuer of ['https://auth.example.com?x=1', 'https://auth.example.com/#f', 'https://auth.example.com/?', 'https://auth.example.com/#']) {
    assert.throws(() => checkIssuer(issuer, 'S'), isConfigError('S', 'must not have a query or fragment (RFC 8414 §2)'), issuer);
  }
});

test('a missing resource says what to set', () => {
  assert.throws(
    () => resolveGuardOptions({ ...base, resource: '' }),
    isConfigError('options.resource', 'is required: set it to the public URL of your MCP endpoint, e.g. https://mcp.example.com/mcp'),
  );
});

test('a bad resource is reported under the given setting name', () => {
  assert.throws(
    () => resolveGuardOptions({ ...base, resource: 'https://mcp.example.com/mcp#x' }, { resource: 'MCP_AUTH_RESOURCE' }),
    isConfigError('MCP_AUTH_RESOURCE', 'must not contain a fragment (RFC 8707 §2)'),
  );
});

test('authorizationServers must name trusted issuers, compared exactly: a client sent elsewhere would get a token the guard refuses', () => {
  assert.throws(
    () => resolveGuardOptions({ ...base, authorizationServers: ['https://auth.example.com', 'https://other.example.com'] }),
    isConfigError(
      'options.authorizationServers',
      '"https://other.example.com" is not a trusted issuer (options.issuer: https://auth.example.com): tokens from it would be refused. Add it to options.issuer, or leave it out',
    ),
  );
  // A spelling of a trusted issuer is another issuer: clients compare the metadata's issuer exactly (RFC 8414 §3.3).
  assert.throws(
    () => resolveGuardOptions({ ...base, authorizationServers: ['https://auth.example.com/'] }),
    isConfigError('options.authorizationServers', /^options\.authorizationServers: "https:\/\/auth\.example\.com\/" is not a trusted issuer/),
  );
  assert.throws(
    () => resolveGuardOptions({ resource: base.resource, issuers: ['https://a.example.com', 'https://b.example.com'], authorizationServers: ['https://c.example.com'] }, { issuers: 'MCP_AUTH_ISSUER', authorizationServers: 'MCP_AUTH_AUTHORIZATION_SERVERS' }),
    isConfigError(
      'MCP_AUTH_AUTHORIZATION_SERVERS',
      '"https://c.example.com" is not a trusted issuer (MCP_AUTH_ISSUER: https://a.example.com, https://b.example.com): tokens from it would be refused. Add it to MCP_AUTH_ISSUER, or leave it out',
    ),
  );
  // A subset is fine: an issuer still trusted during a migration need not be advertised to new clients.
  const subset = resolveGuardOptions({ resource: base.resource, issuers: ['https://new.example.com', 'https://old.example.com'], authorizationServers: ['https://new.example.com'] });
  assert.deepEqual(subset.authorizationServers, ['https://new.example.com']);
});

test('authorizationServers must be a non-empty list of non-empty strings', () => {
  assert.throws(
    () => resolveGuardOptions({ ...base, authorizationServers: [] }),
    isConfigError('options.authorizationServers', 'must name at least one authorization server (MCP requires a non-empty authorization_servers)'),
  );
  assert.throws(() => resolveGuardOptions({ ...base, authorizationServers: [''] }), isConfigError('options.authorizationServers', 'must be a list of non-empty strings'));
  assert.throws(
    () => resolveGuardOptions({ ...base, authorizationServers: 'https://a' as unknown as string[] }),
    isConfigError('options.authorizationServers', 'must be a list of non-empty strings'),
  );
});

test('audiences and allowedOrigins must be lists of non-empty strings', () => {
  assert.throws(() => resolveGuardOptions({ ...base, audiences: [1 as unknown as string] }), isConfigError('options.audiences', 'must be a list of non-empty strings'));
  assert.throws(
    () => resolveGuardOptions({ ...base, allowedOrigins: 'https://app.example.com' as unknown as string[] }, { allowedOrigins: 'MCP_AUTH_ALLOWED_ORIGINS' }),
    isConfigError('MCP_AUTH_ALLOWED_ORIGINS', 'must be a list of non-empty strings'),
  );
});

test('resourceDocumentation must be an absolute URL', () => {
  assert.throws(() => resolveGuardOptions({ ...base, resourceDocumentation: '/docs' }), isConfigError('options.resourceDocumentation', 'must be an absolute URL'));
});

test('onDecision must be a function', () => {
  assert.throws(
    () => resolveGuardOptions({ ...base, onDecision: 'log' as unknown as GuardOptions['onDecision'] }),
    isConfigError('options.onDecision', 'must be a function'),
  );
});

test('numeric limits must be whole numbers within range', () => {
  const cases: Array<[keyof GuardOptions, unknown, string]> = [
    ['maxBodyBytes', 0, 'must be a whole number from 1 to 67108864 (got 0)'],
    ['maxBodyBytes', 64 * 1_048_576 + 1, 'must be a whole number from 1 to 67108864 (got 67108865)'],
    ['maxBodyBytes', '1024', 'must be a whole number from 1 to 67108864 (got 1024)'],
    ['bodyTimeoutMs', 0, 'must be a whole number from 1 to 300000 (got 0)'],
    ['bodyTimeoutMs', 300_001, 'must be a whole number from 1 to 300000 (got 300001)'],
    ['bodyTimeoutMs', 2.5, 'must be a whole number from 1 to 300000 (got 2.5)'],
    ['maxJsonDepth', 1.5, 'must be a whole number from 1 to 1000 (got 1.5)'],
    ['maxJsonDepth', 1001, 'must be a whole number from 1 to 1000 (got 1001)'],
    ['metadataMaxAgeSeconds', -1, 'must be a whole number from 1 to 31536000 (got -1)'],
    ['metadataMaxAgeSeconds', Number.NaN, 'must be a whole number from 1 to 31536000 (got NaN)'],
  ];
  for (const [key, value, message] of cases) {
    assert.throws(() => resolveGuardOptions({ ...base, [key]: value }), isConfigError(`options.${key}`, message), `${key}=${String(value)}`);
  }
});
